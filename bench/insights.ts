/**
 * `npm run bench -- insights` (docs/insights.md, "Cost on the hot path"): what counting every
 * evaluation per flag costs (CONTRACT 18: at most 3 %), as interleaved A/B pairs (paired.ts): the
 * same scenario with VEXIL_INSIGHTS=off (A, the baseline) and with counting on (B, the default),
 * for REST (`rest-front`), OFREP bulk (`ofrep-bulk`) and the 100-alias GraphQL batch
 * (`graphql-batch-front`); every front thread the service runs counts (one under --pin). Then the
 * in-process provider: `provider.resolve` with counting off (metricsIntervalMs 0) against on
 * (the default), rounds of VEXIL_BENCH_PROVIDER_SEC (0.5) s alternating, in this process.
 *
 * Last, in the runner's thread (insights-engine.ts): what counting adds to the evaluation work
 * itself, without HTTP: OFREP bulk's `bulkAnswers` and single `runEvaluation`s with the node's
 * counters with insights against without, twice the pair count of pairs of VEXIL_BENCH_ENGINE_SEC
 * (0.5) s a side in alternating 5 ms slices, by CPU time; ns per evaluation, and the cost as a share of the engine-only evaluation
 * and of the HTTP rows' server CPU per request measured before it in the same run.
 *
 * `--pairs N` (or VEXIL_BENCH_PAIRS; 5) pairs per comparison, and provider rounds of each side;
 * `VEXIL_BENCH_INSIGHTS=rest,bulk,graphql,provider,engine` picks.
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { CustomScenario } from './custom-scenario.js';
import { ROOT, log, makeContext, median, startService, type Measurement } from './harness.js';
import { engineRows } from './insights-engine.js';
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

/** Evaluations per second of `fn` over one round of `sec` seconds. */
function round(sec: number, fn: (i: number) => unknown): number {
  let n = 0;
  const t0 = performance.now();
  const end = t0 + sec * 1000;
  while (performance.now() < end) {
    for (let i = 0; i < 1000; i++) fn(i);
    n += 1000;
  }
  return n / ((performance.now() - t0) / 1000);
}

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
    const off = new VexilProvider({ url: target.baseUrl, key, stage: 'production', metricsIntervalMs: 0 });
    const on = new VexilProvider({ url: target.baseUrl, key, stage: 'production', metricsIntervalMs: 30_000 });
    await off.initialize();
    await on.initialize();
    const contexts = Array.from({ length: 1000 }, (_, i) => ({ targetingKey: `user-${i}`, plan: 'pro' }));
    const sec = Number(process.env.VEXIL_BENCH_PROVIDER_SEC ?? '0.5');
    const rounds: [number[], number[]] = [[], []];
    const ratios: number[] = [];
    // Warm both first.
    round(0.2, (i) => off.resolve('bench-split', false, contexts[i], 'boolean'));
    round(0.2, (i) => on.resolve('bench-split', false, contexts[i], 'boolean'));
    for (let p = 0; p < pairs * 2; p++) {
      const order = p % 2 === 0 ? [0, 1] : [1, 0];
      const got: number[] = [];
      for (const k of order) got[k] = round(sec, (i) => (k === 0 ? off : on).resolve('bench-split', false, contexts[i], 'boolean'));
      rounds[0].push(got[0]);
      rounds[1].push(got[1]);
      ratios.push(got[1] / got[0]);
    }
    await on.onClose();
    await off.onClose();
    const r = median(ratios);
    const f0 = (x: number) => x.toFixed(0);
    return {
      name: 'insights-provider',
      description: `provider.resolve (a 50/50 split rule), counting on (default) ÷ off (metricsIntervalMs 0), ${ratios.length} interleaved rounds of ${sec} s in the runner`,
      status: 'ok',
      versus: { name: 'provider.resolve (counting off)', rps: r, cpuPerRequest: NaN },
      notes: [
        `counting on ÷ off: median ${(r * 100).toFixed(1)} % of evaluations/s (rounds: ${ratios.map((x) => (x * 100).toFixed(1)).join(', ')} %); aim ≥ 97 %`,
        `off: ${rounds[0].map(f0).join(', ')} /s; on: ${rounds[1].map(f0).join(', ')} /s; sent ${on.metricsSent}, dropped ${on.metricsDropped}`,
      ],
      extra: { paired: { aim: 0.97, ratios, a: { name: 'counting off', rps: rounds[0] }, b: { name: 'counting on', rps: rounds[1] } } },
    };
  } finally {
    await target.stop();
  }
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
      rows.push(await providerPair(rc, pairs));
    }
    if (only === undefined || only.includes('engine')) {
      rows.push(...(await engineRows({ pairs: pairs * 2, sec, batch: rc.opts.batch, earlier: [...rc.rows, ...rows] })));
    }
    return rows;
  },
};
