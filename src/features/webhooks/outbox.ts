/**
 * The webhook outbox (docs/webhooks.md, "Delivery"): every audit event becomes, in its own
 * statement and so in the change's transaction, one message per enabled endpoint of its
 * organization whose patterns match its action (patterns.ts `matches`, here in SQL), with its body
 * already written: every attempt and replay sends those bytes. A write that rolls back leaves no
 * message; a committed one leaves its messages for the dispatcher (dispatcher.ts), whichever node
 * it runs on, even if this one dies at once.
 *
 * `insertEvent` (audit/store.ts) runs `withMessages` and marks its transaction (`messagesQueued`);
 * a transaction run through `outboxTransaction` wakes this process's dispatcher once after its
 * commit when any of its statements queued messages (other nodes' messages are found by the
 * dispatcher's poll).
 */
import type { Database, Queryable } from '../../storage/database.js';

/** The SQL condition: pattern `p` (text) matches action `a` (text). */
const MATCH = (p: string, a: string) => `(${p} = '*' or ${p} = ${a} or (right(${p}, 2) = '.*' and starts_with(${a}, left(${p}, length(${p}) - 1))))`;

/** An audit event's `at` as JSON shows it (`iso()`, storage/database.ts): milliseconds, UTC, `Z`. */
const ISO = (col: string) => `to_char(${col} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/**
 * Wraps the audit event's insert (`returning id, at`) so that the same statement queues its
 * messages. The action is parameter `actionParam`; `tailParam` is the event's JSON after its `id`
 * and `at` (`{"actor":…}` without its `{`, audit/store.ts `eventTail`): the body is
 * `{type, timestamp, organization, data: <the event>}`, the event as `GET /api/audit` shows it.
 */
export function withMessages(insertAudit: string, orgParam: string, actionParam: string, tailParam: string): string {
  return `with e as (${insertAudit} returning id, ${ISO('at')} as at)
    insert into webhook_messages (endpoint_id, org_id, type, audit_event_id, body)
    select w.id, w.org_id, ${actionParam}::text, e.id,
      '{"type":' || to_json(${actionParam}::text)::text || ',"timestamp":"' || e.at || '","organization":' || to_json(o.name)::text
        || ',"data":{"id":"' || e.id::text || '","at":"' || e.at || '",' || ${tailParam}::text || '}'
    from e, webhook_endpoints w, organizations o
    where w.org_id = ${orgParam} and w.enabled and o.id = w.org_id
      and exists (select 1 from json_array_elements_text(w.events) as p(v) where ${MATCH('p.v', `${actionParam}::text`)})
    order by w.created_at, w.id
    returning 1 as queued`;
}

/** Transactions (their `tx` handles) that queued messages and have not committed yet. */
const queuedIn = new WeakSet<Queryable>();
const listeners = new Set<() => void>();

/** A statement in the transaction `tx` queued messages. */
export function messagesQueued(tx: Queryable): void {
  queuedIn.add(tx);
}

/**
 * Runs `fn` in one transaction; after its commit, wakes this process's dispatcher once if any
 * statement of it queued messages (however many events and messages it wrote). A transaction
 * that rolls back wakes nothing; neither does another transaction's commit.
 */
export async function outboxTransaction<T>(db: Database, fn: (tx: Queryable) => Promise<T>): Promise<T> {
  let handle: Queryable | null = null;
  const result = await db.transaction((tx) => {
    handle = tx;
    return fn(tx);
  });
  if (handle !== null && queuedIn.delete(handle)) wake();
  return result;
}

/** Messages were committed outside an audited write (a test message, a replay): wake the dispatcher. */
export function wake(): void {
  for (const l of listeners) l();
}

/** The dispatcher of this process listens here. */
export function onQueued(listener: () => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}
