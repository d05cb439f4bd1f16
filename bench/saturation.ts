/**
 * `npm run bench -- saturation` (docs/cluster.md, "Management never starves"; issue 28, item 4):
 * does management still get through when evaluation saturates the node's core? The setup is the
 * one an SRE runs, in a default container:
 *
 *   - the node pinned to CPU 0 (its actor process too) and started without CAP_SYS_NICE
 *     (`setpriv --bounding-set -sys_nice --inh-caps -sys_nice`, when setpriv is installed);
 *   - a second process at normal priority spinning on CPU 0 (another tenant of the core);
 *   - closed-loop REST evaluation from CPU 1 (VEXIL_BENCH_SATURATION_CONNECTIONS, 50) for the whole
 *     run, so the front thread never idles.
 *
 * Then, one request at a time from this runner (moved to CPU 1 for the run), each timed to its
 * last byte:
 *
 *   reads     VEXIL_BENCH_SATURATION_READS (30) × GET /api/flags?limit=10        aim p99 ≤ 250 ms
 *   keys      5 × POST /api/keys (CanEvaluate)                                    aim ≤ 500 ms each
 *             and right after each, that key's first evaluation                  aim ≤ 50 ms each
 *   misses    5 × an evaluation with a key this node has never seen (401): a key-cache miss that
 *             asks the actor, as a key created on another node does             shown, no aim
 *   writes    3 × PUT /api/flags/{name}                                           shown, no aim
 *   schedules 3 × a change scheduled VEXIL_BENCH_SATURATION_LEAD_MS (5000) ahead: its lateness by
 *             the schedule's `appliedAt`, and as seen by an evaluation polled every 10 ms
 *                                                                                 aim ≤ 1 s (CONTRACT 15)
 *
 * Evaluation throughput and errors over the probes are shown beside them, and each thread's CPU
 * and run-queue wait per stretch (bench/threads.ts): the actor's under the load alone ("settle",
 * before any probe) is its own background work, and its CPU per key creation is the key stretch's
 * less that rate. VEXIL_BENCH_SATURATION_WARM_KEYS (0) keys are created before the load, so that the
 * probes run warm code. The isolation half of item 4 (evaluation p99 with an admin loop) is the
 * `isolation` scenario's.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { timed } from './admin-loop.js';
import { benchImage } from './container.js';
import { LOAD_CPUS, SERVER_CPUS, log, makeContext, percentile, startService, type Measurement } from './harness.js';
import { runLoadInChild, type PhaseControl } from './load.js';
import { canPin, processTree, procStat, startChild, type Child } from './proc.js';
import type { CustomScenario } from './custom-scenario.js';
import { ThreadBook } from './threads.js';
import { BOOLEAN_VARIANTS, createEvalKey, EVAL_BODY, restEvalRequest, seedBooleanFlags } from './scenarios.js';

const SETPRIV = ['/usr/bin/setpriv', '/bin/setpriv'].find((p) => existsSync(p));
const DROP_SYS_NICE = SETPRIV === undefined ? [] : [SETPRIV, '--bounding-set', '-sys_nice', '--inh-caps', '-sys_nice'];
const SCHEDULED_FLAG = 'bench-flag-scheduled';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const ms0 = (n: number): string => (Number.isFinite(n) ? n.toFixed(0) : String(n));

/** Whether `pid` holds CAP_SYS_NICE (bit 23 of CapEff). */
function hasSysNice(pid: number): boolean {
  const m = /^CapEff:\s*([0-9a-f]+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m !== null && (BigInt('0x' + m[1]) & (1n << 23n)) !== 0n;
}

/** The CPUs a process may run on (its affinity, as /proc says it). */
function cpusOf(pid: number): string {
  try {
    return /^Cpus_allowed_list:\s*(\S+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

/** Nice value and policy of a process's main thread (/proc/<pid>/stat fields 19 and 41). */
function schedOf(pid: number): string {
  try {
    const st = procStat(`/proc/${pid}/stat`);
    const policy = ['SCHED_OTHER', 'SCHED_FIFO', 'SCHED_RR', 'SCHED_BATCH', '4', 'SCHED_IDLE'][st.field(41)] ?? String(st.field(41));
    return `nice ${st.field(19)}, ${policy}`;
  } catch {
    return 'gone';
  }
}

/** This process's CPU affinity, as taskset prints it (restored after the run). */
function affinity(): string | undefined {
  const r = spawnSync('taskset', ['-p', '-c', String(process.pid)], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim().split(':').pop()?.trim() : undefined;
}

function setAffinity(cpus: string): void {
  spawnSync('taskset', ['-a', '-p', '-c', cpus, String(process.pid)], { stdio: 'ignore' });
}

const STRETCHES = ['settle', 'reads', 'keys', 'misses', 'puts', 'schedules'] as const;
type Stretch = (typeof STRETCHES)[number];

/** The actor's CPU per request of a stretch, less what it spends per second under load alone (the settle stretch). */
function actorCpuPer(threads: ThreadBook<Stretch>, kind: Stretch, n: number): string {
  const idle = threads.total('settle', 'actor');
  const busy = threads.total(kind, 'actor');
  if (idle.wallSec === 0 || busy.wallSec === 0 || n === 0) return 'not measured';
  const ms = ((busy.cpuSec - (idle.cpuSec / idle.wallSec) * busy.wallSec) * 1000) / n;
  return `${ms.toFixed(1)} ms (${(busy.cpuSec * 1000).toFixed(0)} ms in ${busy.wallSec.toFixed(1)} s for ${n}; ${((idle.cpuSec * 1000) / idle.wallSec).toFixed(1)} ms/s while settling)`;
}

interface Sample {
  ms: number;
  status: number;
}

const summary = (xs: Sample[]): string => {
  const ms = xs.map((x) => x.ms).sort((a, b) => a - b);
  const statuses = [...new Set(xs.map((x) => x.status))].join('/');
  return `${xs.length} × ${statuses}: median ${ms0(percentile(ms, 50))} ms, p99 ${ms0(percentile(ms, 99))} ms, max ${ms0(ms[ms.length - 1] ?? NaN)} ms`;
};

async function send(url: string, method: string, key: string, body?: unknown): Promise<Sample & { text: string }> {
  const t0 = performance.now();
  try {
    const r = await fetch(url, {
      method,
      headers: { 'x-management-key': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
      signal: AbortSignal.timeout(60_000),
    });
    const text = await r.text();
    return { ms: performance.now() - t0, status: r.status, text };
  } catch (err) {
    return { ms: performance.now() - t0, status: 0, text: (err as Error).message };
  }
}

export const saturation: CustomScenario = {
  name: 'saturation',
  description:
    'Management on a saturated core without CAP_SYS_NICE: node pinned to CPU 0 beside a spinning process of normal priority, closed-loop ' +
    'evaluation from CPU 1. Aims: paged admin read p99 ≤ 250 ms, key creation ≤ 500 ms, the new key\'s first evaluation ≤ 50 ms, ' +
    'a scheduled change applied ≤ 1 s after its time.',
  async run(rc) {
    const { opts } = rc;
    if (!opts.pin || !canPin()) {
      return [{ name: 'saturation', description: 'needs taskset and 2 CPUs (pinning)', status: 'not available' }];
    }
    const reads = Number(process.env.VEXIL_BENCH_SATURATION_READS ?? '30');
    const connections = Number(process.env.VEXIL_BENCH_SATURATION_CONNECTIONS ?? '50');
    const leadMs = Number(process.env.VEXIL_BENCH_SATURATION_LEAD_MS ?? '5000');
    const warmKeys = Number(process.env.VEXIL_BENCH_SATURATION_WARM_KEYS ?? '0');
    const target = await startService(opts, rc.adminKey, { label: 'saturation', wrap: DROP_SYS_NICE });
    const ownCpus = affinity();
    let busy: Child | undefined;
    let control: PhaseControl | undefined;
    try {
      const ctx = makeContext(opts, target, rc.adminKey);
      const base = target.baseUrl;
      await seedBooleanFlags(ctx, 50);
      await ctx.api('POST', '/api/flags', { name: SCHEDULED_FLAG, project: 'default', type: 'boolean', variants: BOOLEAN_VARIANTS }, { expect: 201 });
      await ctx.api('POST', `/api/flags/${SCHEDULED_FLAG}/configs`, { stage: 'production', enabled: true, defaultVariantKey: 'on', rolloutPercentage: 100, rules: [] }, { expect: 200 });
      const evalKey = await createEvalKey(ctx);
      // Keys created before the load (none by default): the probes' key creations then run warm
      // code, which tells the cost of the first writes of a kind (interpreted, compiled meanwhile)
      // from the steady one.
      for (let i = 0; i < warmKeys; i++) await ctx.api('POST', '/api/keys', { name: `warm-${i}`, permissions: ['CanEvaluate'], application: 'default' }, { expect: 201 });
      const req = restEvalRequest(evalKey);
      const nodePid = target.pids[0];
      const actorPid = processTree(nodePid).find((p) => p !== nodePid);
      const image = benchImage();
      const how = image !== undefined
        ? `in a container of ${image} (the runtime's default capabilities; CPUs ${cpusOf(nodePid)})`
        : SETPRIV === undefined ? 'WITH its capabilities (setpriv is not installed)' : 'started under setpriv without CAP_SYS_NICE';
      const setup = [
        `node ${how}: CAP_SYS_NICE ${hasSysNice(nodePid) ? 'held' : 'not held'}`,
        `front ${schedOf(nodePid)}; actor ${actorPid === undefined ? 'not found' : schedOf(actorPid)} (before the load)`,
      ];
      log(`saturation: ${setup.join('; ')}`);

      // Another tenant of the node's core, at normal priority.
      busy = startChild('busy', process.execPath, ['-e', 'for (;;);'], { cpus: SERVER_CPUS });
      // The probes are sent from the generator's core, never from the node's.
      setAffinity(LOAD_CPUS);
      let onStart!: (c: PhaseControl) => void;
      const started = new Promise<PhaseControl>((r) => (onStart = r));
      const loading = runLoadInChild(
        { url: base + req.path, method: req.method, headers: req.headers, body: req.body, connections, durationSec: 3600, engine: 'lean', phases: true, warmupSec: 0 },
        LOAD_CPUS,
        onStart,
      );
      loading.catch(() => {});
      control = await started;
      control.phase('saturating');
      // Each thread's CPU and run-queue wait per stretch: what the actor does under load before any
      // admin request (its own background work), and what each kind of probe costs it.
      const threads = new ThreadBook<Stretch>(nodePid);
      threads.enter('settle');
      log(`saturation: ${connections} connections evaluating in a closed loop, a spinner on CPU ${SERVER_CPUS}; 3 s to settle`);
      await sleep(3000);
      control.phase('probes');
      const actorSched = actorPid === undefined ? 'not found' : schedOf(actorPid);

      threads.enter('reads');
      log(`saturation: ${reads} paged admin reads`);
      const readSamples: Sample[] = [];
      for (let i = 0; i < reads; i++) {
        const r = await timed(base, rc.adminKey, '/api/flags?limit=10', { timeoutMs: 60_000 });
        readSamples.push({ ms: r.ms, status: r.status });
        await sleep(100);
      }

      threads.enter('keys');
      log('saturation: key creations, each followed by its first evaluation');
      const created: Sample[] = [];
      const firstEvals: Sample[] = [];
      for (let i = 0; i < 5; i++) {
        const c = await send(`${base}/api/keys`, 'POST', rc.adminKey, { name: `sat-${i}`, permissions: ['CanEvaluate'], application: 'default' });
        created.push(c);
        let key = '';
        try {
          key = (JSON.parse(c.text) as { key: string }).key;
        } catch {
          // no key: its evaluation answers 401
        }
        firstEvals.push(await send(base + req.path, 'POST', key, EVAL_BODY));
        await sleep(200);
      }

      threads.enter('misses');
      log('saturation: key-cache misses (keys this node never saw)');
      const misses: Sample[] = [];
      for (let i = 0; i < 5; i++) {
        misses.push(await send(base + req.path, 'POST', randomBytes(32).toString('hex'), EVAL_BODY));
        await sleep(200);
      }

      threads.enter('puts');
      log('saturation: flag updates');
      const puts: Sample[] = [];
      for (let i = 0; i < 3; i++) {
        puts.push(await send(`${base}/api/flags/bench-flag-1`, 'PUT', rc.adminKey, { description: `saturation ${i}` }));
        await sleep(200);
      }

      threads.enter('schedules');
      log(`saturation: scheduled changes (${leadMs} ms ahead)`);
      const schedules: { applied: number; seen: number; status: number; note?: string }[] = [];
      const evalScheduled = (): Promise<Sample & { text: string }> => send(`${base}/flags/${SCHEDULED_FLAG}`, 'POST', evalKey, EVAL_BODY);
      // Each schedule flips the configuration's default variant, so that evaluation sees it apply.
      let variant = 'on';
      for (let i = 0; i < 3; i++) {
        const before = (await evalScheduled()).text;
        const at = Date.now() + leadMs;
        const s = await send(`${base}/api/flags/${SCHEDULED_FLAG}/schedules`, 'POST', rc.adminKey, {
          at: new Date(at).toISOString(),
          stage: 'production',
          config: { stage: 'production', enabled: true, defaultVariantKey: variant === 'on' ? 'off' : 'on', rolloutPercentage: 100, rules: [] },
        });
        if (s.status !== 201) {
          schedules.push({ applied: NaN, seen: NaN, status: s.status, note: s.text.slice(0, 200) });
          continue;
        }
        const id = (JSON.parse(s.text) as { id: string }).id;
        let seen = NaN;
        for (const deadline = at + 30_000; Date.now() < deadline; ) {
          const e = await evalScheduled();
          if (e.status === 200 && e.text !== before) {
            seen = Date.now() - at;
            break;
          }
          await sleep(10);
        }
        const list = await send(`${base}/api/flags/${SCHEDULED_FLAG}/schedules`, 'GET', rc.adminKey);
        const mine = (JSON.parse(list.text) as { id: string; appliedAt: string | null; status: string }[]).find((x) => x.id === id);
        const applied = mine?.appliedAt ? Date.parse(mine.appliedAt) - at : NaN;
        if (mine?.status === 'applied') variant = variant === 'on' ? 'off' : 'on';
        schedules.push({ applied, seen, status: s.status, note: mine?.status });
      }
      threads.enter(undefined);
      control.end();
      control = undefined;
      const load = await loading;
      const probes = load.phases?.probes;

      const readMs = readSamples.map((x) => x.ms).sort((a, b) => a - b);
      const readP99 = percentile(readMs, 99);
      const maxOf = (xs: Sample[]): number => Math.max(...xs.map((x) => x.ms));
      const allStatus = (xs: Sample[], s: number): boolean => xs.every((x) => x.status === s);
      const worstSchedule = Math.max(...schedules.map((s) => (Number.isFinite(s.applied) ? s.applied : Infinity)));
      const targets = [
        {
          target: `saturation: paged admin read p99 ≤ 250 ms (${reads} samples)`,
          figure: summary(readSamples),
          met: readSamples.length >= 20 && readP99 <= 250 && allStatus(readSamples, 200),
        },
        { target: 'saturation: key creation ≤ 500 ms', figure: summary(created), met: maxOf(created) <= 500 && allStatus(created, 201) },
        { target: "saturation: a new key's first evaluation ≤ 50 ms", figure: summary(firstEvals), met: maxOf(firstEvals) <= 50 && allStatus(firstEvals, 200) },
        {
          target: 'saturation: a scheduled change applies ≤ 1 s after its time',
          figure: `applied ${schedules.map((s) => `${ms0(s.applied)} ms`).join(', ')} after its time (appliedAt); seen by evaluation ` +
            `${schedules.map((s) => `${ms0(s.seen)} ms`).join(', ')}${schedules.some((s) => s.status !== 201) ? `; ${schedules.map((s) => `${s.status} ${s.note ?? ''}`).join('; ')}` : ''}`,
          met: worstSchedule <= 1000,
        },
      ];
      const notes = [
        ...setup,
        `actor during the load: ${actorSched}`,
        ...STRETCHES.map((k) => `node threads, CPU/run-queue wait in ms per s, ${k}: ${threads.describe(k)}`),
        `actor CPU per key creation, less its rate while settling: ${actorCpuPer(threads, 'keys', created.length)}`,
        `key-cache misses (a key never seen here, 401; what a key created on another node costs): ${summary(misses)}`,
        `PUT /api/flags/{name}: ${summary(puts)}`,
        `evaluation during the probes: ${probes ? `${(probes.requests / probes.wallSec).toFixed(0)} req/s, p99 ${probes.latencyMs.p99.toFixed(1)} ms, ` +
          `${probes.errors} errors, ${probes.non2xx} non-2xx` : 'no figures'}`,
      ];
      for (const t of targets) log(`saturation: ${t.met ? 'met' : 'NOT met'}: ${t.target}: ${t.figure}`);
      for (const n of notes) log(`saturation: ${n}`);
      const row: Measurement = {
        name: 'saturation',
        description: 'management requests on a saturated core without CAP_SYS_NICE (closed-loop evaluation, a spinner beside the node)',
        status: 'ok',
        load: probes ? { ...load, durationSec: probes.wallSec, requests: probes.requests, rps: probes.requests / probes.wallSec, latencyMs: probes.latencyMs, non2xx: probes.non2xx, errors: probes.errors, timeouts: probes.timeouts, statusCodes: probes.statusCodes, phases: undefined } : undefined,
        bound: 'server',
        notes,
        extra: {
          threads: Object.fromEntries([...threads.byKind].map(([k, v]) => [k, { wallSec: v.wallSec, threads: Object.fromEntries(v.threads) }])),
          saturation: { reads: readSamples, keys: created, firstEvaluations: firstEvals, misses, puts, schedules, connections, leadMs },
          targets,
        },
      };
      return [row];
    } finally {
      control?.end();
      busy?.proc.kill('SIGKILL');
      await busy?.stop();
      if (ownCpus !== undefined) setAffinity(ownCpus);
      await target.stop();
    }
  },
};
