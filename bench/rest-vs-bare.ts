/**
 * `npm run bench -- rest-vs-bare` (issue 28, item 3): Vexil's REST evaluation against the bare
 * uWebSockets.js endpoint (bench/bare-server.ts: read the body, JSON.parse, hash the key the way
 * Vexil does and look it up in a Map, fixed reply), in the same run, as interleaved pairs. Both
 * servers run side by side pinned to the server CPU, the load generator on the other one; slices
 * alternate bare, Vexil, Vexil, bare… so each pair shares its minute's neighbours. The figure is
 * the median of the pairs' ratios (req/s of Vexil ÷ bare; aim ≥ 0.70), with its spread, and the
 * server CPU per request of both beside it.
 *
 * Vexil runs `rest-front` (VEXIL_EVAL_WORKERS=0: the whole request on the front thread), the same
 * body, path and connection count as the bare side. `--pairs N` (or VEXIL_BENCH_PAIRS; default 5),
 * `--duration` seconds per slice.
 */
import { BARE_KEY, median, startBare, startService, makeContext, type Measurement } from './harness.js';
import type { CustomScenario } from './custom-scenario.js';
import { alternate, type PairSide } from './paired.js';
import { scenarioEnv } from './scenario-types.js';
import type { Target } from './scenario-types.js';
import { restEvalRequest, SCENARIOS } from './scenarios.js';

const AIM = 0.7;

const spread = (xs: number[], d = 0): string => {
  const sorted = [...xs].sort((a, b) => a - b);
  return `median ${median(xs).toFixed(d)} (${sorted[0].toFixed(d)}–${sorted[sorted.length - 1].toFixed(d)})`;
};

export const restVsBare: CustomScenario = {
  name: 'rest-vs-bare',
  description:
    'Vexil REST evaluation (rest-front: VEXIL_EVAL_WORKERS=0) against the bare uWebSockets.js endpoint in interleaved pairs in the same run: ' +
    'req/s and server CPU µs per request of both, and the median ratio with its spread (aim ≥ 0.70 of bare req/s; issue 28).',
  async run(rc) {
    const pairs = rc.opts.pairs ?? 5;
    const rest = SCENARIOS.find((s) => s.name === 'rest-front');
    if (rest === undefined) throw new Error('rest-vs-bare: no rest-front scenario');
    const row: Measurement = {
      name: 'rest-vs-bare',
      description: `rest-front ÷ bare-uws, ${pairs} interleaved pairs of ${rc.opts.durationSec} s`,
      status: 'ok',
      evalWorkers: '0',
    };
    const targets: Target[] = [];
    try {
      const bare = await startBare(rc.opts);
      targets.push(bare);
      const service = await startService(rc.opts, rc.adminKey, { label: 'rest-vs-bare', env: scenarioEnv(rest, rc.opts) });
      targets.push(service);
      const ctx = makeContext(rc.opts, service, rc.adminKey);
      await rest.setup(ctx);
      const sides: [PairSide, PairSide] = [
        { name: 'bare-uws', target: bare, request: restEvalRequest(BARE_KEY), evals: 1 },
        { name: 'rest-front', target: service, request: rest.request(ctx), evals: 1, ownPid: service.pids[0] },
      ];
      const f = await alternate(rc, 'rest-vs-bare', sides, pairs);
      const r = median(f.ratios);
      row.versus = { name: 'bare-uws', rps: r, cpuPerRequest: median(f.cpuRatios) };
      row.notes = [
        `rest-front ÷ bare-uws req/s: ${spread(f.ratios, 3)} over ${pairs} pairs; aim ≥ ${AIM.toFixed(2)}`,
        `CPU per request, rest-front ÷ bare-uws: ${spread(f.cpuRatios, 2)}`,
        `bare-uws: req/s ${spread(f.rps[0])}; server CPU µs/request ${spread(f.cpu[0], 1)}`,
        `rest-front: req/s ${spread(f.rps[1])}; server CPU µs/request ${spread(f.cpu[1], 1)}, of which the front process ` +
          `(not the management actor's process) ${spread(f.ownCpu[1], 1)}`,
        `when the server's CPU is the bottleneck, rest-front reaches ${(100 / median(f.cpuRatios)).toFixed(1)} % of bare-uws (1 ÷ the CPU ratio)`,
      ];
      row.extra = { paired: { aim: AIM, ratios: f.ratios, cpuRatios: f.cpuRatios, bare: { rps: f.rps[0], cpuUsPerRequest: f.cpu[0] }, rest: { rps: f.rps[1], cpuUsPerRequest: f.cpu[1], frontProcessCpuUsPerRequest: f.ownCpu[1] } } };
    } finally {
      for (const t of targets) await t.stop();
    }
    return [row];
  },
};
