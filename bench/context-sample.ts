/**
 * `npm run bench -- context-sample` (docs/change-requests.md, "Sampled contexts"): what keeping
 * evaluated contexts for previews costs evaluation, as interleaved A/B pairs (paired.ts): REST
 * evaluation (`rest-front`) with VEXIL_CONTEXT_SAMPLE unset (A, the default: off) against
 * VEXIL_CONTEXT_SAMPLE=100 (B). Off must cost nothing measurable (one predictable branch); this
 * row shows what turning it on costs.
 *
 * `--pairs N` (or VEXIL_BENCH_PAIRS; 5) pairs; `VEXIL_BENCH_SAMPLE_N` the N of side B (100).
 */
import type { CustomScenario } from './custom-scenario.js';
import { log } from './harness.js';
import { compare, scenario } from './paired.js';
import { scenarioEnv, type Scenario } from './scenario-types.js';

const sampling = (s: Scenario, n: number | null): Scenario => ({
  ...s,
  name: `${s.name} (VEXIL_CONTEXT_SAMPLE ${n === null ? 'unset' : n})`,
  env: (opts) => {
    const env = { ...scenarioEnv(s, opts) };
    delete env.VEXIL_CONTEXT_SAMPLE;
    return n === null ? env : { ...env, VEXIL_CONTEXT_SAMPLE: String(n) };
  },
});

export const contextSample: CustomScenario = {
  name: 'context-sample',
  description:
    'The cost of sampling evaluated contexts for change-request previews (docs/change-requests.md): REST evaluation with ' +
    'VEXIL_CONTEXT_SAMPLE unset against =100; interleaved pairs.',
  async run(rc) {
    const pairs = rc.opts.pairs ?? 5;
    const n = Number(process.env.VEXIL_BENCH_SAMPLE_N ?? '100');
    const rest = scenario('rest-front');
    const c = { name: 'context-sample-rest', aim: 0.97, what: `REST evaluation, VEXIL_CONTEXT_SAMPLE=${n} against unset`, a: sampling(rest, null), b: sampling(rest, n) };
    log(`${c.name}: ${c.what}`);
    return [await compare(rc, c, pairs)];
  },
};
