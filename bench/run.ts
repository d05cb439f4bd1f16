/**
 * Vexil benchmark runner (`npm run bench`).
 *
 *   node dist/bench/run.js [--duration 5] [--connections 50] [--flags 10]
 *     [--scenario default|all|NAME[,NAME…]] [--skip NAME[,…]] [--nodes 2] …  (see usage())
 *
 * 1. Starts bench/bare-server (a bare uWebSockets.js endpoint) and measures it: the baseline of
 *    every ratio of the run.
 * 2. Load scenarios (scenarios.ts): a fresh service (copy of a bootstrapped PGlite template, rate
 *    limits lifted), seeded through the REST API, one request checked, warmed up, measured; the
 *    REST ones once more at a fixed rate of --paced-fraction × their measured req/s.
 * 3. Custom scenarios (custom-scenario.ts; registry.ts lists them): flag-count scaling, snapshot
 *    build, propagation across nodes (suites.ts), and the ones with files of their own.
 * Server processes are pinned to CPU 0 and the load generator (a child `node dist/bench/load.js
 * --json`) to CPU 1 when taskset is available. Prints one markdown table and the targets, and
 * writes bench/results/<timestamp>.{json,md}.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import {
  ADMIN_KEY,
  BARE_KEY,
  LOAD_CPUS,
  SERVER_CPUS,
  log,
  makeContext,
  measure,
  quietest,
  removeTemplate,
  setRatio,
  setVersus,
  startBare,
  startService,
  tempDirs,
  workersLabel,
  type Measurement,
} from './harness.js';
import { canPin, killAllChildren, machineInfo } from './proc.js';
import { loadNativeUws } from '../src/http/uws.js';
import { parseArgs, type RunOptions } from './options.js';
import { isCustom } from './registry.js';
import { NotAvailable, scenarioEnv, type LoadRequest, type Scenario, type Target } from './scenario-types.js';
import { EVAL_BODY, EVAL_PATH, expectVariantOn } from './scenarios.js';
// ----------------------------------------------------------------- reporting

const fmt = (n: number | undefined, digits = 2): string => (n === undefined || !Number.isFinite(n) ? '-' : n.toFixed(digits));
const pctCell = (n: number | undefined): string => (n === undefined || !Number.isFinite(n) ? '-' : `${(n * 100).toFixed(0)}%`);
const cell = (s: string): string => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');

const HEAD =
  '| scenario | eval workers | req/s | evals/s | p50 ms | p99 ms | p99.9 ms | non-2xx | errors | ratio to bare | CPU µs/req | CPU/req vs bare | ' +
  'server CPU | generator CPU | other CPU | peak RSS MiB | bound | notes |\n' +
  '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|';

function table(rows: Measurement[]): string {
  const lines = rows.map((m) => {
    const notes = [...(m.notes ?? [])];
    if (m.status === 'failed') notes.unshift(`FAILED: ${(m.error ?? '').split('\n')[0]}`);
    if (m.status === 'not available') notes.unshift(`not available: ${(m.error ?? '').split('\n')[0]}`);
    const l = m.load;
    const s = m.server;
    const evals = l && m.evaluationsPerRequest !== undefined ? (l.rps * m.evaluationsPerRequest).toFixed(0) : l ? l.rps.toFixed(0) : '-';
    const c = [
      m.name,
      m.evalWorkers ?? '-',
      l ? l.rps.toFixed(0) : '-',
      evals,
      l ? fmt(l.latencyMs.p50, 3) : '-',
      l ? fmt(l.latencyMs.p99, 3) : '-',
      l ? fmt(l.latencyMs.p999, 3) : '-',
      l ? String(l.non2xx) : '-',
      l ? String(l.errors) : '-',
      fmt(m.ratio?.rps, 3),
      fmt(s?.cpuUsPerRequest, 1),
      fmt(m.ratio?.cpuPerRequest, 2),
      s ? s.cpuPerNode.map(pctCell).join('+') : '-',
      l ? pctCell(l.generatorCpu.utilization) : '-',
      pctCell(m.otherCpu?.utilization),
      s ? s.peakRssMiB.map((r) => fmt(r, 0)).join('+') : '-',
      m.bound ?? '-',
      notes.join('; '),
    ];
    return `| ${c.map(cell).join(' | ')} |`;
  });
  return [HEAD, ...lines].join('\n');
}

interface TargetCheck {
  target: string;
  figure: string;
  met: boolean | undefined;
}

/** ", noisy: other CPU 85 %" when the machine was busy during a row's measurement. */
const noise = (...rs: Array<Measurement | undefined>): string => {
  const worst = Math.max(...rs.map((r) => r?.otherCpu?.utilization ?? 0));
  const spread = Math.max(...rs.map((r) => (r?.name === 'bare-uws' ? Number(r.extra?.spread ?? 0) : 0)));
  return (worst > 0.2 ? ` (noisy: other CPU up to ${(worst * 100).toFixed(0)} %)` : '') +
    (spread > 0.1 ? ` (baseline drifted ${(spread * 100).toFixed(0)} % between start and end)` : '');
};

function targets(rows: Measurement[], opts: RunOptions): TargetCheck[] {
  const bare = rows.find((r) => r.name === 'bare-uws');
  const by = (name: string): Measurement | undefined => rows.find((r) => r.name === name && r.status === 'ok');
  const out: TargetCheck[] = [];
  const front = by('rest-front');
  const pool = by('rest-pool');
  if (front?.ratio || pool?.ratio) {
    const best = [front, pool].filter((r) => r?.ratio).sort((x, y) => y!.ratio!.rps - x!.ratio!.rps)[0]!;
    out.push({
      target: 'REST ≥ 70 % of bare req/s in the faster mode',
      figure: `${best.name} ${fmt(best.ratio!.rps * 100, 1)} %` +
        `${front?.ratio && pool?.ratio ? ` (rest-front ${fmt(front.ratio.rps * 100, 1)} %, rest-pool ${fmt(pool.ratio.rps * 100, 1)} %)` : ''}${noise(bare, front, pool)}`,
      met: best.ratio!.rps >= 0.7,
    });
  }
  if (pool?.ratio) {
    out.push({ target: 'REST ≥ 50 % of bare req/s with the pool', figure: `rest-pool ${fmt(pool.ratio.rps * 100, 1)} %${noise(bare, pool)}`, met: pool.ratio.rps >= 0.5 });
  }
  const floor = rows.find((x) => x.name === 'bare-uws@paced' && x.load);
  for (const r of rows.filter((x) => x.name.endsWith('@paced') && x !== floor && x.status === 'ok' && x.load)) {
    out.push({
      target: `p99 < 2 ms at ${fmt(opts.pacedFraction * 100, 0)} % of max rate (${r.name.replace('@paced', '')})`,
      figure: `p99 ${fmt(r.load!.latencyMs.p99, 3)} ms at ${r.load!.rps.toFixed(0)} req/s${noise(r)}` +
        (floor ? ` (bare-uws@paced: p99 ${fmt(floor.load!.latencyMs.p99, 3)} ms)` : ''),
      met: r.load!.latencyMs.p99 < 2,
    });
  }
  const batch = by('graphql-batch');
  if (batch?.load && batch.evaluationsPerRequest !== undefined) {
    const evals = batch.load.rps * batch.evaluationsPerRequest;
    out.push({
      target: `${batch.evaluationsPerRequest}-alias GraphQL batch ≥ 500,000 evaluations/s`,
      figure: `${evals.toFixed(0)} evaluations/s (${batch.load.rps.toFixed(0)} req/s)${noise(batch)}`,
      met: batch.evaluationsPerRequest >= 100 ? evals >= 500_000 : undefined,
    });
  }
  const ofrep = by('ofrep-eval');
  if (ofrep?.load && front?.load) {
    const r = ofrep.load.rps / front.load.rps;
    const cpu = ofrep.server && front.server ? front.server.cpuUsPerRequest / ofrep.server.cpuUsPerRequest : NaN;
    out.push({ target: 'OFREP single ≥ 90 % of REST evaluation req/s (both on the front thread)', figure: `ofrep-eval ${fmt(r * 100, 1)} % of rest-front req/s; by server CPU per request ${fmt(cpu * 100, 1)} %${noise(ofrep, front)}`, met: r >= 0.9 });
  }
  // Interleaved pairs (bench/paired.ts): on a shared machine the rate of one slice follows its
  // neighbours, the CPU per evaluation much less; a server-bound rate is 1 / CPU per evaluation.
  for (const p of rows.filter((x) => x.name.startsWith('paired-') && x.status === 'ok' && x.versus)) {
    const aim = (p.extra?.paired as { aim?: number } | undefined)?.aim ?? NaN;
    const implied = 1 / p.versus!.cpuPerRequest;
    out.push({
      target: `${p.description.split(':')[0]} ≥ ${fmt(aim * 100, 0)} % (interleaved pairs)`,
      figure: `median of pairs ${fmt(p.versus!.rps * 100, 1)} % of evaluations/s; by CPU per evaluation ×${fmt(p.versus!.cpuPerRequest, 2)}, that is ${fmt(implied * 100, 1)} % when the server is the bottleneck`,
      met: implied >= aim,
    });
  }
  // Front threads (bench/front-threads.ts): 2 threads against 1, median of the rounds.
  const threads2 = by('front-threads-2');
  if (threads2?.versus && threads2.status === 'ok') {
    out.push({
      target: '2 front threads: ≥ ×1.25 the throughput of 1 at ≤ ×1.15 the CPU per request',
      figure:
        `×${fmt(threads2.versus.rps, 2)} throughput, ×${fmt(threads2.versus.cpuPerRequest, 2)} CPU/request (median of rounds)` +
        (threads2.extra?.threadsIgnored ? '; this build ignores VEXIL_FRONT_THREADS (/healthz)' : ''),
      // A build that ignores VEXIL_FRONT_THREADS measures noise: no verdict.
      met: threads2.extra?.threadsIgnored ? undefined : threads2.versus.rps >= 1.25 && threads2.versus.cpuPerRequest <= 1.15,
    });
  }
  const bulk = by('ofrep-bulk');
  if (bulk?.load && bulk.evaluationsPerRequest !== undefined) {
    const evals = bulk.load.rps * bulk.evaluationsPerRequest;
    const perCpuSecond = bulk.server ? (bulk.evaluationsPerRequest / bulk.server.cpuUsPerRequest) * 1e6 : NaN;
    out.push({
      target: `OFREP bulk (${bulk.evaluationsPerRequest} flags) ≥ 500,000 flag evaluations/s on one core`,
      figure: `${evals.toFixed(0)} evaluations/s (${bulk.load.rps.toFixed(0)} req/s); ${perCpuSecond.toFixed(0)} per second of server CPU${noise(bulk)}`,
      met: evals >= 500_000,
    });
  }
  const nm = by('ofrep-304');
  if (nm?.ratio) {
    out.push({ target: 'OFREP 304 ≥ 90 % of bare req/s', figure: `ofrep-304 ${fmt(nm.ratio.rps * 100, 1)} %${noise(bare, nm)}`, met: nm.ratio.rps >= 0.9 });
  }
  const scale = rows.filter((r) => r.name.startsWith('flags-') && r.status === 'ok' && r.versus);
  const last = scale[scale.length - 1];
  if (last?.versus) {
    out.push({
      target: 'flat cost across flag counts (CPU µs/req within 10 %)',
      figure: `${last.name} ÷ ${last.versus.name}: CPU/req ×${fmt(last.versus.cpuPerRequest, 3)}, req/s ×${fmt(last.versus.rps, 3)}${noise(last, scale[0])}`,
      met: Math.abs(last.versus.cpuPerRequest - 1) <= 0.1,
    });
  }
  const snap = rows.find((r) => r.name.startsWith('snapshot-') && r.status === 'ok');
  const build = snap?.extra?.build as { buildMs: { cold: number; warmMedian: number | null }; heapMiB: { snapshot: number }; flags: number } | undefined;
  if (build) {
    out.push({
      target: `snapshot build of ${build.flags} flags < 1 s`,
      figure: `cold ${build.buildMs.cold.toFixed(0)} ms, warm ${fmt(build.buildMs.warmMedian ?? NaN, 0)} ms`,
      met: build.buildMs.cold < 1000,
    });
    out.push({ target: `snapshot of ${build.flags} flags < 300 MiB`, figure: `heap held ${build.heapMiB.snapshot.toFixed(0)} MiB`, met: build.heapMiB.snapshot < 300 });
  }
  const prop = rows.find((r) => r.name.startsWith('propagation-'));
  const pe = prop?.extra?.propagationMs as { p99: number; max: number; count: number } | undefined;
  if (prop && pe && pe.count > 0) {
    out.push({ target: 'propagation p99 < 50 ms', figure: `p99 ${fmt(pe.p99, 2)} ms, max ${fmt(pe.max, 2)} ms${noise(prop)}`, met: pe.p99 < 50 });
    const ryw = prop.extra?.readYourWrites as { pass: number; total: number } | undefined;
    if (ryw) out.push({ target: 'same-node read-your-writes 100 %', figure: `${ryw.pass}/${ryw.total}`, met: ryw.pass === ryw.total });
  } else if (prop?.status === 'skipped') {
    out.push({ target: 'propagation p99 < 50 ms', figure: 'skipped (no DATABASE_URL / NATS_URL)', met: undefined });
  }
  // Custom scenarios that check their own aims (isolation, large-org) leave them in extra.targets.
  for (const r of rows) out.push(...((r.extra?.targets as TargetCheck[] | undefined) ?? []).map((t) => ({ ...t, figure: t.figure + noise(r) })));
  return out;
}

function targetsTable(t: TargetCheck[]): string {
  if (t.length === 0) return '';
  return [
    '| target | measured | met |',
    '|---|---|---|',
    ...t.map((x) => `| ${cell(x.target)} | ${cell(x.figure)} | ${x.met === undefined ? '-' : x.met ? 'yes' : '**no**'} |`),
  ].join('\n');
}

function markdown(opts: RunOptions, startedAt: string, pinning: string, rows: Measurement[], checks: TargetCheck[]): string {
  const m = machineInfo();
  return [
    `# Vexil benchmark ${startedAt}`,
    '',
    `- machine: ${String(m.cpuModel)}, ${String(m.cpus)} CPUs, ${String(m.totalMemMiB)} MiB, node ${String(m.node)}, load average at the end ${(m.loadavg as number[]).map((x) => x.toFixed(2)).join(' ')}`,
    `- generator: ${opts.engine}, ${opts.connections} connections, pipelining ${opts.pipelining}, ` +
      `${opts.durationSec} s measured after ${opts.warmupSec} s warm-up; paced re-runs at ${opts.pacedFraction} × max`,
    `- pinning: ${pinning}`,
    `- flags seeded: ${opts.flags} (load scenarios); scaling: ${opts.scaleFlags.join(', ')}; snapshot: ${opts.snapshotFlags}`,
    '',
    table(rows),
    '',
    targetsTable(checks),
    '',
    '`ratio to bare` = req/s ÷ bare req/s; `CPU/req vs bare` = server CPU µs per request ÷ the bare server\'s (both from ' +
      'this run). `server CPU` is utime+stime of each node\'s process tree over the measured run ÷ its duration (100% = one ' +
      'core; `a+b` per node). `other CPU` is what the rest of the machine used meanwhile: above ~20% the figures are suspect. ' +
      '`bound` says which side was at ≥ 90% of its CPU. `evals/s` = req/s × evaluations per request. See docs/benchmarks.md.',
    '',
    ...rows.map((r) => `- **${r.name}** (${r.status}): ${r.description}${r.error ? `\n  - error: ${r.error.split('\n')[0]}` : ''}`),
    '',
  ].join('\n');
}

// ---------------------------------------------------------------------- main

async function runLoadScenario(opts: RunOptions, scenario: Scenario, base: Measurement | undefined, rows: Measurement[]): Promise<Measurement[]> {
  const env = scenarioEnv(scenario, opts);
  const row: Measurement = { name: scenario.name, description: scenario.description, status: 'ok', evalWorkers: workersLabel(opts, env) };
  const out = [row];
  log(`${scenario.name}: starting the service`);
  let target: Target | undefined;
  try {
    target = await (scenario.start ? scenario.start(opts, ADMIN_KEY) : startService(opts, ADMIN_KEY, { env, allowFallbackFront: scenario.fallbackFront === true }));
    const ctx = makeContext(opts, target, ADMIN_KEY);
    log(`${scenario.name}: seeding`);
    await scenario.setup(ctx);
    const req = scenario.request(ctx);
    const r = await measure(opts, target, req, { background: scenario.background ? () => scenario.background!(ctx) : undefined });
    const { background, ...measured } = r;
    Object.assign(row, measured);
    if (scenario.evaluationsPerRequest) row.evaluationsPerRequest = scenario.evaluationsPerRequest(opts);
    setRatio(row, base);
    if (background) {
      row.notes = [...(row.notes ?? []), ...background.notes];
      row.extra = { ...(row.extra ?? {}), ...background.extra };
      // Against the plain REST row of the same evaluation mode, when this run measured one.
      const same = rows.find((x) => x.status === 'ok' && ['rest-front', 'rest-pool', 'rest-eval'].includes(x.name) &&
        x.evalWorkers?.split(' ')[0] === row.evalWorkers?.split(' ')[0]);
      setVersus(row, same);
      if (row.versus) row.notes.unshift(`req/s ×${row.versus.rps.toFixed(3)} of ${row.versus.name} (no writes)`);
    }
    if (scenario.paced && opts.pacedFraction > 0 && row.load && row.load.rps > 0) {
      const rate = Math.max(1, row.load.rps * opts.pacedFraction);
      const paced: Measurement = {
        name: `${scenario.name}@paced`,
        description: `${scenario.name} at a fixed ${rate.toFixed(0)} req/s (${opts.pacedFraction} × its measured max), latency timed from the tick that issued each request`,
        status: 'ok',
        evalWorkers: row.evalWorkers,
      };
      out.push(paced);
      try {
        Object.assign(paced, await measure(opts, target, req, { rate, warmupSec: Math.min(1, opts.warmupSec) }));
        setRatio(paced, base);
        // Its req/s is chosen, not measured: only the CPU ratio means something.
        if (paced.ratio) paced.ratio.rps = NaN;
        const p = paced.load?.paced;
        const gd = paced.load?.generatorLoopDelayMs;
        paced.notes = [`fixed rate ${rate.toFixed(0)} req/s = ${opts.pacedFraction} × ${row.load.rps.toFixed(0)}` +
          (p && p.lateStarts > 0 ? `; ${p.lateStarts} requests waited for a free connection (at most ${p.maxBacklog})` : '') +
          (gd ? `; generator event-loop delay p99 ${gd.p99.toFixed(1)} ms, max ${gd.max.toFixed(1)} ms` : '')];
      } catch (err) {
        paced.status = 'failed';
        paced.error = err instanceof Error ? err.message : String(err);
      }
    }
  } catch (err) {
    if (err instanceof NotAvailable) {
      row.status = 'not available';
      row.error = err.message;
      log(`${scenario.name}: not available: ${err.message}`);
    } else {
      row.status = 'failed';
      row.error = err instanceof Error ? err.message : String(err);
    }
  } finally {
    await target?.stop();
  }
  return out;
}

async function main(): Promise<number> {
  const opts = parseArgs(process.argv.slice(2));
  const native = loadNativeUws();
  if (!native.ok) {
    log(`no native uWebSockets.js binary loads on Node ${process.version} here (${native.reasons.join('; ')}): refusing to benchmark a fallback front`);
    return 2;
  }
  const startedAt = new Date().toISOString();
  if (opts.pin && !canPin()) {
    log('taskset unavailable or fewer than 2 CPUs: running unpinned');
    opts.pin = false;
  }
  const pinning = opts.pin
    ? `server on CPU ${SERVER_CPUS} (evaluation workers included), load generator on CPU ${LOAD_CPUS} (taskset)`
    : 'none';
  log(`${opts.engine} generator, ${opts.connections} connections, pipelining ${opts.pipelining}, ${opts.durationSec} s; pinning: ${pinning}`);
  log(`scenarios: ${opts.bareOnly ? '(bare only)' : opts.scenarios.map((s) => s.name).join(', ')}`);

  const rows: Measurement[] = [];

  // Baseline: the bare uWebSockets.js endpoint.
  const bareRow: Measurement = {
    name: 'bare-uws',
    description:
      'bench/bare-server: bare uWebSockets.js POST /flags/:name: reads the body, JSON.parse, sha256 key lookup in a Map, ' +
      'fixed JSON answer in one corked write. The baseline of every ratio.',
    status: 'ok',
  };
  rows.push(bareRow);
  /** One measurement of the bare server (started and stopped around it); `paced` also fills that row at a fixed rate. */
  const measureBare = async (paced?: Measurement): Promise<Measurement> => {
    const m: Measurement = { ...bareRow };
    let bare: Target | undefined;
    try {
      bare = await startBare(opts);
      const req: LoadRequest = {
        method: 'POST',
        path: EVAL_PATH,
        headers: { 'content-type': 'application/json', 'x-management-key': BARE_KEY },
        body: EVAL_BODY,
        expectStatus: 200,
        checkBody: expectVariantOn,
      };
      Object.assign(m, await measure(opts, bare, req));
      if (paced !== undefined && m.load && m.load.rps > 0) {
        const rate = Math.max(1, m.load.rps * opts.pacedFraction);
        try {
          Object.assign(paced, await measure(opts, bare, req, { rate, warmupSec: Math.min(1, opts.warmupSec) }));
          const gd = paced.load?.generatorLoopDelayMs;
          const p = paced.load?.paced;
          paced.notes = [`fixed rate ${rate.toFixed(0)} req/s = ${opts.pacedFraction} × ${m.load.rps.toFixed(0)}: the floor of a paced p99 on this machine` +
            (p && p.lateStarts > 0 ? `; ${p.lateStarts} requests waited for a free connection (at most ${p.maxBacklog})` : '') +
            (gd ? `; generator event-loop delay p99 ${gd.p99.toFixed(1)} ms, max ${gd.max.toFixed(1)} ms` : '')];
        } catch (err) {
          paced.status = 'failed';
          paced.error = err instanceof Error ? err.message : String(err);
        }
      }
    } catch (err) {
      m.status = 'failed';
      m.error = err instanceof Error ? err.message : String(err);
    } finally {
      await bare?.stop();
    }
    return m;
  };
  log('bare-uws: starting');
  const barePaced: Measurement | undefined = opts.pacedFraction > 0
    ? {
        name: 'bare-uws@paced',
        description: `bare-uws at a fixed ${opts.pacedFraction} × its measured req/s: what a paced p99 can be at best on this machine`,
        status: 'ok',
      }
    : undefined;
  const bareRounds = [await measureBare(barePaced)];
  Object.assign(bareRow, bareRounds[0]);
  if (barePaced !== undefined && barePaced.load !== undefined) rows.push(barePaced);
  let base = bareRow.load !== undefined && bareRow.server !== undefined && bareRow.load.rps > 0 ? bareRow : undefined;
  if (base) bareRow.ratio = { rps: 1, cpuPerRequest: 1, p99: 1 };
  if (barePaced?.load) {
    setRatio(barePaced, base);
    if (barePaced.ratio) barePaced.ratio.rps = NaN;
  }

  if (!opts.bareOnly) {
    const shared = new Map<string, unknown>();
    for (const scenario of opts.scenarios) {
      if (isCustom(scenario)) {
        log(`${scenario.name}: starting`);
        try {
          rows.push(...(await scenario.run({ opts, adminKey: ADMIN_KEY, base, rows, shared })));
        } catch (err) {
          rows.push({ name: scenario.name, description: scenario.description, status: 'failed', error: err instanceof Error ? err.message : String(err) });
        }
      } else {
        rows.push(...(await runLoadScenario(opts, scenario, base, rows)));
      }
    }
  }
  removeTemplate();

  // The baseline once more at the end; the quieter of the two is the run's baseline, and every
  // ratio is recomputed against it (a busy neighbour during the first one would skew them all).
  if (!opts.bareOnly && opts.scenarios.length > 0) {
    log('bare-uws: measuring the baseline again');
    bareRounds.push(await measureBare());
    const ok = bareRounds.filter((m) => m.status === 'ok' && m.load && m.server && m.load.rps > 0);
    if (ok.length > 0) {
      // Quiet rounds (≤ 10 % of a core elsewhere) are averaged: the machine's speed drifts over a run
      // (the same quiet bare server has measured 52k–70k req/s minutes apart), and the scenarios
      // were measured in between. Without a quiet round, the quietest one is used.
      const quiet = ok.filter((m) => (m.otherCpu?.utilization ?? Infinity) <= 0.1);
      const used = quiet.length > 0 ? quiet : [quietest(ok)];
      const first = used[0];
      const mean = (f: (m: Measurement) => number): number => used.reduce((a, m) => a + f(m), 0) / used.length;
      const rps = mean((m) => m.load!.rps);
      const cpuUs = mean((m) => m.server!.cpuUsPerRequest);
      Object.assign(bareRow, {
        load: { ...first.load!, rps },
        server: { ...first.server!, cpuUsPerRequest: cpuUs, cpuUtilization: mean((m) => m.server!.cpuUtilization), cpuPerNode: [mean((m) => m.server!.cpuUtilization)] },
        otherCpu: { utilization: Math.max(...used.map((m) => m.otherCpu?.utilization ?? 0)), irqUtilization: first.otherCpu?.irqUtilization ?? NaN },
        bound: first.bound,
        status: 'ok',
        error: undefined,
      });
      const spread = used.length > 1 ? (Math.max(...used.map((m) => m.load!.rps)) - Math.min(...used.map((m) => m.load!.rps))) / rps : 0;
      bareRow.notes = [
        `baseline = ${used.length > 1 ? 'mean of ' : ''}${used.map((m) => (bareRounds.indexOf(m) === 0 ? 'start' : 'end')).join(' and ')} ` +
          `(req/s and CPU µs/req; latencies from the ${bareRounds.indexOf(first) === 0 ? 'start' : 'end'}): ` +
          bareRounds.map((m) => `${bareRounds.indexOf(m) === 0 ? 'start' : 'end'} ${m.load ? m.load.rps.toFixed(0) : 'failed'} req/s` +
            `${m.server ? `, ${m.server.cpuUsPerRequest.toFixed(1)} µs/req` : ''} at other CPU ${((m.otherCpu?.utilization ?? NaN) * 100).toFixed(0)}%`).join(' / ') +
          (spread > 0.1 ? `; the two differ by ${(spread * 100).toFixed(0)} %: ratios are uncertain by about half that` : ''),
      ];
      bareRow.extra = {
        rounds: bareRounds.map((m) => ({ load: m.load, server: m.server, otherCpu: m.otherCpu, bound: m.bound, error: m.error })),
        baselineRounds: used.map((m) => bareRounds.indexOf(m)),
        spread,
      };
      base = bareRow;
      bareRow.ratio = { rps: 1, cpuPerRequest: 1, p99: 1 };
      for (const r of rows) {
        if (r === bareRow || !r.load || !r.server) continue;
        setRatio(r, base);
        if (r.bound === 'paced' && r.ratio) r.ratio.rps = NaN;
      }
    }
  }

  const checks = targets(rows, opts);
  const md = markdown(opts, startedAt, pinning, rows, checks);
  process.stdout.write(`\n${table(rows)}\n\n${targetsTable(checks)}\n\n`);
  for (const r of rows) {
    if (r.status === 'failed') process.stderr.write(`\n[bench] ${r.name} FAILED:\n${r.error ?? ''}\n`);
    if (r.otherCpu !== undefined && r.otherCpu.utilization > 0.2) {
      process.stderr.write(
        `[bench] warning: ${r.name}: ${(r.otherCpu.utilization * 100).toFixed(0)}% of a core went to other work during the run; the machine was not quiet\n`,
      );
    }
    if (r.bound === 'generator') process.stderr.write(`[bench] warning: ${r.name} was limited by the load generator, not the server\n`);
  }

  mkdirSync(opts.outDir, { recursive: true });
  const stamp = startedAt.replace(/[:.]/g, '-');
  const json = {
    startedAt,
    finishedAt: new Date().toISOString(),
    machine: machineInfo(),
    options: { ...opts, scenarios: opts.scenarios.map((s) => s.name) },
    pinning,
    baseline: 'bare-uws',
    results: rows,
    targets: checks,
  };
  const jsonPath = path.join(opts.outDir, `${stamp}.json`);
  writeFileSync(jsonPath, `${JSON.stringify(json, null, 2)}\n`);
  writeFileSync(path.join(opts.outDir, `${stamp}.md`), md);
  log(`results: ${path.relative(process.cwd(), jsonPath)} (+ .md)`);
  return rows.some((r) => r.status === 'failed') ? 1 : 0;
}

function cleanup(): void {
  killAllChildren();
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
  tempDirs.clear();
}
process.once('SIGINT', () => {
  cleanup();
  process.exit(130);
});
process.once('SIGTERM', () => {
  cleanup();
  process.exit(143);
});
process.once('exit', cleanup);

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`[bench] ${err instanceof Error ? err.message : String(err)}\n`);
    cleanup();
    process.exit(2);
  },
);
