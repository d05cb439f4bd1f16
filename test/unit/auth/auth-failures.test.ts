/**
 * The failed-authentication budget's reservation (auth-failures.ts, docs/limits.md "Failed
 * authentications"): `reserve` takes a unit or answers Retry-After and takes nothing, `refund` gives
 * it back up to the burst, and `lookupWithBudget` (authenticate.ts) reserves before the key
 * cache's asynchronous lookup, so parallel guesses cannot outrun the budget.
 */
import t from 'tap';
import { AuthFailureBudget } from '../../../src/auth/auth-failures.js';
import { lookupWithBudget, type BudgetedLookup } from '../../../src/auth/authenticate.js';
import { KeyCache } from '../../../src/auth/key-cache.js';
import { VexilError } from '../../../src/domain/errors.js';
import type { ManagementKey } from '../../../src/domain/types.js';

t.test('reserve takes a unit, or answers Retry-After and takes nothing', async (t) => {
  const clock = { ms: 0 };
  const b = new AuthFailureBudget(2, () => clock.ms);
  t.equal(b.reserve('a'), 0, 'first unit of a burst of 2');
  t.equal(b.reserve('a'), 0, 'second unit');
  t.equal(b.reserve('a'), 1, 'none left: wait 1 s at 2/s');
  t.equal(b.reserve('a'), 1, 'a refused reservation took nothing (no debt)');
  t.equal(b.blocked('a'), 1);
  t.equal(b.reserve('b'), 0, 'addresses are separate');
  clock.ms = 500;
  t.equal(b.reserve('a'), 0, 'half a second refills one unit');
  t.equal(b.reserve('a'), 1);
});

t.test('refund gives a reserved unit back, never past the burst', async (t) => {
  const b = new AuthFailureBudget(2, () => 0);
  t.equal(b.reserve('a'), 0);
  t.equal(b.reserve('a'), 0);
  b.refund('a');
  t.equal(b.reserve('a'), 0, 'the refunded unit can be reserved again');
  t.equal(b.reserve('a'), 1, 'and only that one');
  b.refund('a');
  b.refund('a');
  b.refund('a');
  t.equal(b.reserve('a'), 0);
  t.equal(b.reserve('a'), 0);
  t.equal(b.reserve('a'), 1, 'refunds are capped at the burst (2)');
  b.refund('never-seen');
  t.equal(b.size, 1, 'refunding an address without a bucket creates none');
});

t.test('spend (a held key that failed) may run into debt, at most one burst', async (t) => {
  const b = new AuthFailureBudget(2, () => 0);
  for (let i = 0; i < 10; i++) b.spend('a');
  t.equal(b.reserve('a'), 2, '(1 - -2) / 2 s, rounded up');
});

const key = (id: string, disabled = false): ManagementKey =>
  ({ id, orgId: 'o1', name: id, permissions: ['CanEvaluate'], application: null, environment: null, disabled, createdAt: '2026-01-01T00:00:00Z', rotatedAt: null }) as unknown as ManagementKey;

/** A key cache whose loads wait until released, counting them. */
function slowKeys(known: Record<string, ManagementKey>) {
  const pending: (() => void)[] = [];
  const counts = { loads: 0 };
  const keys = new KeyCache(
    (hash) => {
      counts.loads++;
      return new Promise((resolve) => pending.push(() => resolve(known[hash] ?? null)));
    },
    { ttlMs: 60_000, now: () => 0 },
  );
  const release = async () => {
    while (pending.length > 0) pending.shift()!();
    await new Promise((r) => setImmediate(r));
  };
  return { keys, counts, release };
}

async function outcome(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'OK';
  } catch (err) {
    return err instanceof VexilError ? `${err.code}${err.retryAfter !== undefined ? ` ${err.retryAfter}` : ''}` : String(err);
  }
}

t.test('lookupWithBudget: 200 parallel guesses with a budget of 20 reach the lookup 20 times', async (t) => {
  const { keys, counts, release } = slowKeys({});
  const rt: BudgetedLookup = { keys, authFailures: new AuthFailureBudget(20, () => 0) };
  const all = Array.from({ length: 200 }, (_, i) => outcome(lookupWithBudget(rt, `guess-${i}`, '10.0.0.1')));
  await release();
  const got = await Promise.all(all);
  t.equal(counts.loads, 20, 'only the reserved 20 were looked up');
  t.equal(got.filter((x) => x === 'UNAUTHENTICATED').length, 20, '20 answered 401');
  t.equal(got.filter((x) => x === 'RATE_LIMITED 1').length, 180, 'the other 180 answered 429, Retry-After 1 s');
  const elsewhere = outcome(lookupWithBudget(rt, 'guess-x', '10.0.0.2'));
  await release();
  t.equal(await elsewhere, 'UNAUTHENTICATED', 'another address has its own budget');
});

t.test('lookupWithBudget: a valid key gives its unit back; a disabled one keeps it spent', async (t) => {
  const { keys, counts, release } = slowKeys({ good: key('k1'), off: key('k2', true), good2: key('k3') });
  const rt: BudgetedLookup = { keys, authFailures: new AuthFailureBudget(1, () => 0) };
  const first = outcome(lookupWithBudget(rt, 'good', 'a'));
  t.equal(await outcome(lookupWithBudget(rt, 'good2', 'a')), 'RATE_LIMITED 1', 'while the valid key is looked up, its unit is reserved');
  await release();
  t.equal(await first, 'OK', 'the valid key resolves');
  const second = outcome(lookupWithBudget(rt, 'good2', 'a'));
  await release();
  t.equal(await second, 'OK', 'its unit was refunded: the next new key is looked up');
  const off = outcome(lookupWithBudget(rt, 'off', 'a'));
  await release();
  t.equal(await off, 'UNAUTHENTICATED', 'a disabled key is a 401');
  t.equal(await outcome(lookupWithBudget(rt, 'other', 'a')), 'RATE_LIMITED 1', 'and its unit stays spent');
  const loads = counts.loads;
  t.equal(await outcome(lookupWithBudget(rt, 'good', 'a')), 'OK', 'a key this node holds is served past the budget');
  t.equal(counts.loads, loads, 'from the cache');
  const none = outcome(lookupWithBudget(rt, 'nobody', null));
  await release();
  t.equal(await none, 'UNAUTHENTICATED', 'no address: no budget, the lookup and a plain 401');
});

t.test('lookupWithBudget: parallel requests with the same key from one address share one reservation', async (t) => {
  const { keys, counts, release } = slowKeys({ good: key('k1') });
  const rt: BudgetedLookup = { keys, authFailures: new AuthFailureBudget(2, () => 0) };
  const valid = Array.from({ length: 100 }, () => outcome(lookupWithBudget(rt, 'good', 'a')));
  const guess = Array.from({ length: 100 }, () => outcome(lookupWithBudget(rt, 'wrong', 'a')));
  await release();
  t.same(new Set(await Promise.all(valid)), new Set(['OK']), "a client's first burst with its new valid key is served whole");
  t.same(new Set(await Promise.all(guess)), new Set(['UNAUTHENTICATED']), 'the same wrong key sent 100 times in parallel is one guess');
  t.equal(counts.loads, 2, 'two lookups');
  const other = outcome(lookupWithBudget(rt, 'other', 'a'));
  await release();
  t.equal(await other, 'UNAUTHENTICATED', 'the valid key gave its unit back and the guesses kept one: one of 2 is left');
  t.equal(await outcome(lookupWithBudget(rt, 'another', 'a')), 'RATE_LIMITED 1', 'and then none');
});

t.test('lookupWithBudget: a lookup that fails for another reason gives the unit back', async (t) => {
  const keys = new KeyCache(() => Promise.reject(new VexilError('UNAVAILABLE', 'database down')), { ttlMs: 60_000, now: () => 0 });
  const rt: BudgetedLookup = { keys, authFailures: new AuthFailureBudget(1, () => 0) };
  t.equal(await outcome(lookupWithBudget(rt, 'h1', 'a')), 'UNAVAILABLE');
  t.equal(await outcome(lookupWithBudget(rt, 'h2', 'a')), 'UNAVAILABLE', 'the 503 spent nothing: the next lookup is not a 429');
});
