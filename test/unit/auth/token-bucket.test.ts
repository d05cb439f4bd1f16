/** Token buckets (docs/api.md, "Order of checks"; docs/graphql.md, "Rate limiting") with an injected clock: burst, refill, Retry-After, debt. */
import t from 'tap';
import { RateLimiter } from '../../../src/ratelimit/token-bucket.js';

function limiter(rates = { eval: 10, mgmt: 5 }, maxEntries?: number) {
  const clock = { ms: 1_000_000 };
  const l = new RateLimiter(rates, () => clock.ms, maxEntries);
  return { l, clock, advance: (ms: number) => (clock.ms += ms) };
}

const takeN = (l: RateLimiter, kind: 'eval' | 'mgmt', key: string, n: number) => Array.from({ length: n }, () => l.take(kind, key));

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

t.test('eviction when full keeps buckets that still carry debt', async (t) => {
  const { l, advance } = limiter({ eval: 10, mgmt: 5 }, 2);
  takeN(l, 'eval', 'busy', 10); // empty
  l.take('eval', 'idle'); // 9 tokens, refills to full in 100 ms
  advance(200);
  l.take('eval', 'newcomer'); // triggers eviction of full buckets only
  t.ok(l.take('eval', 'busy') === 0, 'busy refilled 2 tokens in 200 ms');
  t.ok(l.take('eval', 'busy') === 0);
  t.ok(l.take('eval', 'busy') > 0, 'busy kept its state: exactly 2 tokens, not a fresh burst');
});
