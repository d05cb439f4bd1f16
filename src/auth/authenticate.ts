/**
 * Authentication in the order every call follows (SPEC 5, issue 2): key missing, unknown or
 * disabled → 401; organization without subscription → 402; rate limit → 429. Permission and scope
 * (403) are the services' business, since they depend on what is asked.
 */
import { VexilError } from '../domain/errors.js';
import type { ManagementKey } from '../domain/types.js';
import type { OrgSnapshot } from '../evaluation/index.js';
import type { Runtime } from '../runtime.js';
import type { BucketKind } from '../ratelimit/token-bucket.js';
import { hashKey, KEY_PATTERN } from './key-material.js';
import { principalOf, type Principal } from './permissions.js';

export interface Authenticated {
  principal: Principal;
  snapshot: OrgSnapshot;
}

const unauthenticated = (msg: string) => new VexilError('UNAUTHENTICATED', msg);

/**
 * Synchronous when the key and its organization are in memory (the hot path: no promise per
 * request); a promise when the database must be asked. Throws (or rejects) with a VexilError.
 */
export function authenticate(
  rt: Runtime,
  keyValue: string | undefined,
  bucketFor: (p: Principal) => BucketKind,
): Authenticated | Promise<Authenticated> {
  if (keyValue === undefined || keyValue === '') throw unauthenticated('Missing x-management-key header');
  if (!KEY_PATTERN.test(keyValue)) throw unauthenticated('Invalid management key');
  const hash = hashKey(keyValue);
  const cached = rt.keys.peek(hash);
  if (cached !== undefined) {
    const snapshot = cached === null ? undefined : rt.snapshots.peek(cached.orgId);
    if (cached === null || snapshot !== undefined) return admit(rt, cached, snapshot ?? null, bucketFor);
  }
  return authenticateSlow(rt, hash, bucketFor);
}

async function authenticateSlow(rt: Runtime, hash: string, bucketFor: (p: Principal) => BucketKind): Promise<Authenticated> {
  const key = await rt.keys.lookup(hash);
  const snapshot = key === null ? null : await rt.snapshots.get(key.orgId);
  return admit(rt, key, snapshot, bucketFor);
}

function admit(rt: Runtime, key: ManagementKey | null, snapshot: OrgSnapshot | null, bucketFor: (p: Principal) => BucketKind): Authenticated {
  if (key === null || key.disabled || snapshot === null) throw unauthenticated('Invalid management key');
  if (!snapshot.org.subscriptionActive) {
    throw new VexilError('PAYMENT_REQUIRED', 'The organization requires an active subscription');
  }
  const principal = principalOf(key);
  const wait = rt.limiter.take(bucketFor(principal), principal.keyId);
  if (wait > 0) throw new VexilError('RATE_LIMITED', 'Rate limit exceeded for this key', { retryAfter: wait });
  return { principal, snapshot };
}
