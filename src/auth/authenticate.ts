/**
 * Authentication in the order every call follows (SPEC 5, issue 2): key missing, unknown or
 * disabled → 401; organization without subscription → 402; rate limit → 429. Permission and scope
 * (403) are the services' business, since they depend on what is asked.
 */
import { VexilError } from '../domain/errors.js';
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

export async function authenticate(
  rt: Runtime,
  keyValue: string | undefined,
  bucketFor: (p: Principal) => BucketKind,
): Promise<Authenticated> {
  if (keyValue === undefined || keyValue === '') throw unauthenticated('Missing x-management-key header');
  if (!KEY_PATTERN.test(keyValue)) throw unauthenticated('Invalid management key');
  const hash = hashKey(keyValue);
  let key = rt.keys.peek(hash);
  if (key === undefined) key = await rt.keys.lookup(hash);
  if (key === null || key.disabled) throw unauthenticated('Invalid management key');
  const principal = principalOf(key);
  let snapshot = rt.snapshots.peek(key.orgId) ?? null;
  if (snapshot === null) snapshot = await rt.snapshots.get(key.orgId);
  if (snapshot === null) throw unauthenticated('Invalid management key');
  if (!snapshot.org.subscriptionActive) {
    throw new VexilError('PAYMENT_REQUIRED', 'The organization requires an active subscription');
  }
  const wait = rt.limiter.take(bucketFor(principal), principal.keyId);
  if (wait > 0) throw new VexilError('RATE_LIMITED', 'Rate limit exceeded for this key', { retryAfter: wait });
  return { principal, snapshot };
}
