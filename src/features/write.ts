/**
 * The one way to change data. Every write runs in `auditedTransaction`: the caller's change and its
 * audit event (docs/audit.md) commit together or not at all, so a failed or rejected write records
 * nothing and a recorded event always describes a committed change.
 *
 * - `writeOrg`: flags, configurations and organization settings. It first locks the organization
 *   and bumps its version; after commit, the change is published to the other nodes, then read
 *   back once into this node's snapshots before the caller answers (read-your-writes): the
 *   management actor's replica reads it, and hands what it read to the front's (registry.ts).
 * - `writeOrgKeys`: Management Keys. It locks the organization (so its events are ordered like
 *   its other writes) without a new version: keys are not part of the snapshot.
 * - `auditedTransaction` itself: writes that create an organization (the operator API).
 */
import type { Principal } from '../auth/permissions.js';
import type { AuditActor, AuditChange, Organization } from '../domain/types.js';
import type { ActorRuntime } from '../runtime.js';
import type { Database, Queryable } from '../storage/database.js';
import type { Touches } from '../snapshots/registry.js';
import { insertEvent } from './audit/store.js';
import { outboxTransaction } from './webhooks/outbox.js';
import { lockAndBumpVersion, lockOrg } from './organizations/store.js';
import { notFound } from '../domain/errors.js';
import { claimIdempotencyKey, idempotencyContext } from './idempotency.js';
import { bypassContext } from './policies/bypass.js';

/** A write's result and what the audit log records of it. */
export interface Audited<T> {
  result: T;
  audit: AuditChange;
}

/** The operator API's actor. */
export const OPERATOR: AuditActor = { operator: true };

/** A Management Key as an actor: its id and name, never its value. */
export const actorOf = (p: Principal): AuditActor => ({ keyId: p.keyId, keyName: p.keyName });

/** Runs `fn` and inserts its audit event into the organization `orgId` names, in one transaction. */
export async function auditedTransaction<T>(
  db: Database,
  actor: AuditActor,
  fn: (tx: Queryable) => Promise<Audited<T> & { orgId: string }>,
): Promise<T> {
  const claim = idempotencyContext.getStore();
  const bypass = bypassContext.getStore();
  try {
    // After the commit, this process's webhook dispatcher is woken if the write queued messages.
    const result = await outboxTransaction(db, async (tx) => {
      // First: a concurrent duplicate (same Idempotency-Key) waits here for this one, then answers its record.
      await claimIdempotencyKey(tx);
      if (bypass !== undefined) bypass.usedInTransaction = false;
      const { result, audit, orgId } = await fn(tx);
      // A write the guard let through on a review bypass records its reason (policies/guard.ts).
      await insertEvent(tx, orgId, actor, bypass?.usedInTransaction ? { ...audit, bypass: { reason: bypass.reason } } : audit);
      return result;
    });
    if (claim?.inTransaction) claim.committed = true;
    return result;
  } finally {
    if (claim !== undefined) claim.inTransaction = false;
  }
}

export async function writeOrg<T>(
  rt: ActorRuntime,
  actor: AuditActor,
  orgId: string,
  /** What the change touches, so that nodes reload no more than that. */
  touches: Touches,
  fn: (tx: Queryable, org: Organization) => Promise<Audited<T>>,
): Promise<T> {
  const { result, version } = await auditedTransaction(rt.db, actor, async (tx) => {
    const org = await lockAndBumpVersion(tx, orgId, touches);
    if (org === null) throw notFound('Organization not found');
    const { result, audit } = await fn(tx, org);
    return { orgId, audit, result: { result, version: org.version } };
  });
  const change = { orgId, version, touches };
  // Published first, so that the other nodes start reading while this one does.
  rt.bus.publish({ kind: 'change', change });
  try {
    // The one read of this change on this node: the actor's replica applies it and posts the
    // delta to the front (mailbox.ts `update`) before the reply.
    await rt.snapshots.apply(change);
  } catch (err) {
    // The write is committed: answer it. The snapshot catches up at the next version poll.
    rt.log.warn('snapshot reload after commit failed', { orgId, version, err: err as Error });
  }
  return result;
}

export function writeOrgKeys<T>(
  rt: ActorRuntime,
  actor: AuditActor,
  orgId: string,
  fn: (tx: Queryable, org: Organization) => Promise<Audited<T>>,
): Promise<T> {
  return auditedTransaction(rt.db, actor, async (tx) => {
    const org = await lockOrg(tx, orgId);
    if (org === null) throw notFound('Organization not found');
    return { orgId, ...(await fn(tx, org)) };
  });
}
