/**
 * authenticate() on a fake runtime: 401 (missing, malformed, unknown, disabled) → 402 → 429, and
 * the limiter is charged only for requests that get that far. No HTTP here; see test/rest/auth.
 */
import t from 'tap';
import { authenticate } from '../../src/auth/authenticate.js';
import { KeyCache } from '../../src/auth/key-cache.js';
import { findKeyByHash } from '../../src/features/keys/store.js';
import { hashKey } from '../../src/auth/key-material.js';
import { VexilError } from '../../src/domain/errors.js';
import { RateLimiter } from '../../src/ratelimit/token-bucket.js';
import type { Runtime } from '../../src/runtime.js';
import type { Queryable } from '../../src/storage/database.js';

const VALUE = 'ab'.repeat(32);
const DISABLED = 'cd'.repeat(32);

function runtime(opts: { subscriptionActive?: boolean; rate?: number } = {}) {
  const rows: Record<string, object> = {
    [hashKey(VALUE)]: { id: 'k1', org_id: 'o1', name: 'k', permissions: ['CanRead'], application: null, environment: null, disabled: false, created_at: '2026-01-01T00:00:00Z', rotated_at: null },
    [hashKey(DISABLED)]: { id: 'k2', org_id: 'o1', name: 'd', permissions: ['CanRead'], application: null, environment: null, disabled: true, created_at: '2026-01-01T00:00:00Z', rotated_at: null },
  };
  let queries = 0;
  const db: Queryable = {
    async query<T>(_text: string, params?: unknown[]) {
      queries++;
      const r = rows[params![0] as string];
      return (r ? [r] : []) as T[];
    },
    async exec() {},
  };
  const snapshot = { org: { subscriptionActive: opts.subscriptionActive ?? true } };
  const takes: string[] = [];
  const limiter = new RateLimiter({ eval: opts.rate ?? 2, mgmt: opts.rate ?? 2 }, () => 0);
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
  return { rt, snapshot, takes, queries: () => queries };
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
