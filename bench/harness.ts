/**
 * The benchmark harness's machinery, shared by the runner (run.ts) and the scenarios: starting the
 * bare baseline and service nodes, seeding contexts, measuring one load run, and child-process
 * helpers. Nothing here prints a table; run.ts does.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cpSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchImage, containerCommand, containerPid, removeContainer } from './container.js';
import { runLoadInChild, type LoadResult, type PhaseControl } from './load.js';
import { canPin, cpuSeconds, freePort, peakRssMiB, pinned, processTree, startChild, systemCpu, track, type Child } from './proc.js';
import type { Background, HarnessOptions, LoadRequest, ScenarioContext, Target } from './scenario-types.js';
import type { SeedResult } from './seed.js';


/** The median of `xs` (NaN for none). */
export const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((x, y) => x - y);
  const m = s.length >> 1;
  return s.length === 0 ? NaN : s.length % 2 === 1 ? s[m] : (s[m - 1] + s[m]) / 2;
};

export const HERE = path.dirname(fileURLToPath(import.meta.url));
/** dist/bench/*.js -> repo root; falls back to the working directory. */
export const ROOT = existsSync(path.resolve(HERE, '../../package.json')) ? path.resolve(HERE, '../..') : process.cwd();
export const SERVER_CPUS = '0';
export const LOAD_CPUS = '1';
export const BARE_KEY = 'b'.repeat(64);
/** The bootstrap admin key of every service of this run (the template data directory holds it). */
export const ADMIN_KEY = randomBytes(32).toString('hex');

/** Temporary directories to remove if the run is interrupted. */
export const tempDirs = new Set<string>();

const T0 = performance.now();
export const log = (msg: string): void => {
  process.stderr.write(`[bench +${((performance.now() - T0) / 1000).toFixed(1)}s] ${msg}\n`);
};

/** One row of the results table. */
export interface Measurement {
  name: string;
  description: string;
  /** `ok` when measured; `not available` / `skipped` are not failures. */
  status: 'ok' | 'failed' | 'not available' | 'skipped';
  /** VEXIL_EVAL_WORKERS of the service(s): "0", "2", or "2 (default)". */
  evalWorkers?: string;
  load?: LoadResult;
  /** GraphQL batch: evaluations per request (evaluations/s = req/s × this). */
  evaluationsPerRequest?: number;
  server?: {
    cpuSec: number;
    /** Share of one core over the measured run (1 = one full core), all nodes together. */
    cpuUtilization: number;
    /** Per node (process tree of each listed pid). */
    cpuPerNode: number[];
    cpuUsPerRequest: number;
    peakRssMiB: number[];
  };
  /**
   * CPU used on the machine during the measured run by anything but the server and the generator
   * (other processes, plus interrupt time the kernel does not charge to a process), in cores.
   */
  otherCpu?: { utilization: number; irqUtilization: number };
  /** Which side ran out of CPU first, judged from the CPU shares (`paced`: a fixed-rate run, nobody should be). */
  bound?: 'server' | 'generator' | 'both' | 'neither' | 'paced';
  /** Against the bare baseline of this run. */
  ratio?: { rps: number; cpuPerRequest: number; p99: number };
  /** Against another row of this run (scaling: the smallest flag count; mixed: the same mode without writes). */
  versus?: { name: string; rps: number; cpuPerRequest: number };
  /** Human-readable figures that have no column (propagation, snapshot, writer, start-up). */
  notes?: string[];
  /** Machine-readable figures of scenario-specific measurements. */
  extra?: Record<string, unknown>;
  error?: string;
}

// ------------------------------------------------------------------ targets

export async function startBare(opts: HarnessOptions): Promise<Target> {
  const port = await freePort();
  const child = startChild('bare', process.execPath, [path.join(HERE, 'bare-server.js'), '--port', String(port)], {
    env: { ...process.env, BENCH_KEY: BARE_KEY },
    cpus: opts.pin ? SERVER_CPUS : undefined,
    echo: opts.verbose,
  });
  await child.waitForLine(/^listening (\d+)/, 10_000);
  return { baseUrl: `http://127.0.0.1:${port}`, pids: [child.pid], stop: () => child.stop(), tail: () => child.tail() };
}

/** A running service node. */
export interface ServiceTarget extends Target {
  child: Child;
  /** From the node's `snapshots loaded` log line, once printed. */
  snapshotLoad(): { ms: number; orgs: number } | undefined;
}

export interface ServiceOptions {
  /** Extra environment (wins over the defaults). */
  env?: Record<string, string>;
  /** Use this PGlite directory (removed at stop unless --keep-data) instead of a copy of the template. */
  dataDir?: string;
  /** Run against PostgreSQL and NATS instead of PGlite (propagation). */
  cluster?: { databaseUrl: string; natsUrl: string };
  label?: string;
  startupTimeoutSec?: number;
  /** Measure the node:http fallback front (only the explicit front comparison does). */
  allowFallbackFront?: boolean;
  /** Pin the service to these CPUs (taskset list) instead of SERVER_CPUS under --pin; '' = not pinned. */
  cpus?: string;
  /** A command the node runs under (it execs the node: `setpriv …` drops a capability, saturation.ts). */
  wrap?: string[];
}

let templateDir: string | undefined;
let templatePromise: Promise<string> | undefined;

/**
 * A PGlite data directory migrated and bootstrapped (organization `default`, ADMIN_KEY) once per
 * run by the project's own code (bench/seed.ts with 0 flags). Every single-node service starts
 * on a fresh copy: creating a PGlite cluster (initdb) costs seconds, copying one does not.
 */
export function templateDataDir(opts: HarnessOptions): Promise<string> {
  templatePromise ??= (async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'vexil-bench-template-'));
    tempDirs.add(dir);
    await runNodeJson(path.join(HERE, 'seed.js'), ['--data-dir', dir, '--flags', '0', '--admin-key', ADMIN_KEY], {
      timeoutSec: Math.max(120, opts.startupTimeoutSec),
    });
    templateDir = dir;
    return dir;
  })();
  return templatePromise;
}

export function removeTemplate(): void {
  for (const t of seededTemplates.values()) {
    void t.then(({ dir }) => {
      rmSync(dir, { recursive: true, force: true });
      tempDirs.delete(dir);
    }, () => {});
  }
  seededTemplates.clear();
  if (templateDir !== undefined) {
    rmSync(templateDir, { recursive: true, force: true });
    tempDirs.delete(templateDir);
    templateDir = undefined;
    templatePromise = undefined;
  }
}

/** A temporary copy of `template` (removed at stop or exit). */
function copyOf(template: string): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'vexil-bench-'));
  tempDirs.add(dir);
  cpSync(template, dir, { recursive: true });
  return dir;
}

/** A fresh PGlite data directory: a copy of the run's template. */
export async function freshDataDir(opts: HarnessOptions): Promise<string> {
  return copyOf(await templateDataDir(opts));
}

/** Seeds a fresh copy of the template with `flags` flags (bench/seed.ts, directly in PGlite). */
export async function seededDataDir(opts: HarnessOptions, adminKey: string, flags: number): Promise<{ dir: string; seed: SeedResult }> {
  const dir = await freshDataDir(opts);
  const seed = await runNodeJson<SeedResult>(path.join(HERE, 'seed.js'), ['--data-dir', dir, '--flags', String(flags), '--admin-key', adminKey], {
    timeoutSec: 900,
  });
  return { dir, seed };
}

const seededTemplates = new Map<number, Promise<{ dir: string; seed: SeedResult }>>();

/**
 * A fresh copy of a data directory seeded once per run with `flags` flags: the scenarios of one
 * large organization (isolation, large-org) share the seeding, each node starts on its own copy.
 */
export async function seededCopy(opts: HarnessOptions, adminKey: string, flags: number): Promise<{ dir: string; seed: SeedResult }> {
  let t = seededTemplates.get(flags);
  if (t === undefined) seededTemplates.set(flags, (t = seededDataDir(opts, adminKey, flags)));
  const { dir, seed } = await t;
  return { dir: copyOf(dir), seed };
}

/** The VEXIL_EVAL_WORKERS a service started with `env` runs with, for the table. */
export function workersLabel(opts: HarnessOptions, env: Record<string, string> = {}): string {
  const v = env.VEXIL_EVAL_WORKERS ?? opts.evalWorkers;
  return v === undefined ? `${os.cpus().length} (default)` : v;
}

/** One `node dist/src/main.js`; single node on a copy of the template unless told otherwise. */
/** `npm run bench` measures the native front only: a figure from the node:http fallback would mislead. */
async function refuseFallbackFront(target: ServiceTarget, label: string, allowed: boolean): Promise<void> {
  const health = (await (await fetch(`${target.baseUrl}/healthz`)).json()) as { http?: string };
  if (health.http === 'uws' || allowed) return;
  await target.stop();
  throw new Error(`${label} runs on the '${String(health.http)}' HTTP front, not native uWebSockets.js: refusing to measure it`);
}

export async function startService(opts: HarnessOptions, adminKey: string, so: ServiceOptions = {}): Promise<ServiceTarget> {
  if (!existsSync(opts.servicePath)) {
    throw new Error(`service entry point ${opts.servicePath} does not exist: build the service first (npm run build)`);
  }
  const port = await freePort();
  const dataDir = so.cluster !== undefined ? undefined : (so.dataDir ?? (await freshDataDir(opts)));
  if (dataDir !== undefined) tempDirs.add(dataDir);
  const env: NodeJS.ProcessEnv = { ...process.env };
  // A benchmark of the embedded default unless a cluster is asked for: never pick up CI's PostgreSQL or NATS.
  delete env.DATABASE_URL;
  delete env.NATS_URL;
  delete env.VEXIL_HTTP_FRONT;
  Object.assign(env, {
    HOST: '127.0.0.1',
    PORT: String(port),
    VEXIL_BOOTSTRAP_ADMIN_KEY: adminKey,
    VEXIL_RATE_LIMIT_EVAL: '100000000',
    VEXIL_RATE_LIMIT_MGMT: '100000000',
    NODE_ENV: 'production',
  });
  if (dataDir !== undefined) env.VEXIL_DATA_DIR = dataDir;
  if (so.cluster !== undefined) {
    env.DATABASE_URL = so.cluster.databaseUrl;
    env.NATS_URL = so.cluster.natsUrl;
  }
  if (opts.evalWorkers !== undefined) env.VEXIL_EVAL_WORKERS = opts.evalWorkers;
  Object.assign(env, so.env ?? {});
  const label = so.label ?? 'service';
  // Diagnostics for the server alone (for example --trace-gc), without touching the generator's flags.
  const nodeArgs = (process.env.VEXIL_BENCH_SERVER_NODE_ARGS ?? '').split(' ').filter((a) => a !== '');
  const cpus = so.cpus !== undefined ? so.cpus || undefined : opts.pin ? SERVER_CPUS : undefined;
  // VEXIL_BENCH_IMAGE: the service in a container of that image (bench/container.ts).
  const image = benchImage();
  const container = image === undefined ? undefined : containerCommand(image, env, cpus);
  const [cmd, ...args] = container?.command ?? [...(so.wrap ?? []), process.execPath, ...nodeArgs, opts.servicePath];
  const child = startChild(label, cmd, args, {
    env,
    cpus: container === undefined ? cpus : undefined,
    cwd: ROOT,
    echo: opts.verbose,
  });
  let snapshotLoad: { ms: number; orgs: number } | undefined;
  child.onLine((line) => {
    if (snapshotLoad !== undefined || !line.includes('snapshots loaded')) return;
    try {
      const j = JSON.parse(line) as { msg?: string; ms?: unknown; orgs?: unknown };
      if (j.msg === 'snapshots loaded' && typeof j.ms === 'number') snapshotLoad = { ms: j.ms, orgs: Number(j.orgs) };
    } catch {
      /* not a log line */
    }
  });
  const target: ServiceTarget = {
    baseUrl: `http://127.0.0.1:${port}`,
    pids: [child.pid],
    child,
    tail: () => child.tail(),
    snapshotLoad: () => snapshotLoad,
    async stop() {
      await child.stop();
      if (container !== undefined) removeContainer(container.name);
      if (dataDir === undefined) return;
      if (!opts.keepData) {
        rmSync(dataDir, { recursive: true, force: true });
        tempDirs.delete(dataDir);
      } else {
        tempDirs.delete(dataDir);
        log(`kept data directory ${dataDir}`);
      }
    },
  };
  // Up = answers HTTP (anything but 503) within the startup timeout.
  const timeoutSec = so.startupTimeoutSec ?? opts.startupTimeoutSec;
  const deadline = Date.now() + timeoutSec * 1000;
  let last = 'no connection';
  for (;;) {
    const code = child.exitCode();
    if (code !== undefined) {
      await target.stop();
      throw new Error(`${label} exited (code ${String(code)}) before answering on ${target.baseUrl}\n--- last output ---\n${child.tail()}`);
    }
    try {
      const r = await fetch(`${target.baseUrl}/api/keys`, {
        headers: { 'x-management-key': adminKey },
        signal: AbortSignal.timeout(2000),
      });
      await r.arrayBuffer();
      if (r.status !== 503) {
        await refuseFallbackFront(target, label, so.allowFallbackFront === true);
        // In a container the node is not this child (podman is): its host pid, for /proc readings.
        const inside = container === undefined ? undefined : containerPid(container.name);
        if (inside !== undefined) target.pids = [inside];
        return target;
      }
      last = `HTTP ${r.status}`;
    } catch (err) {
      last = err instanceof Error ? ((err.cause as Error | undefined)?.message ?? err.message) : String(err);
    }
    if (Date.now() > deadline) {
      await target.stop();
      throw new Error(
        `${label} did not come up within ${timeoutSec} s on ${target.baseUrl} ` +
          `(node ${path.relative(ROOT, opts.servicePath)}; last attempt: ${last})\n--- last output ---\n${child.tail()}`,
      );
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** JSON calls against `baseUrl` with the admin key (or `{key}`); throws naming the call on an unexpected status. */
export function apiClient(baseUrl: string, adminKey: string): ScenarioContext['api'] {
  return async function api<T>(method: string, p: string, body?: unknown, o: { key?: string; expect?: number } = {}): Promise<T> {
    const r = await fetch(baseUrl + p, {
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
        `seeding failed: ${method} ${p} answered ${r.status}` + `${o.expect === undefined ? '' : ` (expected ${o.expect})`}: ${text.slice(0, 500)}`,
      );
    }
    return (text === '' ? undefined : JSON.parse(text)) as T;
  };
}

export function makeContext(opts: HarnessOptions, target: Target, adminKey: string): ScenarioContext {
  return { opts, target, baseUrl: target.baseUrl, adminKey, state: {}, api: apiClient(target.baseUrl, adminKey) };
}

// ---------------------------------------------------------------- measuring

export async function checkOnce(baseUrl: string, req: LoadRequest): Promise<void> {
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
 * Waits until the machine's CPUs are idle (< 10 % of one core busy over a second) or `maxSec`
 * have passed; returns whether it became idle.
 */
export async function waitQuiet(maxSec: number): Promise<boolean> {
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

export interface MeasureOptions {
  /** Fixed-rate run at this many req/s (lean engine) instead of a closed loop. */
  rate?: number;
  /** Overrides --warmup for this run. */
  warmupSec?: number;
  /** Started right before the measured run, stopped right after it. */
  background?: () => Background;
  /**
   * Phase mode (load.ts LoadOptions.phases): called when the measured run starts, with the handle
   * that starts a phase of the generator; the run ends when the promise settles (--duration is not
   * used). Needs `rate`.
   */
  drive?: (control: PhaseControl) => Promise<void>;
}

export type MeasureResult = Pick<Measurement, 'load' | 'server' | 'bound' | 'otherCpu'> & {
  background?: { notes: string[]; extra: Record<string, unknown> };
};

/** Per-node CPU seconds: the process tree of each pid summed. */
function treeCpu(pids: number[][]): number[] {
  return pids.map((tree) => tree.reduce((s, p) => {
    const c = cpuSeconds(p);
    return Number.isFinite(c) ? s + c : s;
  }, 0));
}

/**
 * Server CPU of `pids` (per node) over `fn`, and the CPU the rest of the machine used meanwhile
 * (minus this runner process, which drives `fn`), in cores.
 */
export async function withServerCpu<T>(
  pids: number[],
  fn: () => Promise<T>,
): Promise<{ result: T; wallSec: number; cpuPerNodeSec: number[]; otherCpu: { utilization: number; irqUtilization: number } }> {
  const trees = pids.map(processTree);
  const cpu0 = treeCpu(trees);
  const sys0 = systemCpu();
  const self0 = process.cpuUsage();
  const t0 = performance.now();
  const result = await fn();
  const wallSec = (performance.now() - t0) / 1000;
  const cpu1 = treeCpu(trees);
  const sys1 = systemCpu();
  const self = process.cpuUsage(self0);
  const perNode = cpu1.map((c, i) => c - cpu0[i]);
  const serverSec = perNode.reduce((s, c) => s + c, 0);
  return {
    result,
    wallSec,
    cpuPerNodeSec: perNode,
    otherCpu: {
      utilization: (sys1.busySec - sys0.busySec - serverSec - (self.user + self.system) / 1e6) / wallSec,
      irqUtilization: (sys1.softirqSec - sys0.softirqSec) / wallSec,
    },
  };
}

export async function measure(opts: HarnessOptions, target: Target, req: LoadRequest, mo: MeasureOptions = {}): Promise<MeasureResult> {
  await checkOnce(target.baseUrl, req);
  const spec = {
    url: target.baseUrl + req.path,
    method: req.method,
    headers: req.headers,
    body: req.body,
    connections: opts.connections,
    pipelining: opts.pipelining,
    engine: opts.engine,
    ...(mo.rate !== undefined && mo.rate > 0 ? { rate: mo.rate } : {}),
  };
  const loadCpus = opts.pin ? LOAD_CPUS : undefined;
  if (opts.quietWaitSec > 0) await waitQuiet(opts.quietWaitSec);
  const warmupSec = mo.warmupSec ?? opts.warmupSec;
  log(`  ${warmupSec > 0 ? `warm-up ${warmupSec} s, then ` : ''}measuring ${mo.drive ? 'in phases' : `${opts.durationSec} s`}${mo.rate ? ` at a fixed ${mo.rate.toFixed(0)} req/s` : ''}`);
  // CPU of each node's whole process tree (a service may fork helpers).
  const trees = target.pids.map(processTree);
  // The window starts when the generator's measured run starts (after its in-process warm-up).
  let sys0 = systemCpu();
  let wall0 = performance.now();
  let cpu0 = treeCpu(trees);
  let bg: Background | undefined;
  let driven: Promise<void> | undefined;
  const onStart = (control: PhaseControl): void => {
    sys0 = systemCpu();
    wall0 = performance.now();
    cpu0 = treeCpu(trees);
    bg = mo.background?.();
    driven = mo.drive?.(control).finally(() => control.end());
    driven?.catch(() => {}); // awaited below, once the generator has ended
  };
  let load: LoadResult;
  let background: MeasureResult['background'];
  try {
    const phased = mo.drive !== undefined ? { phases: true, durationSec: 24 * 3600 } : { durationSec: opts.durationSec };
    load = await runLoadInChild({ ...spec, warmupSec, ...phased }, loadCpus, onStart);
    await driven;
  } finally {
    background = await bg?.stop();
  }
  const cpu1 = treeCpu(trees);
  const sys1 = systemCpu();
  const windowSec = (performance.now() - wall0) / 1000;
  const perNode = cpu1.map((c, i) => c - cpu0[i]);
  const cpuSec = perNode.reduce((s, c) => s + c, 0);
  const cpuUtilization = cpuSec / load.durationSec;
  const server = {
    cpuSec,
    cpuUtilization,
    cpuPerNode: perNode.map((c) => c / load.durationSec),
    cpuUsPerRequest: load.requests > 0 ? (cpuSec * 1e6) / load.requests : NaN,
    peakRssMiB: target.pids.map(peakRssMiB),
  };
  // Pinned, each side has one core: whoever is near 100 % is the bottleneck.
  const cap = opts.pin && canPin() ? 1 : os.availableParallelism();
  const serverFull = cpuUtilization >= 0.9 * cap;
  const generatorFull = load.generatorCpu.utilization >= 0.9;
  const bound = mo.rate ? 'paced' : serverFull && generatorFull ? 'both' : serverFull ? 'server' : generatorFull ? 'generator' : 'neither';
  const otherCpu = {
    utilization: (sys1.busySec - sys0.busySec - cpuSec - load.generatorCpu.userSec - load.generatorCpu.systemSec) / windowSec,
    irqUtilization: (sys1.softirqSec - sys0.softirqSec) / windowSec,
  };
  return { load, server, bound, otherCpu, background };
}

/** Fills `row.ratio` against the bare baseline row (when both were measured). */
export function setRatio(row: Measurement, base: Measurement | undefined): void {
  if (base?.load && base.server && row.load && row.server && base.load.rps > 0) {
    row.ratio = {
      rps: row.load.rps / base.load.rps,
      cpuPerRequest: row.server.cpuUsPerRequest / base.server.cpuUsPerRequest,
      p99: row.load.latencyMs.p99 / base.load.latencyMs.p99,
    };
  }
}

/** Fills `row.versus` against another measured row. */
export function setVersus(row: Measurement, other: Measurement | undefined): void {
  if (other?.load && other.server && row.load && row.server && other.load.rps > 0) {
    row.versus = {
      name: other.name,
      rps: row.load.rps / other.load.rps,
      cpuPerRequest: row.server.cpuUsPerRequest / other.server.cpuUsPerRequest,
    };
  }
}

// ------------------------------------------------------------ child helpers

/**
 * Runs `node [nodeArgs] script args` (pinned to `cpus` when given), resolves with the JSON object
 * of its last stdout line; rejects with its stderr on a non-zero exit or after `timeoutSec`.
 */
export async function runNodeJson<T>(
  script: string,
  args: string[],
  o: { nodeArgs?: string[]; cpus?: string; timeoutSec?: number } = {},
): Promise<T> {
  const [cmd, argv] = pinned(o.cpus, process.execPath, [...(o.nodeArgs ?? []), script, ...args]);
  const child = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'pipe'], cwd: ROOT });
  track(child);
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
  const timer = setTimeout(() => child.kill('SIGKILL'), (o.timeoutSec ?? 300) * 1000);
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', resolve);
  }).finally(() => clearTimeout(timer));
  const name = path.basename(script);
  if (code !== 0) throw new Error(`${name} exited with ${String(code)}: ${err.trim().slice(-2000)}`);
  try {
    return JSON.parse(out.trim().split('\n').pop() ?? '') as T;
  } catch {
    throw new Error(`${name} printed no JSON result: ${out.slice(-500)}\n${err.slice(-500)}`);
  }
}

/** Percentile (0..100) of an ascending-sorted array; NaN when empty. */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i];
}

/**
 * The most trustworthy of several measurements of the same thing: among those taken while the
 * rest of the machine used ≤ 10 % of a core, the fastest (a neighbour only ever slows a run down);
 * if none was that quiet, the quietest.
 */
export function quietest<T extends Pick<Measurement, 'load' | 'otherCpu'>>(rounds: T[]): T {
  const other = (m: T): number => m.otherCpu?.utilization ?? Infinity;
  const quiet = rounds.filter((m) => other(m) <= 0.1);
  if (quiet.length > 0) return quiet.sort((x, y) => (y.load?.rps ?? 0) - (x.load?.rps ?? 0))[0];
  return [...rounds].sort((x, y) => other(x) - other(y))[0];
}
