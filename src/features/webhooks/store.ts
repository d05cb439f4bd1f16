/** SQL for webhooks (sql/009_webhooks.sql; docs/webhooks.md). The outbox insert itself is outbox.ts's. */
import type { WebhookDelivery, WebhookEndpoint } from '../../domain/types.js';
import { iso, json, type Queryable } from '../../storage/database.js';

interface EndpointRow {
  id: string;
  org_id: string;
  url: string;
  events: string[];
  description: string;
  enabled: boolean;
  disabled_reason: string | null;
  secret: string;
  previous_secret: string | null;
  previous_until: Date | string | null;
  created_at: Date | string;
  updated_at: Date | string;
}

const COLUMNS = 'id, org_id, url, events, description, enabled, disabled_reason, secret, previous_secret, previous_until, created_at, updated_at';

/** An endpoint with what delivery needs (its stored secrets), never answered as is. */
export interface StoredEndpoint extends WebhookEndpoint {
  orgId: string;
  secret: string;
  previousSecret: string | null;
  previousUntil: number | null;
}

const toStored = (r: EndpointRow): StoredEndpoint => ({
  id: r.id,
  url: r.url,
  events: r.events,
  description: r.description,
  enabled: r.enabled,
  disabledReason: r.disabled_reason,
  createdAt: iso(r.created_at)!,
  updatedAt: iso(r.updated_at)!,
  orgId: r.org_id,
  secret: r.secret,
  previousSecret: r.previous_secret,
  previousUntil: r.previous_until === null ? null : Date.parse(iso(r.previous_until)!),
});

/** What clients see of an endpoint. */
export const publicEndpoint = (e: StoredEndpoint): WebhookEndpoint => ({
  id: e.id,
  url: e.url,
  events: e.events,
  description: e.description,
  enabled: e.enabled,
  disabledReason: e.disabledReason,
  createdAt: e.createdAt,
  updatedAt: e.updatedAt,
});

export async function listEndpoints(q: Queryable, orgId: string): Promise<StoredEndpoint[]> {
  const rows = await q.query<EndpointRow>(`select ${COLUMNS} from webhook_endpoints where org_id = $1 order by created_at, id`, [orgId]);
  return rows.map(toStored);
}

export async function getEndpoint(q: Queryable, orgId: string, id: string): Promise<StoredEndpoint | null> {
  const rows = await q.query<EndpointRow>(`select ${COLUMNS} from webhook_endpoints where org_id = $1 and id = $2`, [orgId, id]);
  return rows.length === 0 ? null : toStored(rows[0]);
}

export async function countEndpoints(q: Queryable, orgId: string): Promise<number> {
  const rows = await q.query<{ n: number }>(`select count(*)::int as n from webhook_endpoints where org_id = $1`, [orgId]);
  return Number(rows[0].n);
}

export interface EndpointInput {
  url: string;
  events: string[];
  description: string;
  enabled: boolean;
}

export async function insertEndpoint(q: Queryable, orgId: string, id: string, input: EndpointInput, sealedSecret: string): Promise<StoredEndpoint> {
  const rows = await q.query<EndpointRow>(
    `insert into webhook_endpoints (id, org_id, url, events, description, enabled, secret, created_at, updated_at)
     values ($1, $2, $3, $4::text::json, $5, $6, $7, clock_timestamp(), clock_timestamp()) returning ${COLUMNS}`,
    [id, orgId, input.url, json(input.events), input.description, input.enabled, sealedSecret],
  );
  return toStored(rows[0]);
}

export async function updateEndpoint(q: Queryable, orgId: string, id: string, input: EndpointInput): Promise<StoredEndpoint | null> {
  const rows = await q.query<EndpointRow>(
    `update webhook_endpoints set url = $3, events = $4::text::json, description = $5, enabled = $6,
       disabled_reason = case when $6 then null else disabled_reason end, updated_at = clock_timestamp()
     where org_id = $1 and id = $2 returning ${COLUMNS}`,
    [orgId, id, input.url, json(input.events), input.description, input.enabled],
  );
  return rows.length === 0 ? null : toStored(rows[0]);
}

export async function deleteEndpoint(q: Queryable, orgId: string, id: string): Promise<void> {
  await q.query(`delete from webhook_endpoints where org_id = $1 and id = $2`, [orgId, id]);
}

/** A new secret; the current one signs beside it until `overlapUntil`. */
export async function rotateSecret(q: Queryable, orgId: string, id: string, sealedSecret: string, overlapUntil: Date): Promise<StoredEndpoint | null> {
  const rows = await q.query<EndpointRow>(
    `update webhook_endpoints set previous_secret = secret, previous_until = $4, secret = $3, updated_at = clock_timestamp()
     where org_id = $1 and id = $2 returning ${COLUMNS}`,
    [orgId, id, sealedSecret, overlapUntil.toISOString()],
  );
  return rows.length === 0 ? null : toStored(rows[0]);
}

/** Delivery got 410 Gone: the endpoint is disabled (unless it changed meanwhile). */
export async function disableEndpoint(q: Queryable, id: string, reason: string): Promise<void> {
  await q.query(`update webhook_endpoints set enabled = false, disabled_reason = $2, updated_at = clock_timestamp() where id = $1 and enabled`, [id, reason]);
}

/** A `webhook.test` message for one endpoint (not an audit event): its body is set now. */
export async function insertTestMessage(q: Queryable, orgId: string, endpointId: string, makeBody: (msgId: string) => string): Promise<string> {
  const rows = await q.query<{ id: string; msg_id: string }>(
    `insert into webhook_messages (endpoint_id, org_id, type) values ($1, $2, 'webhook.test') returning id::text as id, msg_id`,
    [endpointId, orgId],
  );
  await q.query(`update webhook_messages set body = $2 where id = $1::bigint`, [rows[0].id, makeBody(rows[0].msg_id)]);
  return rows[0].msg_id;
}

/** Sends a message again (replay): pending, due now; its `webhook-id` and body stay the same. */
export async function replayMessage(q: Queryable, orgId: string, endpointId: string, msgId: string): Promise<boolean> {
  const rows = await q.query(
    `update webhook_messages set status = 'pending', next_at = clock_timestamp(), lease_until = null, lease_token = null, finished_at = null,
       created_at = case when status = 'pending' then created_at else clock_timestamp() end
     where org_id = $1 and endpoint_id = $2 and msg_id = $3 returning id`,
    [orgId, endpointId, msgId],
  );
  return rows.length > 0;
}

interface DeliveryRow {
  id: string;
  msg_id: string;
  type: string;
  attempt: number;
  at: Date | string;
  status: number | null;
  duration_ms: number;
  error: string | null;
}

/** An endpoint's attempts, oldest first, after delivery `after`. */
export async function listDeliveries(q: Queryable, orgId: string, endpointId: string, limit: number, after: string | null): Promise<WebhookDelivery[]> {
  const rows = await q.query<DeliveryRow>(
    `select d.id::text as id, m.msg_id, m.type, d.attempt, d.at, d.status, d.duration_ms, d.error
     from webhook_deliveries d join webhook_messages m on m.id = d.message_id
     where d.endpoint_id = $1 and m.org_id = $2 and ($3::bigint is null or d.id > $3::bigint)
     order by d.id limit $4`,
    [endpointId, orgId, after, limit],
  );
  return rows.map((r) => ({
    id: r.id,
    messageId: r.msg_id,
    type: r.type,
    attempt: Number(r.attempt),
    at: iso(r.at)!,
    status: r.status === null ? null : Number(r.status),
    durationMs: Number(r.duration_ms),
    error: r.error,
  }));
}

// ---- the dispatcher (dispatcher.ts) -------------------------------------------------------------

/** A message claimed for one attempt, with its endpoint. */
export interface Claimed {
  id: string;
  msgId: string;
  type: string;
  orgId: string;
  orgName: string;
  auditEventId: string | null;
  body: string | null;
  createdAt: number;
  attempt: number;
  leaseToken: string;
  endpoint: StoredEndpoint;
}

interface ClaimedRow {
  id: string;
  msg_id: string;
  type: string;
  org_id: string;
  org_name: string;
  audit_event_id: string | null;
  body: string | null;
  created_at: Date | string;
  attempts: number;
  endpoint: EndpointRow;
}

/**
 * Each endpoint's head: its oldest pending message (`endpoint_id`, `id`), one row per endpoint
 * with pending messages, found by walking the `webhook_messages_head` index from one endpoint to
 * the next (a loose index scan): the cost grows with the endpoints that have pending messages,
 * not with the messages waiting behind their heads.
 */
const HEADS = `heads(endpoint_id, id) as (
    (select endpoint_id, id from webhook_messages where status = 'pending' order by endpoint_id, id limit 1)
    union all
    select n.endpoint_id, n.id from heads h cross join lateral (
      select m.endpoint_id, m.id from webhook_messages m where m.status = 'pending' and m.endpoint_id > h.endpoint_id
      order by m.endpoint_id, m.id limit 1) n)`;

/**
 * The claim itself, of the messages `due` selects (locked `for update of m skip locked`): the lease
 * (`lease` until, `token`), one more attempt; answers what `toClaimed` reads, with the endpoint as it is now.
 */
const CLAIM = (lease: string, token: string) => `claimed as (
    update webhook_messages m set lease_until = ${lease}, lease_token = ${token}, attempts = m.attempts + 1
    from due, organizations o, webhook_endpoints w
    where m.id = due.id and o.id = m.org_id and w.id = m.endpoint_id
    returning m.id::text as id, m.msg_id, m.type, m.org_id, o.name as org_name, m.audit_event_id::text as audit_event_id, m.body,
      m.created_at, m.attempts, row_to_json(w) as endpoint)`;

/** The condition a message must meet to be claimed at $now: pending, due, its lease (if any) run out. */
const CLAIMABLE = (now: string) => `m.status = 'pending' and w.enabled and m.next_at <= ${now} and (m.lease_until is null or m.lease_until <= ${now})`;

const toClaimed = (r: ClaimedRow, token: string): Claimed => ({
  id: r.id,
  msgId: r.msg_id,
  type: r.type,
  orgId: r.org_id,
  orgName: r.org_name,
  auditEventId: r.audit_event_id,
  body: r.body,
  createdAt: Date.parse(iso(r.created_at)!),
  attempt: Number(r.attempts),
  leaseToken: token,
  endpoint: toStored(typeof r.endpoint === 'string' ? (JSON.parse(r.endpoint) as EndpointRow) : r.endpoint),
});

const textArray = (xs: readonly string[]): string => `{${xs.map((x) => `"${x}"`).join(',')}}`;

/** Whether any message is pending (a cheap statement: a round with nothing to do stops here). */
export async function anyPending(q: Queryable): Promise<boolean> {
  return (await q.query(`select 1 from webhook_messages where status = 'pending' limit 1`)).length > 0;
}

/**
 * Claims up to `limit` due messages for one attempt each, in one statement: only endpoints'
 * heads (commit order: the next waits until the one before is delivered or given up), so at most
 * one per endpoint, none of an endpoint in `busy`. `FOR UPDATE SKIP LOCKED` (the lease checked
 * again on the locked row) and the lease make one node take each attempt; a lease that runs out
 * (its node died mid-attempt) lets another take it again. A head locked by another node is
 * skipped, never the message behind it.
 */
export async function claimDue(q: Queryable, now: Date, leaseMs: number, limit: number, token: string, busy: readonly string[]): Promise<Claimed[]> {
  const rows = await q.query<ClaimedRow>(
    `with recursive ${HEADS},
     due as (
       select m.id from heads h join webhook_messages m on m.id = h.id join webhook_endpoints w on w.id = m.endpoint_id
       where ${CLAIMABLE('$1')} and not (m.endpoint_id = any($5::text[]))
       order by m.next_at, m.id
       limit $3
       for update of m skip locked),
     ${CLAIM('$2', '$4')}
     select * from claimed`,
    [now.toISOString(), new Date(now.getTime() + leaseMs).toISOString(), limit, token, textArray(busy)],
  );
  return rows.map((r) => toClaimed(r, token));
}

/** Freezes the body of a message recorded without one (before bodies were written with the message). */
export async function setBody(q: Queryable, id: string, body: string): Promise<void> {
  await q.query(`update webhook_messages set body = $2 where id = $1::bigint and body is null`, [id, body]);
}

export type Finish =
  | { kind: 'delivered' }
  | { kind: 'retry'; at: Date }
  | { kind: 'failed' };

/** The next message to claim in the same statement as the recording: when, how long, under which token. */
export interface Chain {
  now: Date;
  leaseMs: number;
  token: string;
}

/**
 * Records one attempt (a delivery row: the attempt was made, whatever happened meanwhile) and,
 * if this node still holds the message's lease, its consequence: the message delivered, due
 * again, or failed. A message replayed during the attempt (its lease cleared) stays pending and
 * goes again; one whose lease ran out is another node's now. With `chain`, when the message is
 * finished (delivered or failed), the same statement claims the endpoint's next message if it is
 * due (its head, exactly as `claimDue` would: locked with `SKIP LOCKED`, the lease checked again),
 * so an endpoint with a backlog costs one database round trip per message.
 * `recorded` false: the lease was lost (the message left as it is, nothing claimed).
 */
export async function recordAttempt(
  q: Queryable,
  c: Claimed,
  at: Date,
  result: { status: number | null; durationMs: number; error: string | null },
  finish: Finish,
  chain: Chain | null,
): Promise<{ recorded: boolean; next: Claimed | null }> {
  const rows = await q.query<{ recorded: number } & Partial<ClaimedRow>>(
    `with done as (
       update webhook_messages set
         status = $3::text, next_at = coalesce($4::timestamptz, next_at), lease_until = null, lease_token = null,
         finished_at = case when $3::text = 'pending' then null else clock_timestamp() end
       where id = $1::bigint and lease_token = $2::text returning id, status),
     rec as (
       insert into webhook_deliveries (message_id, endpoint_id, attempt, at, status, duration_ms, error)
       select m.id, $5::text, $6::int, $7::timestamptz, $8::int, $9::int, $10::text from webhook_messages m where m.id = $1::bigint returning id),
     head as (
       select m.id from webhook_messages m
       where $11::boolean and m.endpoint_id = $5::text and m.status = 'pending' and m.id <> $1::bigint
         and exists (select 1 from done where done.status <> 'pending')
       order by m.id limit 1),
     due as (
       select m.id from head join webhook_messages m on m.id = head.id join webhook_endpoints w on w.id = m.endpoint_id
       where ${CLAIMABLE('$12::timestamptz')}
       for update of m skip locked),
     ${CLAIM('$13::timestamptz', '$14::text')}
     select (select count(*)::int from done) as recorded, claimed.* from (select 1) as one left join claimed on true`,
    [
      c.id, c.leaseToken, finish.kind === 'retry' ? 'pending' : finish.kind, finish.kind === 'retry' ? finish.at.toISOString() : null,
      c.endpoint.id, c.attempt, at.toISOString(), result.status, result.durationMs, result.error,
      chain !== null, (chain?.now ?? at).toISOString(), new Date((chain?.now ?? at).getTime() + (chain?.leaseMs ?? 0)).toISOString(), chain?.token ?? '',
    ],
  );
  const r = rows[0];
  const recorded = r !== undefined && Number(r.recorded) > 0;
  const next = recorded && chain !== null && r.id !== null && r.id !== undefined ? toClaimed(r as ClaimedRow, chain.token) : null;
  return { recorded, next };
}

/** Drops finished messages (and their attempts) older than `before`. */
export async function pruneFinished(q: Queryable, before: Date): Promise<void> {
  await q.query(`delete from webhook_messages where status <> 'pending' and finished_at < $1`, [before.toISOString()]);
}

/**
 * How long from `now` until a head message (an endpoint's oldest pending one) of an enabled
 * endpoint not in `busy` can be claimed (its retry due, a lease run out), or null when none waits.
 * Messages behind a head are not due before it, whatever their `next_at`.
 */
export async function msToNextDue(q: Queryable, now: Date, busy: readonly string[]): Promise<number | null> {
  const rows = await q.query<{ at: Date | string | null }>(
    `with recursive ${HEADS}
     select min(greatest(m.next_at, coalesce(m.lease_until, m.next_at))) as at
     from heads h join webhook_messages m on m.id = h.id join webhook_endpoints w on w.id = m.endpoint_id
     where w.enabled and not (m.endpoint_id = any($1::text[]))`,
    [textArray(busy)],
  );
  return rows[0].at === null ? null : Date.parse(iso(rows[0].at)!) - now.getTime();
}

/** `vexil_webhook_pending` and `vexil_webhook_oldest_pending_seconds` (messages of enabled endpoints). */
export async function pendingStats(q: Queryable, now: Date): Promise<{ pending: number; oldestSeconds: number }> {
  const rows = await q.query<{ n: number; oldest: Date | string | null }>(
    `select count(*)::int as n, min(m.created_at) as oldest from webhook_messages m join webhook_endpoints w on w.id = m.endpoint_id
     where m.status = 'pending' and w.enabled`,
  );
  const oldest = rows[0].oldest === null ? null : Date.parse(iso(rows[0].oldest)!);
  return { pending: Number(rows[0].n), oldestSeconds: oldest === null ? 0 : Math.max(0, (now.getTime() - oldest) / 1000) };
}
