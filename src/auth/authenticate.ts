/**
 * Authentication in the order every call follows (SPEC 5, issue 2): key missing, unknown or
 * disabled → 401; organization without subscription → 402; rate limit → 429. Permission and scope
 * (403) are the services' business, since they depend on what is asked.
 *
 * With the client's address (CONTRACT.md 8, auth-failures.ts): every 401 spends one unit of the
 * address's failed-authentication budget, and an address past it gets 429 without its key being
 * looked up, unless this node already knows the key (it is then served as usual).
 */
import { VexilError } from '../domain/errors.js';
import { KEY_RE } from '../domain/input-formats.js';
import type { ManagementKey } from '../domain/types.js';
import type { OrgSnapshot } from '../engine/index.js';
import type { Runtime } from '../runtime.js';
import type { BucketKind } from '../ratelimit/token-bucket.js';
import { hashKey } from './key-material.js';
import { principalOf, type Principal } from './permissions.js';

export interface Authenticated {
  principal: Principal;
  snapshot: OrgSnapshot;
}

const unauthenticated = (msg: string) => new VexilError('UNAUTHENTICATED', msg);

/**
 * The client's address, asked for only off the hot path (a known key never needs it); '' or no
 * source means no budget.
 */
export type AddressSource = (() => string) | null;

const addressOf = (source: AddressSource): string | null => (source === null ? null : source() || null);

/** What the failed-authentication checks need: only the budget (the ops routes have no Runtime). */
type Budgeted = Pick<Runtime, 'authFailures'>;

/** A 401, charged to the address's failed-authentication budget (or a 429 when it is spent). */
export function refuse(rt: Budgeted, source: AddressSource, msg: string): VexilError {
  const address = addressOf(source);
  if (address === null) return unauthenticated(msg);
  const wait = rt.authFailures.blocked(address);
  if (wait > 0) return tooManyFailures(wait);
  rt.authFailures.spend(address);
  return unauthenticated(msg);
}

/** Before a key lookup for an unknown credential: the address's spent budget is a 429 (CONTRACT.md 8). */
export function checkAuthBudget(rt: Budgeted, source: AddressSource): void {
  const address = addressOf(source);
  const wait = address === null ? 0 : rt.authFailures.blocked(address);
  if (wait > 0) throw tooManyFailures(wait);
}

const tooManyFailures = (wait: number) =>
  new VexilError('RATE_LIMITED', 'Too many failed authentications from this address', { retryAfter: wait });

/**
 * Synchronous when the key and its organization are in memory (the hot path: no promise per
 * request); a promise when the database must be asked. Throws (or rejects) with a VexilError.
 */
export function authenticate(
  rt: Runtime,
  keyValue: string | undefined,
  bucketFor: (p: Principal) => BucketKind,
  /** The client's address, for the failed-authentication budget; null: no budget. */
  source: AddressSource = null,
): Authenticated | Promise<Authenticated> {
  if (keyValue === undefined || keyValue === '') throw refuse(rt, source, 'Missing x-management-key header');
  if (!KEY_RE.test(keyValue)) throw refuse(rt, source, 'Invalid management key');
  const hash = hashKey(keyValue);
  const cached = rt.keys.peek(hash);
  if (cached !== undefined && cached !== null) {
    const snapshot = rt.snapshots.peek(cached.orgId);
    if (snapshot !== undefined) return admit(rt, cached, snapshot, bucketFor, null);
  }
  const address = addressOf(source);
  if (address !== null && !rt.keys.known(hash)) {
    const wait = rt.authFailures.blocked(address);
    if (wait > 0) throw tooManyFailures(wait);
  }
  if (cached === null) return admit(rt, null, null, bucketFor, address);
  return authenticateSlow(rt, hash, bucketFor, address);
}

async function authenticateSlow(
  rt: Runtime,
  hash: string,
  bucketFor: (p: Principal) => BucketKind,
  address: string | null,
): Promise<Authenticated> {
  const key = await rt.keys.lookup(hash);
  const snapshot = key === null ? null : await rt.snapshots.get(key.orgId);
  return admit(rt, key, snapshot, bucketFor, address);
}

function admit(
  rt: Runtime,
  key: ManagementKey | null,
  snapshot: OrgSnapshot | null,
  bucketFor: (p: Principal) => BucketKind,
  address: string | null,
): Authenticated {
  if (key === null || key.disabled || snapshot === null) {
    if (address !== null) rt.authFailures.spend(address);
    throw unauthenticated('Invalid management key');
  }
  if (!snapshot.org.subscriptionActive) {
    throw new VexilError('PAYMENT_REQUIRED', 'The organization requires an active subscription');
  }
  const principal = principalOf(key);
  const wait = rt.limiter.take(bucketFor(principal), principal.keyId);
  if (wait > 0) throw new VexilError('RATE_LIMITED', 'Rate limit exceeded for this key', { retryAfter: wait });
  return { principal, snapshot };
}
