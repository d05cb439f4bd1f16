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
  ROOT,
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
import { ALL_SCENARIOS, isCustom, type AnyScenario } from './registry.js';
import { NotAvailable, scenarioEnv, type HarnessOptions, type LoadRequest, type Scenario, type Target } from './scenario-types.js';
import { EVAL_BODY, EVAL_PATH, expectVariantOn } from './scenarios.js';
/** What `npm run bench` runs without --scenario: everything but the legacy `rest-eval` (rest-front/rest-pool cover it). */
const DEFAULT_SCENARIOS = ['rest-front', 'rest-pool', 'graphql-eval', 'graphql-batch', 'graphql-batch-front', 'mixed', 'ofrep-eval', 'ofrep-bulk', 'ofrep-304', 'flags-scaling', 'snapshot', 'propagation'];

interface RunOptions extends HarnessOptions {
  scenarios: AnyScenario[];
  bareOnly: boolean;
  outDir: string;
}

// ----------------------------------------------------------------- options

function usage(): string {
  return [
    'usage: node dist/bench/run.js [options]',
    '  --duration SEC         measured seconds per load run (5)',
    '  --warmup SEC           unmeasured load before each measurement (2)',
    '  --connections N        concurrent keep-alive connections (50)',
    '  --flags N              boolean flags seeded for the load scenarios (10)',
    '  --scenario LIST        comma-separated names, "default" or "all" (default); a bare name works too (npm run bench -- abuse); known:',
    `                         ${ALL_SCENARIOS.map((s) => s.name).join(', ')}`,
    '  --skip LIST            scenarios to leave out of the selection',
    '  --pipelining N         requests in flight per connection (1)',
    '  --engine lean|autocannon  load generator (lean)',
    '  --paced-fraction F     re-measure REST scenarios at F × their max req/s, fixed rate (0.5; 0 = off)',
    '  --no-paced             same as --paced-fraction 0',
    '  --eval-workers N       VEXIL_EVAL_WORKERS for scenarios that do not fix it (service default when absent)',
    '  --pool-workers N       VEXIL_EVAL_WORKERS of rest-pool (2)',
    '  --batch N              aliased evaluations per graphql-batch request (100)',
    '  --write-rate N         config upserts per second of the mixed scenario (20)',
    '  --scale-flags LIST     flag counts of flags-scaling (10,1000,100000)',
    '  --scaling-workers N    VEXIL_EVAL_WORKERS of flags-scaling and the snapshot start-up (0)',
    '  --rounds N             round-robin rounds of flags-scaling; each row keeps its quietest (2)',
    '  --snapshot-flags N     flags of the snapshot scenario (100000)',
    '  --nodes N              service nodes of the propagation scenario (2)',
    '  --changes N            config changes timed by the propagation scenario (200)',
    '  --no-pin               do not pin server/generator to CPU 0/1',
    '  --bare-only            measure the bare uWebSockets.js baseline only',
    '  --service PATH         service entry point (dist/src/main.js)',
    '  --startup-timeout SEC  how long a service may take to answer (30; 300 for seeded scaling services)',
    '  --quiet-wait SEC       before each measurement, wait up to SEC for the machine to be idle (0)',
    '  --keep-data            keep the services\' temporary data directories',
    '  --verbose              echo the children\'s output (VEXIL_BENCH_SERVER_NODE_ARGS: node flags for the service alone, e.g. --trace-gc)',
    '  --out DIR              results directory (bench/results)',
    'VEXIL_BENCH_IMAGE=<image>: every service in a podman container of that image (bench/container.ts; docs/deploy.md).',
    'propagation needs DATABASE_URL and NATS_URL in the environment (skipped otherwise).',
    'Not in default: rest-eval, rest-node-front, rest-metrics-off, rest-segment, abuse, paired, snapshot-memory, and the two large-organization ones (3-5 minutes each on a busy 2-core VM;',
    '  run together they seed their 100,000 flags once):',
    '  isolation   evaluation p99 with and without an admin loop on a 100,000-flag node, alternating --duration slices;',
    '              VEXIL_BENCH_ISOLATION_SLICES (6) pairs, VEXIL_BENCH_ISOLATION_FRACTION (0.35) of the measured capacity or',
    '              VEXIL_BENCH_ISOLATION_RATE req/s, VEXIL_BENCH_ADMIN_PAUSE_MS (0) between admin requests',
    '  large-org   page, search, full list, GraphQL pages, the refused document (VEXIL_BENCH_LARGE_REPS, 10) and the UI',
    '              figures of bench/results/ui-100k.json (VEXIL_BENCH_UI_JSON); both: VEXIL_BENCH_ORG_FLAGS (100000)',
    '  provider    the in-process OpenFeature provider: evaluations/s on one core (resolve, resolveBooleanEvaluation,',
    '              client.getBooleanValue; median of VEXIL_BENCH_PROVIDER_ROUNDS (9) × VEXIL_BENCH_PROVIDER_SEC (0.5) s) beside REST,',
    '              paired against VEXIL_BENCH_BASE_PROVIDER=<another build\'s provider dist/index.js> when set; initialize on a',
    '              VEXIL_BENCH_ORG_FLAGS-flag feed (VEXIL_BENCH_PROVIDER_LOAD=0: left out)',
    '  saturation  management on a saturated core without CAP_SYS_NICE (bench/saturation.ts): paged reads, key creation and',
    '              the new key\'s first evaluation, scheduled changes; VEXIL_BENCH_SATURATION_READS (30), _CONNECTIONS (50), _LEAD_MS (5000)',
  ].join('\n');
}

function select(names: string): AnyScenario[] {
  if (names === 'all') return [...ALL_SCENARIOS];
  const list = names === 'default' ? DEFAULT_SCENARIOS : names.split(',').filter(Boolean);
  return list.flatMap((n) => (n === 'default' ? DEFAULT_SCENARIOS : [n])).map((name) => {
    const s = ALL_SCENARIOS.find((x) => x.name === name);
    if (s === undefined) throw new Error(`unknown scenario ${name}; known: ${ALL_SCENARIOS.map((x) => x.name).join(', ')}`);
    return s;
  });
}

function parseArgs(argv: string[]): RunOptions {
  const o: RunOptions = {
    durationSec: 5,
    connections: 50,
    pipelining: 1,
    flags: 10,
    warmupSec: 2,
    servicePath: path.join(ROOT, 'dist/src/main.js'),
    startupTimeoutSec: 30,
    evalWorkers: undefined,
    pin: true,
    verbose: false,
    keepData: false,
    engine: 'lean',
    quietWaitSec: 0,
    poolWorkers: 2,
    batch: 100,
    writeRate: 20,
    nodes: 2,
    changes: 200,
    pacedFraction: 0.5,
    scaleFlags: [10, 1000, 100_000],
    rounds: 2,
    scalingWorkers: '0',
    snapshotFlags: 100_000,
    scenarios: select('default'),
    bareOnly: false,
    outDir: path.join(ROOT, 'bench/results'),
  };
  let skip: string[] = [];
  const num = (flag: string, v: string | undefined, min: number, max = Infinity): number => {
    const n = Number(v);
    if (v === undefined || !Number.isFinite(n) || n < min || n > max) throw new Error(`${flag} needs a number in [${min}, ${max}]`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const [flag, inline] = a.startsWith('--') && a.includes('=') ? [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)] : [a, undefined];
    const val = (): string | undefined => inline ?? argv[++i];
    switch (flag) {
      case '--duration': o.durationSec = num(flag, val(), 0.1); break;
      case '--connections': o.connections = Math.floor(num(flag, val(), 1)); break;
      case '--flags': o.flags = Math.floor(num(flag, val(), 1)); break;
      case '--pipelining': o.pipelining = Math.floor(num(flag, val(), 1)); break;
      case '--warmup': o.warmupSec = num(flag, val(), 0); break;
      case '--quiet-wait': o.quietWaitSec = num(flag, val(), 0); break;
      case '--startup-timeout': o.startupTimeoutSec = num(flag, val(), 1); break;
      case '--eval-workers': o.evalWorkers = String(Math.floor(num(flag, val(), 0, 256))); break;
      case '--pool-workers': o.poolWorkers = Math.floor(num(flag, val(), 1, 256)); break;
      case '--scaling-workers': o.scalingWorkers = String(Math.floor(num(flag, val(), 0, 256))); break;
      case '--batch': o.batch = Math.floor(num(flag, val(), 1, 100_000)); break;
      case '--write-rate': o.writeRate = num(flag, val(), 0.1, 1000); break;
      case '--nodes': o.nodes = Math.floor(num(flag, val(), 2, 16)); break;
      case '--changes': o.changes = Math.floor(num(flag, val(), 1)); break;
      case '--rounds': o.rounds = Math.floor(num(flag, val(), 1, 100)); break;
      case '--snapshot-flags': o.snapshotFlags = Math.floor(num(flag, val(), 1)); break;
      case '--paced-fraction': o.pacedFraction = num(flag, val(), 0, 1); break;
      case '--no-paced': o.pacedFraction = 0; break;
      case '--scale-flags': {
        const list = (val() ?? '').split(',').filter(Boolean).map((x) => Math.floor(num(flag, x, 1)));
        if (list.length === 0) throw new Error('--scale-flags needs a comma-separated list of flag counts');
        o.scaleFlags = list;
        break;
      }
      case '--service': o.servicePath = path.resolve(val() ?? ''); break;
      case '--out': o.outDir = path.resolve(val() ?? ''); break;
      case '--no-pin': o.pin = false; break;
      case '--bare-only': o.bareOnly = true; break;
      case '--keep-data': o.keepData = true; break;
      case '--verbose': o.verbose = true; break;
      case '--engine': {
        const e = val();
        if (e !== 'lean' && e !== 'autocannon') throw new Error('--engine is lean or autocannon');
        o.engine = e;
        break;
      }
      case '--scenario': o.scenarios = select(val() ?? ''); break;
      case '--skip': skip = (val() ?? '').split(',').filter(Boolean); break;
      case '-h':
      case '--help':
        process.stdout.write(`${usage()}\n`);
        process.exit(0);
        break;
      default:
        // `npm run bench -- abuse`: a bare scenario name (or list) is --scenario.
        if (!a.startsWith('-')) o.scenarios = select(a);
        else throw new Error(`unknown argument ${a}\n${usage()}`);
    }
  }
  for (const n of skip) if (!ALL_SCENARIOS.some((s) => s.name === n)) throw new Error(`--skip: unknown scenario ${n}`);
  o.scenarios = o.scenarios.filter((s) => !skip.includes(s.name));
  if (o.engine === 'autocannon' && o.pacedFraction > 0) {
    log('the paced (fixed-rate) runs need the lean engine: --paced-fraction set to 0');
    o.pacedFraction = 0;
  }
  return o;
}

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
