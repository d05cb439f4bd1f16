/**
 * The one way to change an organization's data: a transaction that first locks the organization
 * and bumps its version, then the caller's writes. After commit, this node's snapshot is updated
 * before the caller answers (read-your-writes) and the change is published to the other nodes.
 * A failure anywhere rolls the whole transaction back: a failed request changes nothing.
 */
import type { Runtime } from '../runtime.js';
import type { Organization } from '../domain/types.js';
import type { Queryable } from '../storage/database.js';
import type { Touches } from '../snapshots/registry.js';
import { lockAndBumpVersion } from './organizations/store.js';
import { notFound } from '../domain/errors.js';

export async function writeOrg<T>(
  rt: Runtime,
  orgId: string,
  /** What the change touches, so that nodes reload no more than that. */
  touches: Touches,
  fn: (tx: Queryable, org: Organization) => Promise<T>,
): Promise<T> {
  const { result, version } = await rt.db.transaction(async (tx) => {
    const org = await lockAndBumpVersion(tx, orgId);
    if (org === null) throw notFound('Organization not found');
    return { result: await fn(tx, org), version: org.version };
  });
  const change = { orgId, version, touches };
  rt.bus.publish({ kind: 'change', change });
  try {
    await rt.snapshots.apply(change);
  } catch (err) {
    // The write is committed: answer it. The snapshot catches up at the next version poll.
    rt.log.warn('snapshot reload after commit failed', { orgId, version, err: err as Error });
  }
  return result;
}
