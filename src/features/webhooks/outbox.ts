/**
 * The webhook outbox (docs/webhooks.md, "Delivery"): every audit event becomes, in its own
 * statement and so in the change's transaction, one message per enabled endpoint of its
 * organization whose patterns match its action (patterns.ts `matches`, here in SQL). A write that
 * rolls back leaves no message; a committed one leaves its messages for the dispatcher
 * (dispatcher.ts), whichever node it runs on, even if this one dies at once.
 *
 * `insertEvent` (audit/store.ts) runs `EVENT_WITH_MESSAGES`; `auditedTransaction` (write.ts) calls
 * `committed()` after its commit, which wakes this process's dispatcher when the write queued
 * something (other nodes' messages are found by its poll).
 */

/** The SQL condition: pattern `p` (text) matches action `a` (text). */
const MATCH = (p: string, a: string) => `(${p} = '*' or ${p} = ${a} or (right(${p}, 2) = '.*' and starts_with(${a}, left(${p}, length(${p}) - 1))))`;

/**
 * Wraps the audit event's insert (`returning id`) so that the same statement queues its
 * messages. The action is parameter `$action`.
 */
export function withMessages(insertAudit: string, orgParam: string, actionParam: string): string {
  return `with e as (${insertAudit} returning id)
    insert into webhook_messages (endpoint_id, org_id, type, audit_event_id)
    select w.id, w.org_id, ${actionParam}::text, e.id from e, webhook_endpoints w
    where w.org_id = ${orgParam} and w.enabled
      and exists (select 1 from json_array_elements_text(w.events) as p(v) where ${MATCH('p.v', `${actionParam}::text`)})
    order by w.created_at, w.id
    returning 1 as queued`;
}

let queued = false;
const listeners = new Set<() => void>();

/** A statement in an open transaction queued messages. */
export function messagesQueued(): void {
  queued = true;
}

/** A transaction committed: wake the dispatchers if anything may have been queued. */
export function committed(): void {
  if (!queued) return;
  queued = false;
  for (const l of listeners) l();
}

/** The dispatcher of this process listens here. */
export function onQueued(listener: () => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}
