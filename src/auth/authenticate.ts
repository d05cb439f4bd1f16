/**
 * Admission: the one path from a credential to a principal, for every route and stream, in the
 * order of checks of README.md ("API"): the failed-authentication budget → the key, found through
 * the key cache (rt.keys) → 401 when it is missing, unknown or disabled → 402 when its
 * organization has no active subscription → 429 when its rate-limit bucket is empty (the error
 * carries retryAfter, which becomes Retry-After) → the principal. Permission and scope (403) are
 * the services' business, since they depend on what is asked.
 *
 * Two kinds of credential enter it, and differ only in how the key is found:
 *   - a key value (`authenticate`): the evaluation, GraphQL and OFREP evaluation routes, and the
 *     management routes through admission.ts;
 *   - a key id with a check against the key's stored hash (`authenticateKeyId`): the token of an
 *     OFREP event stream (ofrep/stream-token.ts reads and verifies it).
 * `admit` takes the found key through 401 → 402 → 429 for both; nothing else decides those.
 *
 * With the client's address (docs/limits.md, "Failed authentications"; auth-failures.ts): every
 * 401 spends one unit of the address's failed-authentication budget, and an address past it gets
 * 429 without its key being looked up, unless this node already holds the key (it is then served
 * as usual).
 */
import { VexilError } from '../domain/errors.js';
import { KEY_RE } from '../domain/input-formats.js';
import type { ManagementKey } from '../domain/types.js';
import type { OrgSnapshot } from '../engine/index.js';
import type { FrontRuntime } from '../runtime.js';
import type { BucketKind } from '../ratelimit/token-bucket.js';
import type { KeyWithHash } from './key-cache.js';
import { hashKey } from './key-material.js';
import { principalOf, type Principal } from './permissions.js';

export interface Authenticated {
  principal: Principal;
  snapshot: OrgSnapshot;
}

const unauthenticated = (msg: string) => new VexilError('UNAUTHENTICATED', msg);
const INVALID_KEY = 'Invalid management key';

/**
 * The client's address, asked for only off the hot path (a known key never needs it); '' or no
 * source means no budget.
 */
export type AddressSource = (() => string) | null;

const addressOf = (source: AddressSource): string | null => (source === null ? null : source() || null);

/** What the failed-authentication checks need: only the budget (the ops routes have no FrontRuntime). */
type Budgeted = Pick<FrontRuntime, 'authFailures'>;

/** A 401, charged to the address's failed-authentication budget (or a 429 when it is spent). */
export function refuse(rt: Budgeted, source: AddressSource, msg: string): VexilError {
  const address = addressOf(source);
  if (address === null) return unauthenticated(msg);
  const wait = rt.authFailures.blocked(address);
  if (wait > 0) return tooManyFailures(wait);
  rt.authFailures.spend(address);
  return unauthenticated(msg);
}

/** Before a key lookup for a credential this node does not hold: the address's spent budget is a 429. */
export function checkAuthBudget(rt: Budgeted, source: AddressSource): void {
  const address = addressOf(source);
  const wait = address === null ? 0 : rt.authFailures.blocked(address);
  if (wait > 0) throw tooManyFailures(wait);
}

const tooManyFailures = (wait: number) =>
  new VexilError('RATE_LIMITED', 'Too many failed authentications from this address', { retryAfter: wait });

/**
 * The steps for a key value. Missing or malformed: a 401 charged to the budget. A key the key cache
 * holds, with its organization in memory, is admitted synchronously (the hot path: no promise per
 * request, the address never asked for); otherwise a hash this node does not hold meets the budget
 * first (429 past it, nothing looked up), then the key cache's lookup and `admit`, in a promise.
 * Throws (or rejects) with a VexilError.
 */
export function authenticate(
  rt: FrontRuntime,
  keyValue: string | undefined,
  bucketFor: (p: Principal) => BucketKind,
  /** The client's address, for the failed-authentication budget; null: no budget. */
  source: AddressSource = null,
): Authenticated | Promise<Authenticated> {
  if (keyValue === undefined || keyValue === '') throw refuse(rt, source, 'Missing x-management-key header');
  if (!KEY_RE.test(keyValue)) throw refuse(rt, source, INVALID_KEY);
  const hash = hashKey(keyValue);
  const cached = rt.keys.peek(hash);
  if (cached !== undefined && cached !== null) {
    const snapshot = rt.snapshots.peek(cached.orgId);
    if (snapshot !== undefined) return admit(rt, cached, snapshot, bucketFor, null, INVALID_KEY);
  }
  const address = addressOf(source);
  if (address !== null && !rt.keys.known(hash)) {
    const wait = rt.authFailures.blocked(address);
    if (wait > 0) throw tooManyFailures(wait);
  }
  if (cached === null) return admit(rt, null, null, bucketFor, address, INVALID_KEY);
  return authenticateSlow(rt, hash, bucketFor, address);
}

async function authenticateSlow(
  rt: FrontRuntime,
  hash: string,
  bucketFor: (p: Principal) => BucketKind,
  address: string | null,
): Promise<Authenticated> {
  const key = await rt.keys.lookup(hash);
  const snapshot = key === null ? null : await rt.snapshots.get(key.orgId);
  return admit(rt, key, snapshot, bucketFor, address, INVALID_KEY);
}

/**
 * A credential that names a key instead of carrying its value (the token of an OFREP event stream):
 * the key's id, and the check of the credential against the key's stored hash (for a stream token,
 * its signature and expiry).
 */
export interface KeyIdCredential {
  keyId: string;
  verify(storedHash: string): boolean;
}

/** An admitted key-id credential: who, and the key's stored hash the credential was checked against. */
export interface AuthenticatedById extends Authenticated {
  keyHash: string;
}

/**
 * The same steps for a key named by id. No credential (null: missing or malformed) is a 401 with
 * `refusal` as its message, charged to the budget. The key is peeked by id in the key cache, else,
 * once the budget allows, read by id through it. An unknown or disabled key, or a credential that
 * fails `verify`, is a charged 401 (429 past the budget); an organization no longer there is a 401
 * that spends nothing; then 402 and 429 as for a key value. Always a promise: the organization may
 * have to be loaded (once per connection, not per request).
 */
export async function authenticateKeyId(
  rt: FrontRuntime,
  credential: KeyIdCredential | null,
  bucketFor: (p: Principal) => BucketKind,
  source: AddressSource,
  refusal: string,
): Promise<AuthenticatedById> {
  if (credential === null) throw refuse(rt, source, refusal);
  let found: KeyWithHash | null | undefined = rt.keys.peekById(credential.keyId);
  if (found === undefined) {
    checkAuthBudget(rt, source);
    found = await rt.keys.readById(credential.keyId);
  }
  if (found === null || found.key.disabled || !credential.verify(found.hash)) throw refuse(rt, source, refusal);
  const snapshot = await rt.snapshots.get(found.key.orgId);
  const admitted = admit(rt, found.key, snapshot, bucketFor, null, refusal);
  return { principal: admitted.principal, snapshot: admitted.snapshot, keyHash: found.hash };
}

/**
 * The steps after the key is found, for every credential: 401 for no key, a disabled one or one
 * whose organization is not there (charged to `address`'s budget when one is given, with `refusal`
 * as the message) → 402 without an active subscription → 429 when the key's bucket (`bucketFor`)
 * is empty, with retryAfter → the principal.
 */
function admit(
  rt: FrontRuntime,
  key: ManagementKey | null,
  snapshot: OrgSnapshot | null,
  bucketFor: (p: Principal) => BucketKind,
  address: string | null,
  refusal: string,
): Authenticated {
  if (key === null || key.disabled || snapshot === null) {
    if (address !== null) rt.authFailures.spend(address);
    throw unauthenticated(refusal);
  }
  if (!snapshot.org.subscriptionActive) {
    throw new VexilError('PAYMENT_REQUIRED', 'The organization requires an active subscription');
  }
  const principal = principalOf(key);
  const wait = rt.limiter.take(bucketFor(principal), principal.keyId);
  if (wait > 0) throw new VexilError('RATE_LIMITED', 'Rate limit exceeded for this key', { retryAfter: wait });
  return { principal, snapshot };
}
