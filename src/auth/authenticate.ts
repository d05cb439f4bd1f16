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
 * as usual). A lookup reserves its unit before it starts and gives it back when the key is valid,
 * so parallel guesses cannot outrun the budget (`lookupWithBudget`).
 *
 * The two paths another thread may have to run on a front thread's behalf are plain exported
 * functions of the runtime and the address: `lookupWithBudget` (a hash the key cache does not hold:
 * budget, lookup, refund), `authenticateUnknown` (that, then the organization, 402 and the key's
 * rate limit) and `refuseAddress` (a missing or malformed credential).
 */
import { VexilError } from '../domain/errors.js';
import { KEY_RE } from '../domain/input-formats.js';
import type { ManagementKey } from '../domain/types.js';
import type { OrgSnapshot } from '../engine/index.js';
import type { FrontRuntime } from '../runtime.js';
import type { BucketKind } from '../ratelimit/token-bucket.js';
import type { KeyWithHash } from './key-cache.js';
import { hashKey, KeyHashMemo } from './key-material.js';
import { principalOf, type Principal } from './permissions.js';

export interface Authenticated {
  principal: Principal;
  snapshot: OrgSnapshot;
}

const unauthenticated = (msg: string) => new VexilError('UNAUTHENTICATED', msg);

/**
 * Hashes of key values that authenticated on this process (key-material.ts): the hot path skips
 * SHA-256. Exported only to be inspected (tests); nothing else may fill it.
 */
export const keyHashMemo = new KeyHashMemo();
const memo = keyHashMemo;
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
  return refuseAddress(rt, addressOf(source), msg);
}

/** `refuse` for an address already read (null: no budget). */
export function refuseAddress(rt: Budgeted, address: string | null, msg: string): VexilError {
  if (address === null) return unauthenticated(msg);
  const wait = rt.authFailures.reserve(address); // a unit taken for good: the failure is certain
  return wait > 0 ? tooManyFailures(wait) : unauthenticated(msg);
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
 * The steps for a key value. Missing or malformed: a 401 charged to the budget. A value that
 * authenticated before on this process is hashed from the memo. A key the key cache holds, with its
 * organization in memory, is admitted synchronously (the hot path: no promise per request, the
 * address never asked for); an enabled one's value is remembered in the memo. A hash cached as
 * unknown is a charged 401 (429 past the budget) without a promise either. Otherwise
 * `authenticateUnknown`, in a promise. Throws (or rejects) with a VexilError.
 */
export function authenticate(
  rt: FrontRuntime,
  keyValue: string | undefined,
  bucketFor: (p: Principal) => BucketKind,
  /** The client's address, for the failed-authentication budget; null: no budget. */
  source: AddressSource = null,
): Authenticated | Promise<Authenticated> {
  if (keyValue === undefined) throw refuse(rt, source, 'Missing x-management-key header');
  let hash = memo.get(keyValue);
  const remembered = hash !== undefined;
  if (hash === undefined) {
    if (keyValue === '') throw refuse(rt, source, 'Missing x-management-key header');
    if (!KEY_RE.test(keyValue)) throw refuse(rt, source, INVALID_KEY);
    hash = hashKey(keyValue);
  }
  const cached = rt.keys.peek(hash);
  if (cached !== undefined && cached !== null) {
    const snapshot = rt.snapshots.peek(cached.orgId);
    if (snapshot !== undefined) {
      if (!remembered && !cached.disabled) memo.remember(keyValue, hash);
      return admit(rt, cached, snapshot, bucketFor, INVALID_KEY);
    }
  }
  if (cached === null) throw refuse(rt, source, INVALID_KEY);
  return authenticateUnknown(rt, hash, bucketFor, addressOf(source));
}

/**
 * A key hash this thread cannot admit from memory: `lookupWithBudget`, then the key's organization
 * (loaded when not in memory; gone: a 401 that spends nothing, the key itself was valid), then 402
 * and the key's rate limit as for any key.
 */
export async function authenticateUnknown(
  rt: FrontRuntime,
  hash: string,
  bucketFor: (p: Principal) => BucketKind,
  address: string | null,
): Promise<Authenticated> {
  const key = await lookupWithBudget(rt, hash, address);
  return admit(rt, key, await rt.snapshots.get(key.orgId), bucketFor, INVALID_KEY);
}

/** What `lookupWithBudget` needs: the key cache and the failed-authentication budget. */
export type BudgetedLookup = Pick<FrontRuntime, 'keys' | 'authFailures'>;

/**
 * Reserved lookups in flight, per budget, by address and hash: requests that present the same key
 * from the same address while it is being looked up join that lookup and its one reservation (the
 * key cache joins them into one query anyway). Without this, a client's first burst of parallel
 * requests with its new, valid key would spend the whole budget on itself and get 429s.
 */
const reservedLookups = new WeakMap<BudgetedLookup['authFailures'], Map<string, Promise<ManagementKey | null>>>();

/**
 * The key of `hash` through the key cache, within `address`'s failed-authentication budget (null:
 * no budget). A hash this node has never authenticated reserves one unit first (429 with
 * retryAfter when none is left, and nothing is looked up), once per address for all the requests
 * that wait for the same lookup; the unit stays spent when the key is unknown or disabled (401),
 * and is given back when the key is valid or the lookup failed for another reason (a 503 says
 * nothing about the key). A key this node already holds (even expired) is looked up whatever the
 * budget, and spends a unit only when it turns out disabled or gone. Resolves to an enabled key;
 * rejects with a VexilError.
 */
export async function lookupWithBudget(rt: BudgetedLookup, hash: string, address: string | null): Promise<ManagementKey> {
  if (address === null || rt.keys.known(hash)) {
    const key = await rt.keys.lookup(hash);
    if (key !== null && !key.disabled) return key;
    if (address !== null) rt.authFailures.spend(address);
    throw unauthenticated(INVALID_KEY);
  }
  const key = await reservedLookup(rt, hash, address);
  if (key === null || key.disabled) throw unauthenticated(INVALID_KEY);
  return key;
}

/** One reservation and one lookup of `hash` for `address`, shared by the requests that ask meanwhile. */
function reservedLookup(rt: BudgetedLookup, hash: string, address: string): Promise<ManagementKey | null> {
  let inflight = reservedLookups.get(rt.authFailures);
  if (inflight === undefined) reservedLookups.set(rt.authFailures, (inflight = new Map()));
  const id = `${address} ${hash}`;
  const joined = inflight.get(id);
  if (joined !== undefined) return joined;
  const wait = rt.authFailures.reserve(address);
  if (wait > 0) return Promise.reject(tooManyFailures(wait));
  const budget = rt.authFailures;
  const map = inflight;
  const p = rt.keys.lookup(hash).then(
    (key) => {
      if (key !== null && !key.disabled) budget.refund(address);
      return key;
    },
    (err: unknown) => {
      budget.refund(address);
      throw err;
    },
  );
  map.set(id, p);
  const forget = () => {
    if (map.get(id) === p) map.delete(id);
  };
  p.then(forget, forget);
  return p;
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
  let address: string | null = null;
  if (found === undefined) {
    // Not held: read by id within the budget, its unit reserved first as in lookupWithBudget.
    address = addressOf(source);
    const wait = address === null ? 0 : rt.authFailures.reserve(address);
    if (wait > 0) throw tooManyFailures(wait);
    try {
      found = await rt.keys.readById(credential.keyId);
    } catch (err) {
      if (address !== null) rt.authFailures.refund(address);
      throw err;
    }
  }
  if (found === null || found.key.disabled || !credential.verify(found.hash)) {
    // A read reserved its unit already: it stays spent. A held key is charged now.
    throw address !== null ? unauthenticated(refusal) : refuse(rt, source, refusal);
  }
  if (address !== null) rt.authFailures.refund(address);
  const snapshot = await rt.snapshots.get(found.key.orgId);
  const admitted = admit(rt, found.key, snapshot, bucketFor, refusal);
  return { principal: admitted.principal, snapshot: admitted.snapshot, keyHash: found.hash };
}

/**
 * The steps after the key is found, for every credential: 401 for no key, a disabled one or one
 * whose organization is not there (with `refusal` as the message; the budget was settled by whoever
 * found the key) → 402 without an active subscription → 429 when the key's bucket (`bucketFor`) is
 * empty, with retryAfter → the principal.
 */
function admit(
  rt: FrontRuntime,
  key: ManagementKey | null,
  snapshot: OrgSnapshot | null,
  bucketFor: (p: Principal) => BucketKind,
  refusal: string,
): Authenticated {
  if (key === null || key.disabled || snapshot === null) throw unauthenticated(refusal);
  if (!snapshot.org.subscriptionActive) {
    throw new VexilError('PAYMENT_REQUIRED', 'The organization requires an active subscription');
  }
  const principal = principalOf(key);
  const wait = rt.limiter.take(bucketFor(principal), principal.keyId);
  if (wait > 0) throw new VexilError('RATE_LIMITED', 'Rate limit exceeded for this key', { retryAfter: wait });
  return { principal, snapshot };
}
