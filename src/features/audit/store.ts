/** SQL for the audit log (sql/002_audit.sql). Events are only inserted, read, and follow application renames. */
import type { AuditActor, AuditChange, AuditEvent, AuditTargetType } from '../../domain/types.js';
import { iso, json, type Queryable } from '../../storage/database.js';
import { messagesQueued, withMessages } from '../webhooks/outbox.js';

interface EventRow {
  id: string;
  at: Date | string;
  actor: AuditActor;
  action: AuditEvent['action'];
  target_type: AuditTargetType;
  target_name: string;
  target_stage: string | null;
  target_client_id: string | null;
  application: string | null;
  before: unknown;
  after: unknown;
  schedule_id: string | null;
  bypass: { reason: string } | null;
  change_request_id: string | null;
}

const COLUMNS = 'id::text as id, at, actor, action, target_type, target_name, target_stage, target_client_id, application, before, after, schedule_id, bypass, change_request_id';

const toEvent = (r: EventRow): AuditEvent => ({
  id: r.id,
  at: iso(r.at)!,
  actor: r.actor,
  action: r.action,
  // A configuration's target carries its stage and clientId; other targets have neither.
  target: r.target_stage === null
    ? { type: r.target_type, name: r.target_name }
    : { type: r.target_type, name: r.target_name, stage: r.target_stage, clientId: r.target_client_id },
  application: r.application,
  before: r.before,
  after: r.after,
  // Only a scheduled change's event names its schedule (docs/audit.md).
  ...(r.schedule_id === null ? {} : { scheduleId: r.schedule_id }),
  // Only a write that bypassed a protected environment's review names its reason (docs/audit.md, "Bypass").
  ...(r.bypass === null || r.bypass === undefined ? {} : { bypass: r.bypass }),
  // Only the events of a change request name it (docs/change-requests.md).
  ...(r.change_request_id == null ? {} : { changeRequestId: r.change_request_id }),
});

/** SQL null for null, else JSON text. */
const jsonOrNull = (v: unknown): string | null => (v === undefined || v === null ? null : json(v));

/** The columns of an event as stored, but for those the database sets (`id`, `at`). */
function rowOf(actor: AuditActor, c: AuditChange): Omit<EventRow, 'id' | 'at'> {
  return {
    actor,
    action: c.action,
    target_type: c.target.type,
    target_name: c.target.name,
    target_stage: c.target.stage ?? null,
    target_client_id: c.target.stage === undefined ? null : (c.target.clientId ?? null),
    application: c.application,
    // `undefined` (a delete's `after`) is stored as SQL null, like an explicit null.
    before: c.before ?? null,
    after: c.after ?? null,
    schedule_id: c.scheduleId ?? null,
    bypass: c.bypass ?? null,
    change_request_id: c.changeRequestId ?? null,
  };
}

/**
 * The event's JSON as `GET /api/audit` shows it, after its `id` and `at` (which the database
 * sets) and without the opening `{`: the webhook outbox completes it (webhooks/outbox.ts).
 */
function eventTail(row: Omit<EventRow, 'id' | 'at'>): string {
  const { id: _id, at: _at, ...rest } = toEvent({ ...row, id: '', at: new Date(0) });
  return JSON.stringify(rest).slice(1);
}

/**
 * Inserts the event and, in the same statement, queues a webhook message for each endpoint that
 * subscribes to its action (features/webhooks/outbox.ts), its body written: every audit action,
 * whatever feature records it, reaches webhooks through here, in the change's transaction.
 */
export async function insertEvent(q: Queryable, orgId: string, actor: AuditActor, c: AuditChange): Promise<void> {
  const r = rowOf(actor, c);
  // `::text::json`: the parameter is JSON text on both drivers, and `json` keeps its field order.
  const queued = await q.query(
    withMessages(
      `insert into audit_events (org_id, actor, action, target_type, target_name, target_stage, target_client_id, application, before, after, schedule_id, bypass, change_request_id)
     values ($1, $2::text::json, $3, $4, $5, $6, $7, $8, $9::text::json, $10::text::json, $11, $12::text::json, $13)`,
      '$1',
      '$3',
      '$14',
    ),
    [orgId, json(r.actor), r.action, r.target_type, r.target_name, r.target_stage, r.target_client_id, r.application,
      jsonOrNull(r.before), jsonOrNull(r.after), r.schedule_id, jsonOrNull(r.bypass), r.change_request_id, eventTail(r)],
  );
  if (queued.length > 0) messagesQueued(q);
}

export interface EventFilter {
  orgId: string;
  target?: string;
  type?: AuditTargetType;
  /** Only events with an id below this one (the previous page's last id). */
  before?: string;
  limit: number;
  /** Only events of this application (case-insensitive); events without one are left out. */
  application?: string;
  /** Leave out events whose target is a key. */
  withoutKeys: boolean;
}

/** Newest first. */
export async function listEvents(q: Queryable, f: EventFilter): Promise<AuditEvent[]> {
  const where = ['org_id = $1'];
  const params: unknown[] = [f.orgId];
  const add = (clause: string, value: unknown) => {
    params.push(value);
    where.push(clause.replace('?', `$${params.length}`));
  };
  if (f.target !== undefined) add('target_name = ?', f.target);
  if (f.type !== undefined) add('target_type = ?', f.type);
  if (f.before !== undefined) add('id < ?::bigint', f.before);
  if (f.application !== undefined) add('lower(application) = lower(?)', f.application);
  // Webhook events (endpoint URLs and patterns) are Admin's too.
  if (f.withoutKeys) where.push(`target_type not in ('key', 'webhook')`);
  params.push(f.limit);
  const rows = await q.query<EventRow>(
    `select ${COLUMNS} from audit_events where ${where.join(' and ')} order by audit_events.id desc limit $${params.length}`,
    params,
  );
  return rows.map(toEvent);
}

/** Application rename cascade: the events of `from` now name `to`. */
export async function renameEventApplication(q: Queryable, orgId: string, from: string, to: string): Promise<void> {
  await q.query(`update audit_events set application = $3 where org_id = $1 and lower(application) = lower($2)`, [orgId, from, to]);
}

/** One event by id (a webhook message's data, features/webhooks/dispatcher.ts). */
export async function eventById(q: Queryable, id: string): Promise<AuditEvent | null> {
  const rows = await q.query<EventRow>(`select ${COLUMNS} from audit_events where id = $1::bigint`, [id]);
  return rows.length === 0 ? null : toEvent(rows[0]);
}
