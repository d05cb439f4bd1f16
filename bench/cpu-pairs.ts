/**
 * Interleaved A/B pairs in the runner's one thread, timed by its own CPU time (docs/insights.md,
 * "Cost on the hot path"): the in-process insights rows (insights-engine.ts, and the provider's in
 * insights.ts). A pair is `sec` seconds of each side taken in alternating SLICE_SEC slices, so
 * that a neighbour's load, which comes and goes over seconds, falls on both sides; a round's
 * figure is this process's CPU time (user + system): the runner does nothing else meanwhile, and
 * on a shared 2-core VM the wall time also holds what other processes took from its core (kept as
 * a cross-check).
 */
import type { EnginePair } from './counting-cost.js';

/** One round: its evaluations, and the ns they took by CPU time (the figure) and by wall time. */
export interface RoundTime {
  evaluations: number;
  cpuNs: number;
  wallNs: number;
}

/** A pair's slices: short enough that both sides see the same neighbours, long enough that reading the clocks costs nothing. */
export const SLICE_SEC = 0.005;

/** How a row describes its pairs: `pairs` pairs of `sec` seconds a side in SLICE_SEC slices. */
export const slicedPairs = (pairs: number, sec: number): string => `${pairs} pairs of ${sec} s a side, taken in alternating ${SLICE_SEC * 1000} ms slices`;

/**
 * Calls `batch` (which returns how many evaluations it ran) until `sec` seconds of wall time have
 * passed (at least once): the evaluations, this process's CPU time and the wall time. `after`, if
 * given, runs after each batch with the round's elapsed ms, inside the timing (a side's own
 * periodic work); it returns true when it did something (the clock is read again).
 */
export function timedRound(sec: number, batch: () => number, after?: (elapsedMs: number) => boolean): RoundTime {
  let n = 0;
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const end = t0 + sec * 1000;
  let t = t0;
  do {
    n += batch();
    t = performance.now();
    if (after !== undefined && after(t - t0)) t = performance.now();
  } while (t < end);
  const c = process.cpuUsage(c0);
  return { evaluations: n, cpuNs: (c.user + c.system) * 1e3, wallNs: (t - t0) * 1e6 };
}

/** One side of a comparison: runs for about `sec` seconds (a `timedRound`). */
export type Side = (sec: number) => RoundTime;

/**
 * One pair: `sec` seconds of each side, as slices of SLICE_SEC taken in turn (which side goes first
 * alternates), summed per side.
 */
export function pairOf(sides: readonly [Side, Side], sec: number): [RoundTime, RoundTime] {
  const sum: [RoundTime, RoundTime] = [
    { evaluations: 0, cpuNs: 0, wallNs: 0 },
    { evaluations: 0, cpuNs: 0, wallNs: 0 },
  ];
  for (let j = 0; sum[0].wallNs < sec * 1e9 || sum[1].wallNs < sec * 1e9; j++) {
    for (const k of j % 2 === 0 ? [0, 1] : [1, 0]) {
      const r = sides[k](Math.min(SLICE_SEC, sec));
      sum[k].evaluations += r.evaluations;
      sum[k].cpuNs += r.cpuNs;
      sum[k].wallNs += r.wallNs;
    }
  }
  return sum;
}

/** Each pair's ns per evaluation of side A (`offNs`) and B (`onNs`), by CPU time and by wall time. */
export interface PairedRounds {
  cpu: EnginePair[];
  wall: EnginePair[];
}

/**
 * A warm-up of each side (the code optimised before the first measured round), then `pairs`
 * pairs of `sec` seconds a side; the event loop turns between pairs (timers, a side's sends).
 */
export async function pairedRounds(sides: readonly [Side, Side], pairs: number, sec: number): Promise<PairedRounds> {
  for (const s of sides) s(Math.min(0.3, sec));
  const out: PairedRounds = { cpu: [], wall: [] };
  for (let p = 0; p < pairs; p++) {
    const [a, b] = pairOf(sides, sec);
    out.cpu.push({ offNs: a.cpuNs / a.evaluations, onNs: b.cpuNs / b.evaluations });
    out.wall.push({ offNs: a.wallNs / a.evaluations, onNs: b.wallNs / b.evaluations });
    await new Promise((r) => setImmediate(r));
  }
  return out;
}
