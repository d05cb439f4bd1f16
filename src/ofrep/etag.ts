/**
 * The bulk answer's ETag (docs/ofrep.md, "Bulk and its ETag"), computed from the data
 * version, the time boundaries passed, the key and the request body, without evaluating anything;
 * and If-None-Match matching.
 */
import { createHash } from 'node:crypto';
import type { Organization } from '../domain/types.js';
import type { OrgSnapshot } from '../engine/index.js';
import type { BulkPlan } from './evaluate.js';

const boundariesCache = new WeakMap<Organization, number[]>();

/** Every activeFrom / activeUntil instant of the organization's configurations, sorted. */
function timeBoundaries(snapshot: OrgSnapshot): number[] {
  let b = boundariesCache.get(snapshot.org);
  if (b === undefined) {
    const set = new Set<number>();
    for (const cf of snapshot.flags.values()) {
      for (const c of cf.configs.values()) {
        if (c.activeFromMs !== null) set.add(c.activeFromMs);
        if (c.activeUntilMs !== null) set.add(c.activeUntilMs);
      }
    }
    b = [...set].sort((x, y) => x - y);
    boundariesCache.set(snapshot.org, b);
  }
  return b;
}

/** How many of the sorted `boundaries` are at or before `now` (binary search). */
function passed(boundaries: number[], now: number): number {
  let lo = 0;
  let hi = boundaries.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (boundaries[mid] <= now) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * The bulk answer's ETag, computed without evaluating anything: a SHA-256 over the organization's
 * data version (every write bumps it, on every node the same), the number of configuration time
 * boundaries already passed (an answer changes when activeFrom / activeUntil passes without a
 * write), the key's id and scope, and the request body (the context). Same data, key and context
 * give the same ETag on every node; any change of them gives another.
 */
export function bulkEtag(plan: BulkPlan, body: Buffer, now: number): string {
  const snapshot = plan.auth.snapshot;
  const p = plan.auth.principal;
  const h = createHash('sha256');
  h.update(`v1\u0000${snapshot.org.id}\u0000${snapshot.org.version}\u0000${passed(timeBoundaries(snapshot), now)}\u0000${p.keyId}\u0000${p.application}\u0000${p.environment}\u0000`);
  h.update(body);
  return '"' + h.digest('base64url').slice(0, 27) + '"';
}

export { etagMatches } from '../http/etag.js';
