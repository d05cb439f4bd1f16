/**
 * authenticate() on a fake runtime: 401 (missing, malformed, unknown, disabled) → 402 → 429, and
 * the limiter is charged only for requests that get that far. No HTTP here; see test/rest/auth.
 */
import t from 'tap';
import { AuthFailureBudget } from '../../../src/auth/auth-failures.js';
import { authenticate, authenticateKeyId, keyHashMemo, type KeyIdCredential } from '../../../src/auth/authenticate.js';
import { KeyCache } from '../../../src/auth/key-cache.js';
import { findKeyByHash, findKeyWithHash } from '../../../src/features/keys/store.js';
import { hashKey } from '../../../src/auth/key-material.js';
import { VexilError } from '../../../src/domain/errors.js';
import { SharedRateLimiter } from '../../../src/ratelimit/shared-limiter.js';
import type { Runtime } from '../../../src/runtime.js';
import type { Queryable } from '../../../src/storage/database.js';

const VALUE = 'ab'.repeat(32);
const DISABLED = 'cd'.repeat(32);

/** A database whose every query answers the row keyed by its first parameter, counting the queries. */
function rowsDb(rows: Record<string, object>): Queryable & { queries: number } {
  const db = {
    queries: 0,
    async query<T>(_text: string, params?: unknown[]): Promise<T[]> {
      db.queries++;
      const r = rows[params![0] as string];
      return (r ? [r] : []) as T[];
    },
    async exec(): Promise<void> {},
  };
  return db;
}

function runtime(opts: { subscriptionActive?: boolean; rate?: number } = {}) {
  const rows: Record<string, object> = {
    [hashKey(VALUE)]: { id: 'k1', org_id: 'o1', name: 'k', permissions: ['CanRead'], application: null, environment: null, disabled: false, created_at: '2026-01-01T00:00:00Z', rotated_at: null },
    [hashKey(DISABLED)]: { id: 'k2', org_id: 'o1', name: 'd', permissions: ['CanRead'], application: null, environment: null, disabled: true, created_at: '2026-01-01T00:00:00Z', rotated_at: null },
  };
  const db = rowsDb(rows);
  const snapshot = { org: { subscriptionActive: opts.subscriptionActive ?? true } };
  const takes: string[] = [];
  const limiter = SharedRateLimiter.create({ eval: opts.rate ?? 2, mgmt: opts.rate ?? 2 }, { now: () => 0 });
  const take = limiter.take.bind(limiter);
  limiter.take = (kind, id) => {
    takes.push(`${kind}:${id}`);
    return take(kind, id);
  };
  const rt = {
    keys: new KeyCache((hash) => findKeyByHash(db, hash), { ttlMs: 60_000, now: () => 0 }),
    snapshots: { peek: (id: string) => (id === 'o1' ? snapshot : undefined), get: async (id: string) => (id === 'o1' ? snapshot : null) },
    limiter,
  } as unknown as Runtime;
  return { rt, snapshot, takes, queries: () => db.queries };
}

async function code(p: () => unknown): Promise<string> {
  try {
    await p();
    return 'OK';
  } catch (err) {
    return err instanceof VexilError ? err.code : `not a VexilError: ${String(err)}`;
  }
}

t.test('401 for missing, malformed, unknown and disabled keys, without touching the limiter', async (t) => {
  const { rt, takes, queries } = runtime();
  const mgmt = () => 'mgmt' as const;
  t.equal(await code(() => authenticate(rt, undefined, mgmt)), 'UNAUTHENTICATED', 'missing');
  t.equal(await code(() => authenticate(rt, '', mgmt)), 'UNAUTHENTICATED', 'empty');
  t.equal(await code(() => authenticate(rt, VALUE.toUpperCase(), mgmt)), 'UNAUTHENTICATED', 'uppercase');
  t.equal(await code(() => authenticate(rt, VALUE.slice(1), mgmt)), 'UNAUTHENTICATED', 'short');
  t.equal(queries(), 0, 'malformed keys never reach the database');
  t.equal(await code(() => authenticate(rt, 'ef'.repeat(32), mgmt)), 'UNAUTHENTICATED', 'unknown');
  t.equal(await code(() => authenticate(rt, 'ef'.repeat(32), mgmt)), 'UNAUTHENTICATED', 'unknown, cached');
  t.equal(await code(() => authenticate(rt, DISABLED, mgmt)), 'UNAUTHENTICATED', 'disabled');
  t.equal(await code(() => authenticate(rt, DISABLED, mgmt)), 'UNAUTHENTICATED', 'disabled, cached');
  t.same(takes, [], 'no token taken');
});

t.test('a valid key passes, the cached path too, and takes from the chosen bucket', async (t) => {
  const { rt, takes, queries } = runtime({ rate: 100 });
  const first = authenticate(rt, VALUE, () => 'eval');
  t.ok(first instanceof Promise, 'first use asks the database');
  t.match(await first, { principal: { keyId: 'k1', orgId: 'o1' } });
  const second = authenticate(rt, VALUE, (p) => (p.permissions.has('CanRead') ? 'mgmt' : 'eval'));
  t.notOk(second instanceof Promise, 'a cached key is authenticated synchronously');
  t.equal(queries(), 1);
  t.same(takes, ['eval:k1', 'mgmt:k1']);
});

t.test('the key-hash memo holds only values that authenticated, and revocation still works', async (t) => {
  const { rt } = runtime({ rate: 100 });
  const before = keyHashMemo.size;
  const eval_ = () => 'eval' as const;
  for (let i = 0; i < 50; i++) await code(() => authenticate(rt, i.toString(16).padStart(2, '0').repeat(32), eval_));
  await code(() => authenticate(rt, DISABLED, eval_));
  await code(() => authenticate(rt, DISABLED, eval_));
  await code(() => authenticate(rt, 'not a key', eval_));
  t.equal(keyHashMemo.size, before, 'unknown, disabled and malformed values are never remembered');
  const V2 = 'fe'.repeat(32);
  const rows = (rt.keys as unknown as { load: (h: string) => Promise<unknown> });
  const load = rows.load;
  rows.load = async (h: string) => (h === hashKey(V2) ? { id: 'k9', orgId: 'o1', name: 'k9', permissions: ['CanEvaluate'], application: null, environment: null, disabled: false } : load(h));
  t.equal(await code(() => authenticate(rt, V2, eval_)), 'OK', 'a new valid key (looked up)');
  t.equal(await code(() => authenticate(rt, V2, eval_)), 'OK', 'then served from the key cache');
  t.equal(keyHashMemo.get(V2), hashKey(V2), 'and remembered with its SHA-256');
  rows.load = async (h: string) => (h === hashKey(V2) ? { id: 'k9', orgId: 'o1', name: 'k9', permissions: ['CanEvaluate'], application: null, environment: null, disabled: true } : load(h));
  rt.keys.invalidateKey('k9');
  t.equal(await code(() => authenticate(rt, V2, eval_)), 'UNAUTHENTICATED', 'disabled later: refused by hash, the memo notwithstanding');
});

t.test('402 before 429: an inactive organization takes no token', async (t) => {
  const { rt, snapshot, takes } = runtime({ subscriptionActive: false, rate: 2 });
  for (let i = 0; i < 5; i++) t.equal(await code(() => authenticate(rt, VALUE, () => 'mgmt')), 'PAYMENT_REQUIRED');
  t.same(takes, [], 'no token taken while inactive');
  t.equal(await code(() => authenticate(rt, DISABLED, () => 'mgmt')), 'UNAUTHENTICATED', '401 before 402');
  snapshot.org.subscriptionActive = true;
  t.equal(await code(() => authenticate(rt, VALUE, () => 'mgmt')), 'OK', 're-activated: the full burst is there');
  t.equal(await code(() => authenticate(rt, VALUE, () => 'mgmt')), 'OK');
  let retryAfter: number | undefined;
  try {
    await authenticate(rt, VALUE, () => 'mgmt');
  } catch (err) {
    t.match(err, { code: 'RATE_LIMITED', status: 429 });
    retryAfter = (err as VexilError).retryAfter;
  }
  t.equal(retryAfter, 1, 'Retry-After carried on the error');
  t.equal(await code(() => authenticate(rt, VALUE, () => 'eval')), 'OK', 'the other bucket is untouched');
  snapshot.org.subscriptionActive = false;
  t.equal(await code(() => authenticate(rt, VALUE, () => 'mgmt')), 'PAYMENT_REQUIRED', '402 before 429 with an empty bucket');
});

t.test('a key named by id (a stream token): the same 401 → 402 → 429, through the key cache, budget first', async (t) => {
  const keyRow = (id: string, disabled: boolean) => ({ id, org_id: 'o1', name: id, permissions: ['CanEvaluate'], application: 'web', environment: null, disabled, created_at: '2026-01-01T00:00:00Z', rotated_at: null, key_hash: `hash-${id}` });
  const rows: Record<string, object> = { k1: keyRow('k1', false), k2: keyRow('k2', true) };
  const db = rowsDb(rows);
  const snapshot = { org: { subscriptionActive: false } };
  const takes: string[] = [];
  const limiter = SharedRateLimiter.create({ eval: 2, mgmt: 2 }, { now: () => 0 });
  const take = limiter.take.bind(limiter);
  limiter.take = (kind, id) => {
    takes.push(`${kind}:${id}`);
    return take(kind, id);
  };
  const rt = {
    keys: new KeyCache((hash) => findKeyByHash(db, hash), { ttlMs: 60_000, now: () => 0, loadById: (id) => findKeyWithHash(db, id) }),
    snapshots: { peek: (id: string) => (id === 'o1' ? snapshot : undefined), get: async (id: string) => (id === 'o1' ? snapshot : null) },
    limiter,
    authFailures: new AuthFailureBudget(1, () => 0),
  } as unknown as Runtime;
  const signedBy = (keyId: string, hash = `hash-${keyId}`) => ({ keyId, verify: (stored: string) => stored === hash });
  const eval_ = () => 'eval' as const;
  const byId = (cred: KeyIdCredential | null, source: (() => string) | null = null) => authenticateKeyId(rt, cred, eval_, source, 'bad token');

  t.equal(await code(() => byId(null)), 'UNAUTHENTICATED', 'no credential');
  t.equal(await code(() => byId(signedBy('nope'))), 'UNAUTHENTICATED', 'unknown key id');
  t.equal(await code(() => byId(signedBy('k1', 'other'))), 'UNAUTHENTICATED', 'a credential that fails its check');
  t.equal(await code(() => byId(signedBy('k2'))), 'UNAUTHENTICATED', 'disabled key');
  t.equal(await code(() => byId(signedBy('k1'))), 'PAYMENT_REQUIRED', '401 before 402');
  t.same(takes, [], 'no token taken before 429');
  snapshot.org.subscriptionActive = true;
  const ok = await byId(signedBy('k1'));
  t.match(ok, { principal: { keyId: 'k1', orgId: 'o1', application: 'web' }, keyHash: 'hash-k1' }, 'admitted, with the stored hash');
  t.equal(await code(() => byId(signedBy('k1'))), 'OK');
  let err: unknown;
  try {
    await byId(signedBy('k1'));
  } catch (e) {
    err = e;
  }
  t.match(err, { code: 'RATE_LIMITED', retryAfter: 1 }, '429 with retryAfter from the evaluation bucket');
  t.same(takes, ['eval:k1', 'eval:k1', 'eval:k1']);

  // An address past its failed-authentication budget: 429 before any read by id.
  const from = () => '192.0.2.1';
  t.equal(await code(() => byId(signedBy('nope'), from)), 'UNAUTHENTICATED', 'the first failure from the address');
  const before = db.queries;
  t.equal(await code(() => byId(signedBy('nope'), from)), 'RATE_LIMITED', 'past the budget');
  t.equal(db.queries, before, 'the key was not read');
  t.equal(await code(() => byId(null, from)), 'RATE_LIMITED', 'no credential past the budget: 429 too');
});
