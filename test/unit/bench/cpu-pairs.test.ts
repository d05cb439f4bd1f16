/**
 * bench/cpu-pairs.ts, the interleaved in-process pairs of the insights rows (engine and provider):
 * a round runs whole batches until its seconds have passed and times them by this process's CPU
 * and by wall time; a pair takes both sides in alternating slices until each has its seconds; the
 * rounds give ns per evaluation of each side. No figure is asserted, only what the pieces do.
 */
import t from 'tap';
import { pairOf, pairedRounds, SLICE_SEC, timedRound, type RoundTime, type Side } from '../../../bench/cpu-pairs.js';

const spin = (): number => {
  let x = 0;
  for (let i = 0; i < 1000; i++) x += Math.sqrt(i);
  return x > 0 ? 3 : 0;
};

t.test('timedRound: whole batches for its seconds, by CPU and wall time; `after` within the timing', async (t) => {
  const elapsed: number[] = [];
  const r = timedRound(0.02, spin, (ms) => {
    elapsed.push(ms);
    return false;
  });
  t.equal(r.evaluations % 3, 0, 'what the batches returned, summed');
  t.equal(r.evaluations / 3, elapsed.length, '`after` once after each batch');
  t.ok(r.wallNs >= 0.02e9, 'at least its seconds of wall time');
  t.ok(r.cpuNs > 0 && r.cpuNs < r.wallNs * 2, `CPU time of this process (${r.cpuNs} ns)`);
  t.ok(elapsed.every((x, i) => i === 0 || x >= elapsed[i - 1]), 'the elapsed ms grow');
  const once = timedRound(0, spin);
  t.equal(once.evaluations, 3, 'at least one batch');
});

t.test('pairOf: alternating slices, the first side alternating, until both sides have their seconds', async (t) => {
  const order: number[] = [];
  const side =
    (k: number): Side =>
    (sec) => {
      order.push(k);
      t.equal(sec, SLICE_SEC, 'one slice at a time');
      return timedRound(sec, spin);
    };
  const [a, b] = pairOf([side(0), side(1)], 0.03);
  t.ok(a.wallNs >= 0.03e9 && b.wallNs >= 0.03e9, 'each side at least its seconds');
  t.ok(a.evaluations > 0 && b.evaluations > 0);
  t.same(order.slice(0, 4), [0, 1, 1, 0], 'A B, then B A');
  t.equal(order.filter((k) => k === 0).length, order.filter((k) => k === 1).length, 'as many slices each');
});

t.test('pairedRounds: a warm-up of each side, then ns per evaluation of each pair by CPU and wall time', async (t) => {
  const calls: number[][] = [[], []];
  const side =
    (k: number, perEval: number): Side =>
    (sec) => {
      calls[k].push(sec);
      return { evaluations: 10, cpuNs: 10 * perEval, wallNs: sec * 1e9 } satisfies RoundTime;
    };
  const got = await pairedRounds([side(0, 100), side(1, 110)], 3, 0.01);
  t.equal(calls[0][0], 0.01, 'the warm-up: at most 0.3 s, here the round');
  t.equal(got.cpu.length, 3);
  t.same(got.cpu[0], { offNs: 100, onNs: 110 }, 'CPU ns per evaluation of each side');
  t.same(got.wall[0], { offNs: 0.005e9 / 10, onNs: 0.005e9 / 10 }, 'wall ns per evaluation of each side');
});
