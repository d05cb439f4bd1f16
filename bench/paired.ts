/**
 * `npm run bench -- paired`: the comparisons whose aims are a few per cent, measured as interleaved
 * A/B pairs instead of one row each. On a shared VM a neighbour's load comes and goes over seconds
 * to minutes (the same scenario measured twice in one run has differed by 30 %), so two rows
 * measured a minute apart compare the neighbours as much as the code. Here both services run side
 * by side (both pinned to the server's CPU; the one not under load is idle), and short slices
 * alternate A, B, A, B…: each pair shares its minute's conditions, and the median of the pairs'
 * ratios is the figure.
 *
 * Comparisons (B against A):
 * - `ofrep-eval` against `rest-front`: OFREP single ≥ 90 % of REST;
 * - `rest-pool`, `ofrep-pool` and `graphql-batch` (default VEXIL_EVAL_WORKERS) against the same on
 *   the front thread only (VEXIL_EVAL_WORKERS=0): the pool never slower, ≥ 95 %;
 * - `rest-segment` (a rule naming a segment with a 20,000-id `in` list) against `rest-front` (one
 *   `==` condition): big audiences stay cheap, ≥ 90 %.
 *
 * - with `VEXIL_BENCH_BASE_MAIN=<another build's dist/src/main.js>` instead: REST, OFREP single
 *   and 100-alias GraphQL (default VEXIL_EVAL_WORKERS) of this build against the same on that
 *   build (a refactor's "throughput within a few per cent of before"). Build the base in a
 *   worktree of the commit before (`git worktree add`, `npm ci`, `npm run build`).
 *
 * `--pairs N` (5) pairs per comparison, `--duration` seconds per slice (default 5; each slice has a
 * 1 s warm-up on fresh connections).
 */
import {
  log,
  makeContext,
  measure,
  median,
  startService,
  workersLabel,
  type Measurement,
  type ServiceTarget,
} from './harness.js';
import type { CustomScenario, RunContext } from './custom-scenario.js';
import { cpuSeconds, processTree } from './proc.js';
import { NotAvailable, scenarioEnv, type LoadRequest, type Scenario, type Target } from './scenario-types.js';
import { SCENARIOS } from './scenarios.js';
import { SEGMENT_SCENARIOS } from './scenarios-segments.js';

export interface Comparison {
  name: string;
  aim: number;
  what: string;
  a: Scenario;
  b: Scenario;
  /** Side A runs this service entry point (another build) instead of this build's. */
  aMain?: string;
}

export const scenario = (name: string): Scenario => {
  const s = [...SCENARIOS, ...SEGMENT_SCENARIOS].find((x) => x.name === name);
  if (s === undefined) throw new Error(`paired: no scenario ${name}`);
  return s;
};

/** A scenario run with the service's default VEXIL_EVAL_WORKERS instead of 0. */
const withPool = (s: Scenario, name: string): Scenario => ({
  ...s,
  name,
  env: (opts) => {
    const env = { ...scenarioEnv(s, opts) };
    delete env.VEXIL_EVAL_WORKERS;
    return env;
  },
});

function comparisons(): Comparison[] {
  const restFront = scenario('rest-front');
  const ofrep = scenario('ofrep-eval');
  const batchFront = scenario('graphql-batch-front');
  return [
    { name: 'paired-ofrep-rest', aim: 0.9, what: 'OFREP single against REST evaluation, both on the front thread', a: restFront, b: ofrep },
    { name: 'paired-rest-pool', aim: 0.95, what: 'REST evaluation, default VEXIL_EVAL_WORKERS against 0', a: restFront, b: withPool(restFront, 'rest-pool (default workers)') },
    { name: 'paired-ofrep-pool', aim: 0.95, what: 'OFREP single, default VEXIL_EVAL_WORKERS against 0', a: ofrep, b: withPool(ofrep, 'ofrep-eval (default workers)') },
    { name: 'paired-graphql-pool', aim: 0.95, what: '100-alias GraphQL, default VEXIL_EVAL_WORKERS against 0', a: batchFront, b: withPool(batchFront, 'graphql-batch (default workers)') },
    {
      name: 'paired-segment-rest',
      aim: 0.9,
      what: "REST evaluation of a rule naming a segment with a 20,000-id in list against rest-front's single == condition, both on the front thread",
      a: restFront,
      b: scenario('rest-segment'),
    },
  ];
}

/** This build against `baseMain`, each route with the default pool. */
function againstBuild(baseMain: string): Comparison[] {
  const rest = withPool(scenario('rest-front'), 'rest-eval (default workers)');
  const ofrep = withPool(scenario('ofrep-eval'), 'ofrep-eval (default workers)');
  const batch = withPool(scenario('graphql-batch-front'), 'graphql-batch (default workers)');
  const what = (route: string) => `${route}, this build against ${baseMain}`;
  return [
    { name: 'paired-build-rest', aim: 0.97, what: what('REST evaluation'), a: rest, b: rest, aMain: baseMain },
    { name: 'paired-build-ofrep', aim: 0.97, what: what('OFREP single'), a: ofrep, b: ofrep, aMain: baseMain },
    { name: 'paired-build-graphql', aim: 0.97, what: what('100-alias GraphQL'), a: batch, b: batch, aMain: baseMain },
  ];
}

interface Side {
  scenario: Scenario;
  target: ServiceTarget;
  request: LoadRequest;
  evals: number;
}

async function side(rc: RunContext, s: Scenario, label: string, main?: string): Promise<Side> {
  const opts = main === undefined ? rc.opts : { ...rc.opts, servicePath: main };
  const target = await startService(opts, rc.adminKey, { label, env: scenarioEnv(s, rc.opts) });
  const ctx = makeContext(rc.opts, target, rc.adminKey);
  await s.setup(ctx);
  return { scenario: s, target, request: s.request(ctx), evals: s.evaluationsPerRequest?.(rc.opts) ?? 1 };
}

/** One side of an interleaved comparison: a running target and the request measured against it. */
export interface PairSide {
  name: string;
  target: Target;
  request: LoadRequest;
  /** Evaluations per request (rates and CPU are per evaluation). */
  evals: number;
  /**
   * Also report the CPU of this process alone (not its children): its share of the whole tree's
   * CPU over each slice, applied to the tree's CPU per evaluation.
   */
  ownPid?: number;
}

/** Per side: evaluations/s and server CPU µs per evaluation of every slice; per pair: B ÷ A. */
export interface PairedFigures {
  rps: [number[], number[]];
  cpu: [number[], number[]];
  /** CPU µs per evaluation of each side's `ownPid` alone (NaN without one). */
  ownCpu: [number[], number[]];
  ratios: number[];
  cpuRatios: number[];
}

/**
 * `pairs` interleaved slices of A and B (which goes first alternates, so neither always follows
 * the other), each a `measure` with a 1 s warm-up on fresh connections.
 */
export async function alternate(rc: RunContext, label: string, sides: [PairSide, PairSide], pairs: number): Promise<PairedFigures> {
  const f: PairedFigures = { rps: [[], []], cpu: [[], []], ownCpu: [[], []], ratios: [], cpuRatios: [] };
  const treeCpu = (pids: number[]): number => pids.flatMap(processTree).reduce((a, p) => a + (cpuSeconds(p) || 0), 0);
  for (let i = 0; i < pairs; i++) {
    const order = i % 2 === 0 ? [0, 1] : [1, 0];
    const got: { rps: number; cpu: number; own: number }[] = [];
    for (const k of order) {
      const s = sides[k];
      log(`  ${label} pair ${i + 1}/${pairs}: ${s.name}`);
      const own0 = s.ownPid === undefined ? NaN : cpuSeconds(s.ownPid);
      const tree0 = s.ownPid === undefined ? NaN : treeCpu(s.target.pids);
      const m = await measure(rc.opts, s.target, s.request, { warmupSec: 1 });
      const cpu = (m.server?.cpuUsPerRequest ?? NaN) / s.evals;
      const ownShare = s.ownPid === undefined ? NaN : (cpuSeconds(s.ownPid) - own0) / (treeCpu(s.target.pids) - tree0);
      got[k] = { rps: (m.load?.rps ?? NaN) * s.evals, cpu, own: cpu * ownShare };
    }
    for (const k of [0, 1]) {
      f.rps[k].push(got[k].rps);
      f.cpu[k].push(got[k].cpu);
      f.ownCpu[k].push(got[k].own);
    }
    f.ratios.push(got[1].rps / got[0].rps);
    // CPU per evaluation: B's against A's (below 1: B is cheaper).
    f.cpuRatios.push(got[1].cpu / got[0].cpu);
  }
  return f;
}

export async function compare(rc: RunContext, c: Comparison, pairs: number): Promise<Measurement> {
  const row: Measurement = { name: c.name, description: `${c.what}: ${c.b.name} ÷ ${c.a.name}, ${pairs} interleaved pairs`, status: 'ok', evalWorkers: workersLabel(rc.opts) };
  const sides: Side[] = [];
  try {
    sides.push(await side(rc, c.a, `${c.name}-a`, c.aMain));
    sides.push(await side(rc, c.b, `${c.name}-b`));
    const pairSide = (s: Side): PairSide => ({ name: s.scenario.name, target: s.target, request: s.request, evals: s.evals });
    const { rps, cpu, ratios, cpuRatios } = await alternate(rc, c.name, [pairSide(sides[0]), pairSide(sides[1])], pairs);
    const r = median(ratios);
    const fmt = (xs: number[], d = 0) => xs.map((x) => x.toFixed(d)).join(', ');
    row.versus = { name: c.a.name, rps: r, cpuPerRequest: median(cpuRatios) };
    row.notes = [
      `${c.b.name} ÷ ${c.a.name}: median ${(r * 100).toFixed(1)} % of evaluations/s over ${pairs} pairs (pairs: ${fmt(ratios.map((x) => x * 100), 1)} %); ` +
        `CPU per evaluation ×${median(cpuRatios).toFixed(2)} (pairs: ${fmt(cpuRatios, 2)}), so ${(100 / median(cpuRatios)).toFixed(1)} % of the rate when the server is ` +
        `the bottleneck; aim ≥ ${(c.aim * 100).toFixed(0)} %`,
      `${c.a.name}: evaluations/s ${fmt(rps[0])}; CPU µs/evaluation ${fmt(cpu[0], 2)}`,
      `${c.b.name}: evaluations/s ${fmt(rps[1])}; CPU µs/evaluation ${fmt(cpu[1], 2)}`,
    ];
    row.extra = { paired: { aim: c.aim, ratios, cpuRatios, a: { name: c.a.name, rps: rps[0], cpuUsPerEval: cpu[0] }, b: { name: c.b.name, rps: rps[1], cpuUsPerEval: cpu[1] } } };
  } catch (err) {
    if (err instanceof NotAvailable) return { ...row, status: 'not available', error: err.message };
    throw err;
  } finally {
    for (const s of sides) await s.target.stop();
  }
  return row;
}

export const paired: CustomScenario = {
  name: 'paired',
  description:
    'Interleaved A/B pairs for the few-per-cent aims: OFREP single vs REST (≥ 90 %), and REST, OFREP and 100-alias GraphQL with the ' +
    'default pool vs VEXIL_EVAL_WORKERS=0 (≥ 95 %), a 20,000-id segment rule vs one == condition (≥ 90 %); or, with VEXIL_BENCH_BASE_MAIN, this build against another (≥ 97 %); ' +
    'median of --pairs (5) pair ratios, each slice --duration s.',
  async run(rc) {
    const pairs = rc.opts.pairs ?? 5;
    const only = process.env.VEXIL_BENCH_PAIRED?.split(',').filter(Boolean);
    const rows: Measurement[] = [];
    const base = process.env.VEXIL_BENCH_BASE_MAIN;
    for (const c of base ? againstBuild(base) : comparisons()) {
      if (only !== undefined && !only.includes(c.name)) continue;
      log(`${c.name}: ${c.what}`);
      rows.push(await compare(rc, c, pairs));
    }
    return rows;
  },
};
