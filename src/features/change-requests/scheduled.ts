/**
 * Scheduled change requests, applied by the section 15 schedule runner (schedules/runner.ts), on
 * one node: the apply's transaction locks the request and finds it still `scheduled` (else another
 * node applied it: `Taken`, rolled back, nothing written). A refusal when due (hash, approvals, a
 * moved target, the key disabled) marks the request `failed` with the reason; nothing else changes.
 */
import { principalOf } from '../../auth/permissions.js';
import { isVexilError, VexilError } from '../../domain/errors.js';
import type { ActorRuntime } from '../../runtime.js';
import { findKeyWithHash } from '../keys/store.js';
import { actorOf } from '../write.js';
import { applyAs, markFailed, Taken } from './service.js';
import * as store from './store.js';

const BATCH = 100;
const FINAL = new Set(['BAD_REQUEST', 'UNAUTHENTICATED', 'PAYMENT_REQUIRED', 'FORBIDDEN', 'NOT_FOUND', 'CONFLICT', 'QUOTA_EXCEEDED']);

/** Applies every due request; false when one should be tried again (a passing failure). */
export async function applyDueRequests(rt: ActorRuntime): Promise<boolean> {
  let ok = true;
  for (const r of await store.dueRequests(rt.db, BATCH)) if (!(await applyOne(rt, r))) ok = false;
  return ok;
}

export const msToNextRequest = (rt: ActorRuntime): Promise<number | null> => store.msToNextScheduled(rt.db);

async function applyOne(rt: ActorRuntime, r: store.StoredRequest): Promise<boolean> {
  let actor: { keyId: string; keyName: string } = { keyId: r.scheduledBy ?? '', keyName: '' };
  try {
    const found = r.scheduledBy === null ? null : await findKeyWithHash(rt.db, r.scheduledBy);
    if (found === null || found.key.orgId !== r.orgId) throw new VexilError('UNAUTHENTICATED', `The scheduling key ${r.scheduledBy} no longer exists`);
    const p = principalOf(found.key);
    actor = actorOf(p) as typeof actor;
    if (found.key.disabled) throw new VexilError('UNAUTHENTICATED', `The scheduling key ${r.scheduledBy} is disabled`);
    await applyAs(rt, p, r.id, r.hash, true);
    rt.log.info('scheduled change request applied', { changeRequestId: r.id, orgId: r.orgId });
    return true;
  } catch (err) {
    if (err instanceof Taken) return true;
    if (isVexilError(err) && FINAL.has(err.code)) {
      if (await markFailed(rt, actor, r.orgId, r.id, err.message)) rt.log.info('scheduled change request failed', { changeRequestId: r.id, reason: err.message });
      return true;
    }
    rt.log.warn('applying a scheduled change request failed; trying again', { changeRequestId: r.id, err: err as Error });
    return false;
  }
}
