/**
 * util/rounds.ts: one round at a time (the schedule runner and the webhook dispatcher use it).
 * Real timers with short delays; every assertion is on counts of rounds, not on durations.
 */
import t from 'tap';
import { Rounds, within } from '../../../src/util/rounds.js';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** A round that waits until `release()` is called; counts starts and how many ran at once. */
function gated() {
  let open: (() => void) | null = null;
  const s = { started: 0, active: 0, maxActive: 0 };
  const round = async () => {
    s.started++;
    s.active++;
    s.maxActive = Math.max(s.maxActive, s.active);
    await new Promise<void>((r) => (open = r));
    s.active--;
  };
  const release = async () => {
    const o = open;
    open = null;
    o?.();
    await sleep(5);
  };
  return { s, round, release };
}

t.test('a request during a round asks for exactly one more, after it', async (t) => {
  const g = gated();
  const r = new Rounds({ round: g.round, onError: () => t.fail('no error') });
  t.teardown(() => r.stop());
  r.request();
  await sleep(5);
  t.equal(g.s.started, 1, 'the first request starts a round');
  for (let i = 0; i < 5; i++) r.request();
  await sleep(5);
  t.equal(g.s.started, 1, 'no second round while one runs');
  await g.release();
  t.equal(g.s.started, 2, 'five requests during the round made one more round');
  await g.release();
  await sleep(10);
  t.equal(g.s.started, 2, 'and no further one');
  t.equal(g.s.maxActive, 1, 'never two rounds at once');
});

t.test('arm: one timer, replaced by the next arm, cleared by null', async (t) => {
  let n = 0;
  const r = new Rounds({ round: async () => void n++, onError: () => t.fail('no error') });
  t.teardown(() => r.stop());
  r.arm(20);
  r.arm(30); // replaces the first
  await sleep(80);
  t.equal(n, 1, 'the replaced timer did not fire; the last one did, once');
  r.arm(20);
  r.arm(null);
  await sleep(50);
  t.equal(n, 1, 'arm(null) cleared the timer');
});

t.test('poll: a round at each interval; stop ends rounds, timers and the poll', async (t) => {
  let n = 0;
  const r = new Rounds({ round: async () => void n++, onError: () => t.fail('no error'), pollMs: 20 });
  await sleep(110);
  t.ok(n >= 2, `the poll ran rounds (${n})`);
  r.arm(10);
  r.stop();
  const at = n;
  r.request();
  await sleep(60);
  t.equal(n, at, 'no round after stop: not requested, not armed, not polled');
  t.ok(r.isStopped);
});

t.test('errors: reported, first only once per streak; a hanging round is abandoned', async (t) => {
  const seen: boolean[] = [];
  let fail = true;
  let n = 0;
  const r = new Rounds({
    round: async () => {
      n++;
      if (fail) throw new Error('down');
    },
    onError: (_err, first) => seen.push(first),
  });
  t.teardown(() => r.stop());
  r.request();
  await sleep(5);
  r.request();
  await sleep(5);
  t.same(seen, [true, false], 'the first failure of a streak is first, the next is not');
  fail = false;
  r.request();
  await sleep(5);
  fail = true;
  r.request();
  await sleep(5);
  t.same(seen, [true, false, true], 'after a success, a failure is first again');
  t.equal(n, 4);

  const errors: unknown[] = [];
  let started = 0;
  const hang = new Rounds({ round: () => (started++, new Promise<void>(() => {})), onError: (e) => errors.push(e), timeoutMs: 30, name: 'a test round' });
  t.teardown(() => hang.stop());
  hang.request();
  hang.request(); // asked for during the hanging round
  await sleep(80);
  t.ok(errors.length >= 1 && /a test round did not settle within 30 ms/.test(String(errors[0])), 'the hanging round is reported abandoned');
  t.ok(started >= 2, 'the round asked for during it ran after the abandonment');
});

t.test('within: the value, or a rejection after the time', async (t) => {
  t.equal(await within(Promise.resolve(7), 50, 'x'), 7);
  // (within's timer is unref'd: a pending sleep keeps the process alive meanwhile.)
  await t.rejects(Promise.all([within(new Promise(() => {}), 10, 'a thing'), sleep(100)]), /a thing did not settle within 10 ms/);
});
