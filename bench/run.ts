/**
 * Vexil benchmark runner (`npm run bench`).
 *
 *   node dist/bench/run.js [--duration 10] [--connections 50] [--flags 10]
 *     [--scenario rest-eval[,…]|all] [--pipelining 1] [--engine lean|autocannon]
 *     [--warmup 3] [--no-pin] [--bare-only] [--eval-workers N]
 *     [--service dist/src/main.js] [--startup-timeout 30] [--keep-data] [--verbose]
 *
 * 1. Starts bench/bare-server (a bare uWebSockets.js endpoint) and measures it:
 *    this is the baseline of the run.
 * 2. For each scenario: starts a fresh service (`node dist/src/main.js`, fresh
 *    PGlite data dir, rate limits lifted), seeds it through the REST API,
 *    checks one request, warms up, then measures.
 * Server processes are pinned to CPU 0 and the load generator (a child
 * `node dist/bench/load.js --json`) to CPU 1 when taskset is available.
 * Prints a markdown table and writes bench/results/<timestamp>.{json,md}.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runLoadInChild, type Engine, type LoadResult } from './load.js';
import { canPin, cpuSeconds, freePort, killAllChildren, machineInfo, peakRssMiB, processTree, startChild, systemCpu } from './proc.js';
import {
  EVAL_BODY,
  EVAL_PATH,
  SCENARIOS,
  expectVariantOn,
  type HarnessOptions,
  type LoadRequest,
  type Scenario,
  type ScenarioContext,
  type Target,
} from './scenarios.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
/** dist/bench/run.js -> repo root; falls back to the working directory. */
const ROOT = existsSync(path.resolve(HERE, '../../package.json')) ? path.resolve(HERE, '../..') : process.cwd();
const SERVER_CPUS = '0';
const LOAD_CPUS = '1';
const BARE_KEY = 'b'.repeat(64);
/** Temporary data directories to remove if the run is interrupted. */
const tempDirs = new Set<string>();

interface RunOptions extends HarnessOptions {
  scenarios: Scenario[];
  engine: Engine;
  bareOnly: boolean;
  outDir: string;
  /** Wait up to this long for the machine to be idle before each measurement. */
  quietWaitSec: number;
}

interface Measurement {
  name: string;
  description: string;
  load?: LoadResult;
  server?: {
    cpuSec: number;
    /** Share of one core over the measured run (1 = one full core). */
    cpuUtilization: number;
    cpuUsPerRequest: number;
    peakRssMiB: number[];
  };
  /**
   * CPU used on the machine during the measured run by anything but the server
   * and the generator (other processes, plus interrupt time the kernel does not
   * charge to a process), in cores; high values mean a noisy measurement.
   */
  otherCpu?: { utilization: number; irqUtilization: number };
  /** Which side ran out of CPU first, judged from the CPU shares. */
  bound?: 'server' | 'generator' | 'both' | 'neither';
  ratio?: { rps: number; cpuPerRequest: number; p99: number };
  error?: string;
}

// ----------------------------------------------------------------- options

function usage(): string {
  return [
    'usage: node dist/bench/run.js [options]',
    '  --duration SEC         measured seconds per scenario (10)',
    '  --connections N        concurrent keep-alive connections (50)',
    '  --flags N              boolean flags seeded (10)',
    `  --scenario LIST        comma-separated, or "all" (rest-eval); known: ${SCENARIOS.map((s) => s.name).join(', ')}`,
    '  --pipelining N         requests in flight per connection (1)',
    '  --engine lean|autocannon  load generator (lean)',
    '  --warmup SEC           unmeasured load before each measurement (3)',
    '  --no-pin               do not pin server/generator to CPU 0/1',
    '  --bare-only            measure the bare uWebSockets.js baseline only',
    '  --eval-workers N       VEXIL_EVAL_WORKERS for the service (service default when absent)',
    '  --service PATH         service entry point (dist/src/main.js)',
    '  --startup-timeout SEC  how long the service may take to answer (30)',
    '  --quiet-wait SEC       before each measurement, wait up to SEC for the machine to be idle (0)',
    '  --keep-data            keep the services\' temporary data directories',
    '  --verbose              echo the children\'s output',
    '  --out DIR              results directory (bench/results)',
  ].join('\n');
}

function parseArgs(argv: string[]): RunOptions {
  const o: RunOptions = {
    durationSec: 10,
    connections: 50,
    pipelining: 1,
    flags: 10,
    warmupSec: 3,
    servicePath: path.join(ROOT, 'dist/src/main.js'),
    startupTimeoutSec: 30,
    evalWorkers: undefined,
    pin: true,
    verbose: false,
    keepData: false,
    scenarios: SCENARIOS.filter((s) => s.name === 'rest-eval'),
    engine: 'lean',
    bareOnly: false,
    outDir: path.join(ROOT, 'bench/results'),
    quietWaitSec: 0,
  };
  const num = (flag: string, v: string | undefined, min: number): number => {
    const n = Number(v);
    if (v === undefined || !Number.isFinite(n) || n < min) throw new Error(`${flag} needs a number >= ${min}`);
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
      case '--eval-workers': o.evalWorkers = String(Math.floor(num(flag, val(), 0))); break;
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
      case '--scenario': {
        const v = val() ?? '';
        if (v === 'all') {
          o.scenarios = [...SCENARIOS];
          break;
        }
        o.scenarios = v.split(',').filter(Boolean).map((name) => {
          const s = SCENARIOS.find((x) => x.name === name);
          if (s === undefined) throw new Error(`unknown scenario ${name}; known: ${SCENARIOS.map((x) => x.name).join(', ')}`);
          return s;
        });
        break;
      }
      case '-h':
      case '--help':
        process.stdout.write(`${usage()}\n`);
        process.exit(0);
        break;
      default:
        throw new Error(`unknown argument ${a}\n${usage()}`);
    }
  }
  return o;
}

// ----------------------------------------------------------------- targets

const log = (msg: string): void => {
  process.stderr.write(`[bench] ${msg}\n`);
};

async function startBare(opts: HarnessOptions): Promise<Target> {
  const port = await freePort();
  const child = startChild('bare', process.execPath, [path.join(HERE, 'bare-server.js'), '--port', String(port)], {
    env: { ...process.env, BENCH_KEY: BARE_KEY },
    cpus: opts.pin ? SERVER_CPUS : undefined,
    echo: opts.verbose,
  });
  await child.waitForLine(/^listening (\d+)/, 10_000);
  return { baseUrl: `http://127.0.0.1:${port}`, pids: [child.pid], stop: () => child.stop(), tail: () => child.tail() };
}

/** Default target: one `node dist/src/main.js` on a fresh PGlite directory. */
async function startService(opts: HarnessOptions, adminKey: string, extraEnv: Record<string, string> = {}): Promise<Target> {
  if (!existsSync(opts.servicePath)) {
    throw new Error(`service entry point ${opts.servicePath} does not exist: build the service first (npm run build)`);
  }
  const port = await freePort();
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'vexil-bench-'));
  if (!opts.keepData) tempDirs.add(dataDir);
  const env: NodeJS.ProcessEnv = { ...process.env };
  // A benchmark of the embedded default: never pick up CI's PostgreSQL or NATS.
  delete env.DATABASE_URL;
  delete env.NATS_URL;
  Object.assign(env, {
    HOST: '127.0.0.1',
    PORT: String(port),
    VEXIL_DATA_DIR: dataDir,
    VEXIL_BOOTSTRAP_ADMIN_KEY: adminKey,
    VEXIL_RATE_LIMIT_EVAL: '100000000',
    VEXIL_RATE_LIMIT_MGMT: '100000000',
    NODE_ENV: 'production',
  });
  if (opts.evalWorkers !== undefined) env.VEXIL_EVAL_WORKERS = opts.evalWorkers;
  Object.assign(env, extraEnv);
  const child = startChild('service', process.execPath, [opts.servicePath], {
    env,
    cpus: opts.pin ? SERVER_CPUS : undefined,
    cwd: ROOT,
    echo: opts.verbose,
  });
  const target: Target = {
    baseUrl: `http://127.0.0.1:${port}`,
    pids: [child.pid],
    tail: () => child.tail(),
    async stop() {
      await child.stop();
      if (!opts.keepData) {
        rmSync(dataDir, { recursive: true, force: true });
        tempDirs.delete(dataDir);
      } else log(`kept data directory ${dataDir}`);
    },
  };
  // Up = answers HTTP (anything but 503) within the startup timeout.
  const deadline = Date.now() + opts.startupTimeoutSec * 1000;
  let last = 'no connection';
  for (;;) {
    const code = child.exitCode();
    if (code !== undefined) {
      await target.stop();
      throw new Error(
        `service exited (code ${String(code)}) before answering on ${target.baseUrl}\n--- last output ---\n${child.tail()}`,
      );
    }
    try {
      const r = await fetch(`${target.baseUrl}/api/keys`, {
        headers: { 'x-management-key': adminKey },
        signal: AbortSignal.timeout(2000),
      });
      await r.arrayBuffer();
      if (r.status !== 503) return target;
      last = `HTTP ${r.status}`;
    } catch (err) {
      last = err instanceof Error ? ((err.cause as Error | undefined)?.message ?? err.message) : String(err);
    }
    if (Date.now() > deadline) {
      await target.stop();
      throw new Error(
        `service did not come up within ${opts.startupTimeoutSec} s on ${target.baseUrl} ` +
          `(node ${path.relative(ROOT, opts.servicePath)}; last attempt: ${last})\n--- last output ---\n${child.tail()}`,
      );
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

function makeContext(opts: HarnessOptions, target: Target, adminKey: string): ScenarioContext {
  return {
    opts,
    target,
    baseUrl: target.baseUrl,
    adminKey,
    state: {},
    async api<T>(method: string, p: string, body?: unknown, o: { key?: string; expect?: number } = {}): Promise<T> {
      const r = await fetch(target.baseUrl + p, {
        method,
        headers: {
          'x-management-key': o.key ?? adminKey,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(30_000),
      });
      const text = await r.text();
      const ok = o.expect === undefined ? r.status >= 200 && r.status < 300 : r.status === o.expect;
      if (!ok) {
        throw new Error(
          `seeding failed: ${method} ${p} answered ${r.status}` +
            `${o.expect === undefined ? '' : ` (expected ${o.expect})`}: ${text.slice(0, 500)}`,
        );
      }
      return (text === '' ? undefined : JSON.parse(text)) as T;
    },
  };
}

// ---------------------------------------------------------------- measuring

async function checkOnce(baseUrl: string, req: LoadRequest): Promise<void> {
  const r = await fetch(baseUrl + req.path, {
    method: req.method,
    headers: req.headers,
    body: req.body,
    signal: AbortSignal.timeout(10_000),
  });
  const text = await r.text();
  if (r.status !== req.expectStatus) {
    throw new Error(`check request ${req.method} ${req.path} answered ${r.status}, expected ${req.expectStatus}: ${text.slice(0, 500)}`);
  }
  const problem = req.checkBody?.(text);
  if (problem !== undefined) throw new Error(`check request ${req.method} ${req.path}: ${problem}`);
}

/**
 * Waits until the machine's CPUs are idle (< 10 % of one core busy over a
 * second) or `maxSec` have passed; returns whether it became idle.
 */
async function waitQuiet(maxSec: number): Promise<boolean> {
  const deadline = Date.now() + maxSec * 1000;
  let logged = false;
  for (;;) {
    const s0 = systemCpu();
    await new Promise((r) => setTimeout(r, 1000));
    const busy = systemCpu().busySec - s0.busySec;
    if (busy < 0.1) return true;
    if (Date.now() > deadline) {
      log(`  machine still busy (${(busy * 100).toFixed(0)}% of a core) after ${maxSec} s; measuring anyway`);
      return false;
    }
    if (!logged) log(`  machine busy (${(busy * 100).toFixed(0)}% of a core): waiting for it to be idle`);
    logged = true;
  }
}

async function measure(opts: RunOptions, target: Target, req: LoadRequest): Promise<Pick<Measurement, 'load' | 'server' | 'bound' | 'otherCpu'>> {
  await checkOnce(target.baseUrl, req);
  const spec = {
    url: target.baseUrl + req.path,
    method: req.method,
    headers: req.headers,
    body: req.body,
    connections: opts.connections,
    pipelining: opts.pipelining,
    engine: opts.engine,
  };
  const loadCpus = opts.pin ? LOAD_CPUS : undefined;
  if (opts.quietWaitSec > 0) await waitQuiet(opts.quietWaitSec);
  if (opts.warmupSec > 0) {
    log(`  warm-up ${opts.warmupSec} s`);
    await runLoadInChild({ ...spec, durationSec: opts.warmupSec }, loadCpus);
  }
  log(`  measuring ${opts.durationSec} s`);
  const sys0 = systemCpu();
  const wall0 = performance.now();
  // CPU of the whole process tree (a service may fork helpers).
  const pids = target.pids.flatMap(processTree);
  const cpu0 = pids.map(cpuSeconds);
  const load = await runLoadInChild({ ...spec, durationSec: opts.durationSec }, loadCpus);
  const cpu1 = pids.map(cpuSeconds);
  const sys1 = systemCpu();
  const windowSec = (performance.now() - wall0) / 1000;
  const cpuSec = cpu1.reduce((s, c, i) => s + (Number.isFinite(c - cpu0[i]) ? c - cpu0[i] : 0), 0);
  const cpuUtilization = cpuSec / load.durationSec;
  const server = {
    cpuSec,
    cpuUtilization,
    cpuUsPerRequest: load.requests > 0 ? (cpuSec * 1e6) / load.requests : NaN,
    peakRssMiB: target.pids.map(peakRssMiB),
  };
  // Pinned, each side has one core: whoever is near 100 % is the bottleneck.
  const cap = opts.pin && canPin() ? 1 : os.availableParallelism();
  const serverFull = cpuUtilization >= 0.9 * cap;
  const generatorFull = load.generatorCpu.utilization >= 0.9;
  const bound = serverFull && generatorFull ? 'both' : serverFull ? 'server' : generatorFull ? 'generator' : 'neither';
  const otherCpu = {
    utilization: (sys1.busySec - sys0.busySec - cpuSec - load.generatorCpu.processTotalSec) / windowSec,
    irqUtilization: (sys1.softirqSec - sys0.softirqSec) / windowSec,
  };
  return { load, server, bound, otherCpu };
}

// ----------------------------------------------------------------- reporting

const fmt = (n: number | undefined, digits = 2): string => (n === undefined || !Number.isFinite(n) ? '-' : n.toFixed(digits));

function table(rows: Measurement[]): string {
  const head =
    '| scenario | req/s | p50 ms | p99 ms | p99.9 ms | non-2xx | errors | ratio to bare | CPU/req vs bare | server CPU | CPU µs/req | generator CPU | other CPU | peak RSS MiB | bound |\n' +
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|';
  const lines = rows.map((m) => {
    if (m.load === undefined || m.server === undefined) {
      return `| ${m.name} | FAILED: ${(m.error ?? '').split('\n')[0].replace(/\|/g, '\\|')} | | | | | | | | | | | | | |`;
    }
    const l = m.load;
    return (
      `| ${m.name} | ${l.rps.toFixed(0)} | ${fmt(l.latencyMs.p50, 3)} | ${fmt(l.latencyMs.p99, 3)} | ${fmt(l.latencyMs.p999, 3)} | ` +
      `${l.non2xx} | ${l.errors} | ${fmt(m.ratio?.rps, 3)} | ${fmt(m.ratio?.cpuPerRequest, 2)} | ` +
      `${(m.server.cpuUtilization * 100).toFixed(0)}% | ${fmt(m.server.cpuUsPerRequest, 1)} | ` +
      `${(l.generatorCpu.utilization * 100).toFixed(0)}% | ${fmt((m.otherCpu?.utilization ?? NaN) * 100, 0)}% | ${m.server.peakRssMiB.map((r) => fmt(r, 0)).join('+')} | ${m.bound ?? '-'} |`
    );
  });
  return [head, ...lines].join('\n');
}

function markdown(opts: RunOptions, startedAt: string, pinning: string, rows: Measurement[]): string {
  const m = machineInfo();
  return [
    `# Vexil benchmark ${startedAt}`,
    '',
    `- machine: ${String(m.cpuModel)}, ${String(m.cpus)} CPUs, ${String(m.totalMemMiB)} MiB, node ${String(m.node)}`,
    `- generator: ${opts.engine}, ${opts.connections} connections, pipelining ${opts.pipelining}, ` +
      `${opts.durationSec} s measured after ${opts.warmupSec} s warm-up`,
    `- pinning: ${pinning}`,
    `- flags seeded: ${opts.flags}`,
    '',
    table(rows),
    '',
    '`ratio to bare` = scenario req/s ÷ bare req/s; `CPU/req vs bare` = server CPU µs per request ÷ the bare ' +
      'server\'s (both from this run). `server CPU` is utime+stime of the server process over the measured run ÷ its ' +
      'duration (100% = one core). `other CPU` is what the rest of the machine used meanwhile (other processes and ' +
      'interrupt time not charged to a process): above ~20% the figures are suspect. `bound` says which side was at ' +
      '≥ 90% of its CPU.',
    '',
    ...rows.map((r) => `- **${r.name}**: ${r.description}${r.error ? `\n  - error: ${r.error.split('\n')[0]}` : ''}`),
    '',
  ].join('\n');
}

// ---------------------------------------------------------------------- main

async function main(): Promise<number> {
  const opts = parseArgs(process.argv.slice(2));
  const startedAt = new Date().toISOString();
  if (opts.pin && !canPin()) {
    log('taskset unavailable or fewer than 2 CPUs: running unpinned');
    opts.pin = false;
  }
  const pinning = opts.pin ? `server on CPU ${SERVER_CPUS}, load generator on CPU ${LOAD_CPUS} (taskset)` : 'none';
  log(`${opts.engine} generator, ${opts.connections} connections, pipelining ${opts.pipelining}, ${opts.durationSec} s; pinning: ${pinning}`);

  const rows: Measurement[] = [];
  let failed = false;

  // Baseline: the bare uWebSockets.js endpoint.
  const bareRow: Measurement = {
    name: 'bare-uws',
    description:
      'bench/bare-server: bare uWebSockets.js POST /flags/:name: reads the body, JSON.parse, sha256 key lookup in a Map, ' +
      'fixed JSON answer in one corked write. The baseline of every ratio.',
  };
  rows.push(bareRow);
  log('bare-uws: starting');
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
    Object.assign(bareRow, await measure(opts, bare, req));
  } catch (err) {
    bareRow.error = err instanceof Error ? err.message : String(err);
    failed = true;
  } finally {
    await bare?.stop();
  }
  const base = bareRow.load !== undefined && bareRow.server !== undefined && bareRow.load.rps > 0 ? bareRow : undefined;
  if (base) bareRow.ratio = { rps: 1, cpuPerRequest: 1, p99: 1 };

  if (!opts.bareOnly) {
    for (const scenario of opts.scenarios) {
      const row: Measurement = { name: scenario.name, description: scenario.description };
      rows.push(row);
      log(`${scenario.name}: starting the service`);
      const adminKey = randomBytes(32).toString('hex');
      let target: Target | undefined;
      try {
        target = await (scenario.start ? scenario.start(opts, adminKey) : startService(opts, adminKey, scenario.env));
        const ctx = makeContext(opts, target, adminKey);
        log(`${scenario.name}: seeding`);
        await scenario.setup(ctx);
        Object.assign(row, await measure(opts, target, scenario.request(ctx)));
        if (base?.load && base.server && row.load && row.server) {
          row.ratio = {
            rps: row.load.rps / base.load.rps,
            cpuPerRequest: row.server.cpuUsPerRequest / base.server.cpuUsPerRequest,
            p99: row.load.latencyMs.p99 / base.load.latencyMs.p99,
          };
        }
      } catch (err) {
        row.error = err instanceof Error ? err.message : String(err);
        failed = true;
      } finally {
        await target?.stop();
      }
    }
  }

  const md = markdown(opts, startedAt, pinning, rows);
  process.stdout.write(`\n${table(rows)}\n\n`);
  for (const r of rows) {
    if (r.error) process.stderr.write(`\n[bench] ${r.name} FAILED:\n${r.error}\n`);
    if (r.otherCpu !== undefined && r.otherCpu.utilization > 0.2) {
      process.stderr.write(
        `[bench] warning: ${r.name}: ${(r.otherCpu.utilization * 100).toFixed(0)}% of a core went to other work during the run; the machine was not quiet\n`,
      );
    }
    if (r.bound === 'generator') {
      process.stderr.write(`[bench] warning: ${r.name} was limited by the load generator, not the server\n`);
    }
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
  };
  const jsonPath = path.join(opts.outDir, `${stamp}.json`);
  writeFileSync(jsonPath, `${JSON.stringify(json, null, 2)}\n`);
  writeFileSync(path.join(opts.outDir, `${stamp}.md`), md);
  log(`results: ${path.relative(process.cwd(), jsonPath)} (+ .md)`);
  return failed ? 1 : 0;
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
