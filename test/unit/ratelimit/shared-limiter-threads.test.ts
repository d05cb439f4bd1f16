/**
 * CONTRACT 20: a limit holds whichever front thread serves a request. Four worker_threads attach
 * to a SharedRateLimiter and call take() in tight loops with a shared clock frozen by the test:
 * the admissions over all threads are exactly the burst, and after the clock moves 1 s exactly one
 * second's rate more. The threads start together (a barrier on Atomics.wait), on brand-new keys,
 * so they also race to insert the same key (4,096 times). Without the per-slot lock the totals come out above
 * the burst (a read-modify-write of the tokens loses updates); without the insert lock a key gets
 * two buckets.
 */
import t from 'tap';
import { randomUUID } from 'node:crypto';
import { Worker } from 'node:worker_threads';
import { SharedRateLimiter } from '../../../src/ratelimit/shared-limiter.js';

const THREADS = 4;
const worker = new URL('./fixtures/take-loop.ts', import.meta.url);

interface Run {
  rate: number;
  keyIds: string[];
  takes: number;
}

/** Admissions per phase (two per run), per thread, per key. */
async function play(runs: Run[]): Promise<number[][][]> {
  const limiters = runs.map((r) => SharedRateLimiter.create({ eval: r.rate, mgmt: 1 }));
  const control = new SharedArrayBuffer(16);
  const c = new Int32Array(control);
  c[0] = 1_000_000; // the frozen clock, ms
  const phases = runs.length * 2;
  const got: number[][][] = Array.from({ length: phases }, () => []);
  const workerData = { control, runs: runs.map((r, i) => ({ memory: limiters[i].memory, keyIds: r.keyIds, takes: r.takes })) };
  const workers = Array.from({ length: THREADS }, () => new Worker(worker, { workerData }));
  const done = Promise.all(
    workers.map(
      (w) =>
        new Promise<void>((resolve, reject) => {
          w.on('message', (m: { phase: number; admitted: number[] }) => got[m.phase - 1].push(m.admitted));
          w.on('error', reject);
          w.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`worker exited ${code}`))));
        }),
    ),
  );
  const until = async (ok: () => boolean) => {
    while (!ok()) await new Promise((r) => setTimeout(r, 5));
  };
  for (let phase = 1; phase <= phases; phase++) {
    await until(() => Atomics.load(c, 2) >= THREADS * phase);
    if (phase % 2 === 0) Atomics.add(c, 0, 1000); // one second later, for every thread at once
    Atomics.store(c, 1, phase);
    Atomics.notify(c, 1);
    await until(() => got[phase - 1].length === THREADS);
  }
  await done;
  return got;
}

const total = (perThread: number[][], k: number) => perThread.reduce((sum, a) => sum + a[k], 0);

t.test('four threads on shared buckets: exact bursts and refills', async (t) => {
  const one: Run = { rate: 200_000, keyIds: [randomUUID()], takes: 150_000 };
  const many: Run = { rate: 20, keyIds: Array.from({ length: 4096 }, () => randomUUID()), takes: 4096 * 10 };
  const phases = await play([one, many]);

  const perThread = (p: number) => phases[p].map((a) => a[0]).join(', ');
  t.equal(total(phases[0], 0), one.rate, `one key, frozen clock: exactly the burst (${one.rate}) over all threads; per thread ${perThread(0)}`);
  t.equal(total(phases[1], 0), one.rate, `1 s later: exactly ${one.rate} more; per thread ${perThread(1)}`);
  t.ok(phases[0].filter((a) => a[0] > 0).length >= 2, 'at least two threads were admitted (they did run at once)');

  for (const p of [2, 3]) {
    const totals = many.keyIds.map((_, k) => total(phases[p], k));
    const wrong = totals.filter((n) => n !== many.rate);
    t.same(wrong, [], `4,096 new keys, all threads inserting each at once, phase ${p - 1}: each admitted exactly ${many.rate} times (the others: ${wrong.slice(0, 5).join(', ')})`);
  }
});
