/**
 * Token buckets (docs/api.md, "Order of checks"; docs/graphql.md, "Rate limiting") in shared memory
 * (src/ratelimit/shared-limiter.ts), one thread, with an injected clock: burst, refill, Retry-After,
 * debt, cluster share, per-key identity, the table's bound. Several threads: shared-limiter-threads.test.ts.
 */
import t from 'tap';
import { randomUUID } from 'node:crypto';
import { SharedRateLimiter } from '../../../src/ratelimit/shared-limiter.js';

function limiter(rates = { eval: 10, mgmt: 5 }, capacity?: number) {
  const clock = { ms: 1_000_000 };
  const l = SharedRateLimiter.create(rates, { now: () => clock.ms, capacity });
  return { l, clock, advance: (ms: number) => (clock.ms += ms) };
}

const takeN = (l: SharedRateLimiter, kind: 'eval' | 'mgmt', key: string, n: number) => Array.from({ length: n }, () => l.take(kind, key));

t.test('a new bucket is full: burst = one second worth, then refusal', async (t) => {
  const { l } = limiter();
  t.same(takeN(l, 'eval', 'k', 10), Array(10).fill(0), '10 evaluations at 10/s pass at once');
  t.equal(l.take('eval', 'k'), 1, 'the 11th waits: Retry-After 1 s');
  t.same(takeN(l, 'mgmt', 'k', 5), Array(5).fill(0), '5 management calls at 5/s');
  t.ok(l.take('mgmt', 'k') > 0, 'the 6th is refused');
});

t.test('refill is proportional to elapsed time and capped at the burst', async (t) => {
  const { l, advance } = limiter();
  takeN(l, 'eval', 'k', 10);
  t.ok(l.take('eval', 'k') > 0);
  advance(99);
  t.ok(l.take('eval', 'k') > 0, '99 ms is not a full token at 10/s');
  advance(1);
  t.equal(l.take('eval', 'k'), 0, 'at 100 ms one token is back');
  t.ok(l.take('eval', 'k') > 0, 'and only one');
  advance(350);
  t.same(takeN(l, 'eval', 'k', 3), [0, 0, 0], '350 ms gives 3.5 tokens');
  t.ok(l.take('eval', 'k') > 0, 'not 4');
  advance(3_600_000);
  t.same(takeN(l, 'eval', 'k', 10), Array(10).fill(0), 'after an hour idle: the burst');
  t.ok(l.take('eval', 'k') > 0, 'never more than the burst');
});

t.test('a refused take costs nothing', async (t) => {
  const { l, advance } = limiter();
  takeN(l, 'eval', 'k', 10);
  for (let i = 0; i < 100; i++) l.take('eval', 'k');
  advance(100);
  t.equal(l.take('eval', 'k'), 0, 'one token 100 ms later, despite 100 refusals');
});

t.test('Retry-After: whole seconds, at least 1, until one token is back', async (t) => {
  const slow = limiter({ eval: 0.25, mgmt: 1 });
  // Below 1/s the burst is still one request (a bucket capped under one token would never serve).
  t.equal(slow.l.take('eval', 'k'), 0, 'the first request at 0.25/s passes');
  t.equal(slow.l.take('eval', 'k'), 4, 'the next token is 4 s away at 0.25/s');
  slow.advance(3500);
  t.equal(slow.l.take('eval', 'k'), 1, '0.125 token missing: rounds up to 1 s');
  slow.advance(500);
  t.equal(slow.l.take('eval', 'k'), 0, 'and the promise holds: it passes then');
  slow.advance(3_600_000);
  t.equal(slow.l.take('eval', 'k'), 0, 'after a long idle: one request');
  t.ok(slow.l.take('eval', 'k') > 0, 'not more (burst of one)');
  t.equal(slow.l.take('mgmt', 'k'), 0);
  t.equal(slow.l.take('mgmt', 'k'), 1, '1/s, bucket empty: 1 s');
  slow.advance(999);
  t.equal(slow.l.take('mgmt', 'k'), 1, 'a millisecond missing is still 1 s, never 0');
  slow.advance(1);
  t.equal(slow.l.take('mgmt', 'k'), 0, 'then it passes');
  const fast = limiter({ eval: 1000, mgmt: 1 });
  takeN(fast.l, 'eval', 'k', 1000);
  t.equal(fast.l.take('eval', 'k'), 1, 'even at 1000/s Retry-After is at least 1');
});

t.test('cluster share: each of n nodes admits 1/n of the rate, never less than one request', async (t) => {
  const { l, advance } = limiter({ eval: 10, mgmt: 2 });
  l.setNodes(2);
  t.same(takeN(l, 'eval', 'k', 5), Array(5).fill(0), 'half of 10/s: a burst of 5');
  t.ok(l.take('eval', 'k') > 0);
  advance(200);
  t.equal(l.take('eval', 'k'), 0, 'refill at 5/s: one token per 200 ms');
  t.ok(l.take('eval', 'k') > 0);
  l.setNodes(4); // 0.5 per second for management on each node
  t.equal(l.take('mgmt', 'k'), 0, 'a share below 1/s still admits one request');
  t.equal(l.take('mgmt', 'k'), 2, 'then one every 2 s');
  advance(2000);
  t.equal(l.take('mgmt', 'k'), 0, 'which it honours');
  const full = limiter({ eval: 10, mgmt: 2 });
  takeN(full.l, 'eval', 'a', 2);
  full.l.setNodes(5); // share 2/s: a bucket holding 8 tokens is cut to the new burst
  t.same(takeN(full.l, 'eval', 'a', 2), [0, 0]);
  t.ok(full.l.take('eval', 'a') > 0, 'shrinking the share shrinks stored bursts');
  full.l.setNodes(0);
  full.advance(1000);
  t.same(takeN(full.l, 'eval', 'a', 10), Array(10).fill(0), 'fewer than one node counts as one');
});

t.test('buckets are per key and per kind', async (t) => {
  const { l } = limiter();
  takeN(l, 'eval', 'a', 10);
  t.ok(l.take('eval', 'a') > 0, 'a is empty');
  t.equal(l.take('eval', 'b'), 0, 'b is not');
  t.equal(l.take('mgmt', 'a'), 0, "a's management bucket is not");
  // Key ids that would collide if kinds were merged into one map without a prefix.
  takeN(l, 'mgmt', 'x', 5);
  t.equal(l.take('eval', 'x'), 0);
});

t.test('charge: no refusal, debt bounded by maxDebt, later takes wait for the debt', async (t) => {
  const { l, advance } = limiter({ eval: 10, mgmt: 5 });
  t.equal(l.take('eval', 'k'), 0, 'the request itself takes a token (9 left)');
  l.charge('eval', 'k', 4, 100);
  t.same(takeN(l, 'eval', 'k', 5), [0, 0, 0, 0, 0], '4 charged: 5 left');
  t.ok(l.take('eval', 'k') > 0);

  l.charge('eval', 'k', 30, 20);
  // Debt is capped at -20: one token needs 21 tokens of refill at 10/s = 2.1 s -> 3 s.
  t.equal(l.take('eval', 'k'), 3, 'Retry-After reflects the debt');
  advance(2000);
  t.ok(l.take('eval', 'k') > 0, 'still in debt after 2 s');
  advance(100);
  t.equal(l.take('eval', 'k'), 0, 'after 2.1 s one token is back');

  const other = limiter();
  other.l.charge('eval', 'k', 0, 100);
  other.l.charge('eval', 'k', -5, 100);
  t.same(takeN(other.l, 'eval', 'k', 10), Array(10).fill(0), 'charging 0 or less changes nothing');
  other.l.charge('mgmt', 'k', 1000, 3);
  t.equal(other.l.take('mgmt', 'k'), 1, 'debt of 3 at 5/s: 4 tokens missing, 0.8 s -> 1 s');
  other.advance(800);
  t.equal(other.l.take('mgmt', 'k'), 0);
});

t.test('a clock that goes backwards does not mint or remove tokens', async (t) => {
  const { l, advance } = limiter();
  takeN(l, 'eval', 'k', 10);
  advance(-5000);
  t.ok(l.take('eval', 'k') > 0, 'no refill from going back');
  advance(5100);
  t.equal(l.take('eval', 'k'), 0, 'refill resumes from the last update, not from the past');
});


t.test('identity: a UUID is its 16 bytes, other ids a 128-bit hash, the two never mixed', async (t) => {
  const { l } = limiter({ eval: 2, mgmt: 2 });
  const id = randomUUID();
  takeN(l, 'eval', id, 2);
  t.ok(l.take('eval', id) > 0, 'the UUID is empty');
  t.ok(l.take('eval', id.toUpperCase()) > 0, 'the same UUID in capitals is the same key');
  // One hex digit apart in each of the four words: four other keys.
  for (const p of [0, 9, 19, 35]) {
    const other = id.slice(0, p) + (id[p] === '0' ? '1' : '0') + id.slice(p + 1);
    t.equal(l.take('eval', other), 0, `a UUID differing at ${p} is another key`);
  }
  const notHex = id.slice(0, 35) + 'g';
  t.equal(l.take('eval', notHex), 0, 'a UUID-shaped string with a non-hex digit is hashed, not parsed');
  t.equal(l.take('eval', notHex), 0);
  t.ok(l.take('eval', notHex) > 0, 'and is a key of its own');
  const names = Array.from({ length: 2000 }, (_, i) => `key-${i}`);
  for (const n of names) l.take('eval', n);
  t.same(
    names.map((n) => l.take('eval', n)),
    names.map(() => 0),
    '2,000 short names: each has its own bucket (one token left each)',
  );
});

t.test('attach: another limiter on the same memory takes from the same buckets and sees setNodes', async (t) => {
  const clock = { ms: 5_000 };
  const a = SharedRateLimiter.create({ eval: 10, mgmt: 4 }, { now: () => clock.ms });
  // What a worker receives through postMessage/workerData: a structured clone.
  const b = SharedRateLimiter.attach(structuredClone(a.memory), { now: () => clock.ms });
  t.ok(a.memory.buffer instanceof SharedArrayBuffer);
  const id = randomUUID();
  t.same(takeN(a, 'eval', id, 6), Array(6).fill(0));
  t.same(takeN(b, 'eval', id, 4), Array(4).fill(0), 'the other limiter sees 4 tokens left');
  t.ok(a.take('eval', id) > 0 && b.take('eval', id) > 0, 'both see the bucket empty');
  b.charge('eval', id, 5, 5);
  clock.ms += 500;
  t.ok(a.take('eval', id) > 0, "a sees b's debt: 500 ms refills 5 of the 5 owed, not a token");
  clock.ms += 100;
  t.equal(a.take('eval', id), 0);
  b.setNodes(2);
  clock.ms += 10_000;
  t.same(takeN(a, 'mgmt', id, 2), [0, 0], "a uses b's share at once: a burst of 4 / 2 nodes");
  t.ok(a.take('mgmt', id) > 0);
});

t.test('bound: a full set reuses a bucket that refilled, keeps ones in use, and fails closed when none refilled', async (t) => {
  const capacity = 16; // one set of 16 slots: every key lands in it
  const { l, advance } = limiter({ eval: 10, mgmt: 10 }, capacity);
  t.equal(l.memory.buffer.byteLength, 64 + capacity * 64, 'memory: a cache line a slot');
  const keys = Array.from({ length: capacity }, () => randomUUID());
  for (const k of keys) takeN(l, 'eval', k, 10); // 16 empty buckets
  const newcomer = randomUUID();
  t.equal(l.take('eval', newcomer), 1, 'no room and no bucket refilled: refused, Retry-After 1');
  l.charge('eval', newcomer, 5, 5);
  advance(500);
  for (const k of keys.slice(1)) takeN(l, 'eval', k, 5); // all but the first empty again
  l.charge('eval', keys[2], 20, 20); // one in debt
  advance(500); // the first key's bucket is full again: 1 s since its burst
  t.equal(l.take('eval', newcomer), 0, 'the newcomer takes over the refilled bucket (its earlier charge was dropped)');
  t.same(takeN(l, 'eval', newcomer, 9), Array(9).fill(0), 'with a full burst of its own');
  t.ok(l.take('eval', newcomer) > 0);
  t.same(takeN(l, 'eval', keys[1], 5), Array(5).fill(0), 'the others kept their state: 5 tokens after 500 ms');
  t.ok(l.take('eval', keys[1]) > 0, 'not a fresh burst');
  t.ok(l.take('eval', keys[2]) > 1, 'the key in debt kept its debt');
  t.equal(l.take('eval', keys[0]), 1, 'the first key, evicted, finds no room now (nothing refilled)');
  t.throws(() => SharedRateLimiter.create({ eval: 1, mgmt: 1 }, { capacity: 100 }), RangeError, 'capacity: a power of two');
  t.throws(() => SharedRateLimiter.create({ eval: 0, mgmt: 1 }), RangeError, 'rates: positive');
});
