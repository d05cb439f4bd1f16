/**
 * `npm run bench -- abuse` (docs/limits.md, "Benchmark: a valid key under attack"): the REST
 * evaluation rate and p99 of a valid key while the same node is attacked, against the same run
 * without an attack:
 *
 * - `abuse-none`: no attack (the reference of this scenario's rows);
 * - `abuse-keys`: a flood of random 64-hex keys (the failed-authentication budget answers 429
 *   without a key lookup after the first 50 per second);
 * - `abuse-deep`: evaluations whose context is 100,000 levels deep (400 at the context limit);
 * - `abuse-aliases`: GraphQL documents of 5,000 `flags { name }` aliases, each one new (refused on
 *   their tokens by the field limit, before parse and validation).
 *
 * The attacker is a child process (bench/attacker.ts) pinned with the load generator to CPU 1, never
 * on the server's CPU 0, on raw keep-alive connections (`VEXIL_BENCH_ABUSE_CONCURRENCY`, 16) at a
 * fixed `VEXIL_BENCH_ABUSE_RATE` (500 requests/s; 0: as fast as it is answered); its statuses are
 * in the row's notes. Aim: ≥ 80 % of the unattacked req/s, p99 < 3×.
 */
import path from 'node:path';
import {
  LOAD_CPUS,
  ROOT,
  log,
  makeContext,
  measure,
  startService,
  workersLabel,
  type Measurement,
} from './harness.js';
import { ATTACKS } from './attacker.js';
import { startChild } from './proc.js';
import type { CustomScenario } from './custom-scenario.js';
import type { Background, HarnessOptions } from './scenario-types.js';
import { createEvalKey, restEvalRequest, seedBooleanFlags } from './scenarios.js';

/**
 * The attacker: a child process (bench/attacker.ts) pinned to the load generator's CPU, so that on a
 * two-core machine it never takes the server's core; its requests cost the server what they cost,
 * and its own CPU shows up as the generator's neighbour (the row's generator CPU and `bound`).
 */
function attacker(opts: HarnessOptions, baseUrl: string, attack: string, keys: { attacker: string; reader: string }, concurrency: number, rate: number): Background {
  const child = startChild('attacker', process.execPath, [path.join(ROOT, 'dist', 'bench', 'attacker.js'), JSON.stringify({ baseUrl, attack, keys, concurrency, rate })], {
    cpus: opts.pin ? LOAD_CPUS : undefined,
  });
  return {
    async stop() {
      const result = child.waitForLine(/^\{.*\}$/, 20_000);
      child.proc.kill('SIGTERM');
      const r = JSON.parse((await result)[0]) as { sent: number; rate: number; skipped: number; statuses: Record<string, number>; cpuSec: number };
      await child.exited;
      return {
        notes: [`attack: ${r.sent} requests at ${r.rate.toFixed(0)}/s (${r.skipped} not sent: no idle connection), statuses ${JSON.stringify(r.statuses)}, attacker CPU ${r.cpuSec.toFixed(2)} s`],
        extra: { attack: r },
      };
    },
  };
}

export const abuse: CustomScenario = {
  name: 'abuse',
  description:
    'REST evaluation throughput and p99 of a valid key while (a) random keys, (b) 100,000-deep contexts, (c) new 5,000-alias GraphQL ' +
    'documents hit the same node, each versus the unattacked run (abuse-none). Aim: ≥ 0.8× req/s, p99 < 3×.',
  async run(rc) {
    const { opts } = rc;
    const rows: Measurement[] = [];
    const target = await startService(opts, rc.adminKey, { label: 'abuse' });
    try {
      const ctx = makeContext(opts, target, rc.adminKey);
      await seedBooleanFlags(ctx, Math.max(1, opts.flags));
      const victim = await createEvalKey(ctx);
      const keys = { attacker: await createEvalKey(ctx), reader: (await ctx.api<{ key: string }>('POST', '/api/keys', { name: 'reader', permissions: ['CanRead'] }, { expect: 201 })).key };
      const concurrency = Number(process.env.VEXIL_BENCH_ABUSE_CONCURRENCY ?? '16');
      const rate = Number(process.env.VEXIL_BENCH_ABUSE_RATE ?? '500');
      let reference: Measurement | undefined;
      for (const attack of ATTACKS) {
        log(`${attack.name}: ${attack.description}`);
        const row: Measurement = { name: attack.name, description: attack.description, status: 'ok', evalWorkers: workersLabel(opts) };
        const m = await measure(opts, target, restEvalRequest(victim), attack.name === 'abuse-none' ? {} : { background: () => attacker(opts, target.baseUrl, attack.name, keys, concurrency, rate) });
        Object.assign(row, { load: m.load, server: m.server, bound: m.bound, otherCpu: m.otherCpu });
        if (m.background) {
          row.notes = [...m.background.notes];
          row.extra = m.background.extra;
        }
        if (reference === undefined) reference = row;
        else if (reference.load && row.load) {
          row.versus = { name: reference.name, rps: row.load.rps / reference.load.rps, cpuPerRequest: (row.server?.cpuUsPerRequest ?? NaN) / (reference.server?.cpuUsPerRequest ?? NaN) };
          const p99 = row.load.latencyMs.p99 / reference.load.latencyMs.p99;
          (row.notes ??= []).push(`valid key: ${(row.versus.rps * 100).toFixed(0)} % of unattacked req/s, p99 ×${p99.toFixed(2)} (aim ≥ 80 %, < 3×)`);
        }
        rows.push(row);
      }
    } finally {
      await target.stop();
    }
    return rows;
  },
};
