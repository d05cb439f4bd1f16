/**
 * The figures of the in-process insights rows (insights-engine.ts), pure: from interleaved rounds
 * of the same evaluations without and with counting (ns per evaluation each), the ratio and the
 * cost of counting; and that cost as a share of an HTTP request, whose CPU per evaluation comes
 * from the HTTP rows of the same run (`httpCpuUsPerEval`).
 */
import type { Measurement } from './harness.js';
import { median } from './harness.js';

/** One interleaved pair of rounds: ns per evaluation without counting (`offNs`) and with it (`onNs`). */
export interface EnginePair {
  offNs: number;
  onNs: number;
}

export interface Spread {
  median: number;
  min: number;
  max: number;
}

export interface CountingCost {
  pairs: number;
  /** Median ns per evaluation of each side's rounds. */
  offNs: number;
  onNs: number;
  /** Evaluations/s with counting ÷ without, per pair (offNs ÷ onNs). */
  ratio: Spread;
  /** What counting adds per evaluation, per pair (onNs − offNs), in ns. */
  costNs: Spread;
  /** That cost as a share of the evaluation without counting, per pair (onNs ÷ offNs − 1). */
  engineShare: Spread;
}

const spread = (xs: readonly number[]): Spread => ({ median: median(xs), min: Math.min(...xs), max: Math.max(...xs) });

export function countingCost(pairs: readonly EnginePair[]): CountingCost {
  if (pairs.length === 0) throw new RangeError('countingCost: no pairs');
  for (const p of pairs) {
    if (!(p.offNs > 0 && p.onNs > 0 && Number.isFinite(p.offNs) && Number.isFinite(p.onNs))) throw new RangeError(`countingCost: a round without a positive time (${p.offNs}, ${p.onNs})`);
  }
  return {
    pairs: pairs.length,
    offNs: median(pairs.map((p) => p.offNs)),
    onNs: median(pairs.map((p) => p.onNs)),
    ratio: spread(pairs.map((p) => p.offNs / p.onNs)),
    costNs: spread(pairs.map((p) => p.onNs - p.offNs)),
    engineShare: spread(pairs.map((p) => p.onNs / p.offNs - 1)),
  };
}

/** Where an HTTP request's cost was read: the row, and its server CPU µs per evaluation (the median of its slices for a paired row). */
export interface HttpCost {
  row: string;
  cpuUsPerEval: number;
}

/**
 * The server CPU per evaluation of the first of `names` measured in `rows` (this run): a paired
 * insights row's counting-off side (`extra.paired.a.cpuUsPerEval`, median of its slices), or a
 * plain load row's CPU µs per request ÷ its evaluations per request. Undefined when none was.
 */
export function httpCpuUsPerEval(rows: readonly Measurement[], names: readonly string[]): HttpCost | undefined {
  for (const name of names) {
    const r = rows.find((x) => x.name === name && x.status === 'ok');
    if (r === undefined) continue;
    const paired = r.extra?.paired as { a?: { cpuUsPerEval?: number[] } } | undefined;
    const slices = paired?.a?.cpuUsPerEval?.filter((x) => Number.isFinite(x) && x > 0);
    if (slices !== undefined && slices.length > 0) return { row: r.name, cpuUsPerEval: median(slices) };
    const perRequest = r.server?.cpuUsPerRequest;
    if (perRequest !== undefined && Number.isFinite(perRequest) && perRequest > 0) return { row: r.name, cpuUsPerEval: perRequest / (r.evaluationsPerRequest ?? 1) };
  }
  return undefined;
}

/** Counting's cost (ns per evaluation) as a share of an HTTP request's server CPU per evaluation (µs). */
export const httpShare = (costNs: number, http: HttpCost): number => costNs / (http.cpuUsPerEval * 1000);

export const pct = (x: number, d = 1): string => `${(x * 100).toFixed(d)} %`;
export const ns = (x: number): string => x.toFixed(1);

/**
 * The notes every in-process row carries, per `unit` ('evaluation', 'resolve'): CPU ns per unit of
 * each side (median and rounds); on ÷ off and what counting adds, also as a share of `of` (the
 * counting-off unit); and the same by wall time.
 */
export function costNotes(unit: string, of: string, pairs: readonly EnginePair[], wall: readonly EnginePair[]): { cpu: string; cost: string; wall: string } {
  const c = countingCost(pairs);
  const w = countingCost(wall);
  return {
    cpu: `CPU ns per ${unit}: off ${ns(c.offNs)} (rounds: ${pairs.map((p) => ns(p.offNs)).join(', ')}); on ${ns(c.onNs)} (rounds: ${pairs.map((p) => ns(p.onNs)).join(', ')})`,
    cost:
      `on ÷ off: median ${pct(c.ratio.median)} of ${unit}s/s (pairs ${pct(c.ratio.min)}–${pct(c.ratio.max)}); counting adds ${ns(c.costNs.median)} ns per ${unit} ` +
      `(${ns(c.costNs.min)}–${ns(c.costNs.max)}), ${pct(c.engineShare.median)} of ${of} (${pct(c.engineShare.min)}–${pct(c.engineShare.max)})`,
    wall:
      `by wall time instead (other processes' share of this core in it): off ${ns(w.offNs)}, on ${ns(w.onNs)} ns per ${unit}, on ÷ off median ${pct(w.ratio.median)} ` +
      `(${pct(w.ratio.min)}–${pct(w.ratio.max)})`,
  };
}

/** `extra.paired` of an in-process row: the pairs' ratios, and each side's CPU and wall ns per evaluation and rate. */
export function pairedExtra(pairs: readonly EnginePair[], wall: readonly EnginePair[]) {
  return {
    aim: 0.97,
    ratios: pairs.map((p) => p.offNs / p.onNs),
    a: { name: 'counting off', cpuNsPerEval: pairs.map((p) => p.offNs), wallNsPerEval: wall.map((p) => p.offNs), rps: pairs.map((p) => 1e9 / p.offNs) },
    b: { name: 'counting on', cpuNsPerEval: pairs.map((p) => p.onNs), wallNsPerEval: wall.map((p) => p.onNs), rps: pairs.map((p) => 1e9 / p.onNs) },
  };
}

/**
 * What every in-process row (insights-engine.ts's, insights.ts's provider row) builds the same way
 * from its pairs: the cost by CPU time (`cost`), its notes, `versus` (on ÷ off, and the CPU share
 * counting adds) and `extra`'s paired figures with the cost by CPU and by wall time.
 */
export function pairedCostRow(versusName: string, unit: string, of: string, pairs: readonly EnginePair[], wall: readonly EnginePair[]) {
  const cost = countingCost(pairs);
  return {
    cost,
    notes: costNotes(unit, of, pairs, wall),
    versus: { name: versusName, rps: cost.ratio.median, cpuPerRequest: 1 + cost.engineShare.median },
    extra: { paired: pairedExtra(pairs, wall), countingCost: cost, countingCostByWall: countingCost(wall) },
  };
}
