/**
 * `npm run bench -- insights` (docs/insights.md, "Cost on the hot path"): what counting every
 * evaluation per flag costs (CONTRACT 18: at most 3 %), as interleaved A/B pairs (paired.ts): the
 * same scenario with VEXIL_INSIGHTS=off (A, the baseline) and with counting on (B, the default),
 * for REST (`rest-front`), OFREP bulk (`ofrep-bulk`) and the 100-alias GraphQL batch
 * (`graphql-batch-front`); every front thread the service runs counts (one under --pin). Then the
 * in-process provider: `provider.resolve` with counting off (metricsIntervalMs 0) against on
 * (the default), in this process as the engine rows (cpu-pairs.ts): twice the pair count of pairs
 * of VEXIL_BENCH_PROVIDER_SEC (0.5) s a side in alternating 5 ms slices, by CPU time; the on side
 * must have sent the node a count of every one of its resolves at close, the off side none.
 *
 * Last, in the runner's thread (insights-engine.ts): what counting adds to the evaluation work
 * itself, without HTTP: OFREP bulk's `bulkAnswers` and single `runEvaluation`s with the node's
 * counters with insights against without, twice the pair count of pairs of VEXIL_BENCH_ENGINE_SEC
 * (0.5) s a side in alternating 5 ms slices, by CPU time; ns per evaluation, and the cost as a share of the engine-only evaluation
 * and of the HTTP rows' server CPU per request measured before it in the same run.
 *
 * `--pairs N` (or VEXIL_BENCH_PAIRS; 5) pairs per comparison (twice that in process);
 * `VEXIL_BENCH_INSIGHTS=rest,bulk,graphql,provider,engine` picks.
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { CustomScenario } from './custom-scenario.js';
import { pairedCostRow, type EnginePair } from './counting-cost.js';
import { pairedRounds, slicedPairs, timedRound, type Side } from './cpu-pairs.js';
import { ROOT, log, makeContext, startService, type Measurement } from './harness.js';
import { engineRows, sunk } from './insights-engine.js';
import { compare, scenario, type Comparison } from './paired.js';
import { scenarioEnv, type Scenario } from './scenario-types.js';
import { createEvalKey } from './scenarios.js';

const BUNDLE = path.join(ROOT, 'packages/openfeature-provider/dist/index.js');

const counting = (s: Scenario, on: boolean): Scenario => ({
  ...s,
  name: `${s.name} (counting ${on ? 'on' : 'off'})`,
  env: (opts) => ({ ...scenarioEnv(s, opts), VEXIL_INSIGHTS: on ? 'on' : 'off' }),
});

function comparisons(): { key: string; c: Comparison }[] {
  const pair = (key: string, name: string, what: string, s: Scenario) => ({ key, c: { name, aim: 0.97, what, a: counting(s, false), b: counting(s, true) } });
  return [
    pair('rest', 'insights-rest', 'REST evaluation, counting on against VEXIL_INSIGHTS=off', scenario('rest-front')),
    pair('bulk', 'insights-ofrep-bulk', 'OFREP bulk, counting on against VEXIL_INSIGHTS=off', scenario('ofrep-bulk')),
    pair('graphql', 'insights-graphql-batch', '100-alias GraphQL, counting on against VEXIL_INSIGHTS=off', scenario('graphql-batch-front')),
  ];
}

/** The provider's counters a row checks: its own `metricsSent` and `metricsDropped` after close. */
interface ProviderCounts {
  metricsSent: number;
  metricsDropped: number;
}

/** Resolves between two looks at the clock. */
const PROVIDER_BATCH = 256;

async function providerPair(rc: Parameters<CustomScenario['run']>[0], pairs: number): Promise<Measurement> {
  const target = await startService(rc.opts, rc.adminKey, { env: { VEXIL_EVAL_WORKERS: '0' }, label: 'insights-provider' });
  try {
    const ctx = makeContext(rc.opts, target, rc.adminKey);
    const key = await createEvalKey(ctx);
    await ctx.api('POST', '/api/flags', { name: 'bench-split', project: 'default', type: 'boolean', variants: [{ key: 'on', value: true, valueType: 'boolean' }, { key: 'off', value: false, valueType: 'boolean' }] });
    await ctx.api('POST', '/api/flags/bench-split/configs', {
      stage: 'production',
      enabled: true,
      defaultVariantKey: 'off',
      rolloutPercentage: 100,
      rules: [{ id: 'paid', priority: 1, conditions: [{ field: 'plan', operator: 'in', value: ['pro', 'team'] }], allocations: [{ variantKey: 'on', percentage: 50 }, { variantKey: 'off', percentage: 50 }] }],
    });
    const { VexilProvider } = await import(pathToFileURL(BUNDLE).href);
    const providers = [
      new VexilProvider({ url: target.baseUrl, key, stage: 'production', metricsIntervalMs: 0 }),
      new VexilProvider({ url: target.baseUrl, key, stage: 'production', metricsIntervalMs: 30_000 }),
    ];
    for (const p of providers) await p.initialize();
    const contexts = Array.from({ length: 1000 }, (_, i) => ({ targetingKey: `user-${i}`, plan: 'pro' }));
    const sec = Number(process.env.VEXIL_BENCH_PROVIDER_SEC ?? '0.5');
    if (!(sec > 0 && sec <= 60)) throw new Error(`VEXIL_BENCH_PROVIDER_SEC needs seconds in (0, 60], got ${process.env.VEXIL_BENCH_PROVIDER_SEC}`);
    // Resolves per side, warm-up included (what counting on must have counted).
    const resolves = [0, 0];
    const next = [0, 0];
    const side =
      (k: 0 | 1): Side =>
      (s) => {
        const p = providers[k];
        const r = timedRound(s, () => {
          let i = next[k];
          for (let j = 0; j < PROVIDER_BATCH; j++, i++) sunk.n += p.resolve('bench-split', false, contexts[i % contexts.length], 'boolean').variant === 'on' ? 1 : 0;
          next[k] = i;
          return PROVIDER_BATCH;
        });
        resolves[k] += r.evaluations;
        return r;
      };
    const { cpu, wall } = await pairedRounds([side(0), side(1)], pairs, sec);
    // The last counts go to the node at close (counting on), as `metricsSent`.
    for (const p of providers) await p.onClose();
    return providerRow(cpu, wall, sec, resolves, providers);
  } finally {
    await target.stop();
  }
}

/** The `insights-provider` row from its pairs, and the check that counting on counted every resolve of its side and off none. */
export function providerRow(pairs: EnginePair[], wall: EnginePair[], sec: number, resolves: readonly number[], [off, on]: readonly ProviderCounts[]): Measurement {
  const { notes, versus, extra } = pairedCostRow('provider.resolve (counting off)', 'resolve', 'a resolve', pairs, wall);
  const row: Measurement = {
    name: 'insights-provider',
    description:
      `provider.resolve (a 50/50 split rule), in the runner's thread, by CPU time: counting on (metricsIntervalMs 30 s) ÷ off (metricsIntervalMs 0), ` +
      slicedPairs(pairs.length, sec),
    status: 'ok',
    versus,
    notes: [
      notes.cpu,
      `${notes.cost}; aim ≥ 97 %`,
      notes.wall,
      `counted ${on.metricsSent} of ${resolves[1]} resolves (sent to the node; dropped ${on.metricsDropped}); counting off: sent ${off.metricsSent}, dropped ${off.metricsDropped} of ${resolves[0]}`,
    ],
    extra,
  };
  if (on.metricsSent !== resolves[1] || on.metricsDropped !== 0 || off.metricsSent !== 0 || off.metricsDropped !== 0) {
    row.status = 'failed';
    row.error = `counting on sent ${on.metricsSent} of ${resolves[1]} resolves (dropped ${on.metricsDropped}), counting off ${off.metricsSent} (dropped ${off.metricsDropped}) (want all, and none)`;
  }
  return row;
}

export const insights: CustomScenario = {
  name: 'insights',
  description:
    'The cost of counting every evaluation per flag (docs/insights.md): REST, OFREP bulk and 100-alias GraphQL with counting on against ' +
    'VEXIL_INSIGHTS=off, provider.resolve with counting on against metricsIntervalMs 0, and in the runner OFREP bulk\'s and a single ' +
    'evaluation\'s engine work with the node\'s counters with insights against without; interleaved pairs (aim ≥ 97 %).',
  async run(rc) {
    const pairs = rc.opts.pairs ?? 5;
    const only = process.env.VEXIL_BENCH_INSIGHTS?.split(',').filter(Boolean);
    // Checked before anything runs.
    const sec = Number(process.env.VEXIL_BENCH_ENGINE_SEC ?? '0.5');
    if (!(sec > 0 && sec <= 60)) throw new Error(`VEXIL_BENCH_ENGINE_SEC needs seconds in (0, 60], got ${process.env.VEXIL_BENCH_ENGINE_SEC}`);
    const rows: Measurement[] = [];
    for (const { key, c } of comparisons()) {
      if (only !== undefined && !only.includes(key)) continue;
      log(`${c.name}: ${c.what}`);
      rows.push(await compare(rc, c, pairs));
    }
    if (only === undefined || only.includes('provider')) {
      log('insights-provider: provider.resolve, counting on against off');
      rows.push(await providerPair(rc, pairs * 2));
    }
    if (only === undefined || only.includes('engine')) {
      rows.push(...(await engineRows({ pairs: pairs * 2, sec, batch: rc.opts.batch, earlier: [...rc.rows, ...rows] })));
    }
    return rows;
  },
};
