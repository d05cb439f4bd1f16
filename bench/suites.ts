/**
 * Three custom scenarios (custom-scenario.ts), more than one load run against one service:
 * flag-count scaling (several directly seeded services), snapshot build (a child process with
 * --expose-gc) and propagation across nodes (PostgreSQL + NATS). Each returns its own rows for the
 * runner's table. The other custom scenarios have files of their own; registry.ts lists them all.
 */
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import postgres from 'postgres';
import {
  HERE,
  SERVER_CPUS,
  log,
  makeContext,
  measure,
  percentile,
  quietest,
  runNodeJson,
  seededDataDir,
  setRatio,
  setVersus,
  startService,
  withServerCpu,
  workersLabel,
  type Measurement,
  type ServiceTarget,
} from './harness.js';
import { peakRssMiB } from './proc.js';
import type { CustomScenario } from './custom-scenario.js';
import type { HarnessOptions } from './scenario-types.js';
import { EVAL_BODY, benchConfig, createEvalKey, restEvalRequest } from './scenarios.js';
import type { SnapshotBuildResult } from './snapshot-build.js';

interface StartupFigures {
  flags: number;
  /** From spawning the node to its first HTTP answer. */
  startupMs: number;
  /** The node's own `snapshots loaded` figure (database reads + buildSnapshot of every organization). */
  snapshotLoadMs: number | undefined;
  peakRssMiB: number;
  evalWorkers: string;
}

const errText = (err: unknown): string => (err instanceof Error ? err.message : String(err));

async function startTimed(opts: HarnessOptions, adminKey: string, dir: string, env: Record<string, string>, flags: number): Promise<{ target: ServiceTarget; startup: StartupFigures }> {
  const t0 = performance.now();
  const target = await startService(opts, adminKey, { dataDir: dir, env, startupTimeoutSec: Math.max(opts.startupTimeoutSec, 300) });
  const startupMs = performance.now() - t0;
  return {
    target,
    startup: {
      flags,
      startupMs,
      snapshotLoadMs: target.snapshotLoad()?.ms,
      peakRssMiB: peakRssMiB(target.pids[0]),
      evalWorkers: workersLabel(opts, env),
    },
  };
}

const scalingEnv = (opts: HarnessOptions): Record<string, string> =>
  opts.scalingWorkers === undefined ? {} : { VEXIL_EVAL_WORKERS: opts.scalingWorkers };

export const flagsScaling: CustomScenario = {
  name: 'flags-scaling',
  description:
    'REST evaluation of one flag (bench-flag-<N/2>) with N = --scale-flags (10, 1000, 100000) flags in the organization, ' +
    'seeded directly in PGlite (bench/seed.ts) before the services start. All services run at once (idle but one) and are ' +
    'measured in --rounds (2) round-robin rounds; each row shows its most trustworthy round (harness quietest()). Cost ratio = CPU µs/req ' +
    'at N ÷ at the smallest N.',
  async run(rc) {
    const { opts } = rc;
    const env = scalingEnv(opts);
    type Entry = { n: number; row: Measurement; target?: ServiceTarget; evalKey?: string; rounds: Measurement[] };
    const entries: Entry[] = opts.scaleFlags.map((n) => ({
      n,
      rounds: [],
      row: {
        name: `flags-${n}`,
        description: `REST evaluation of bench-flag-${Math.floor(n / 2)} among ${n} seeded flags (each: one production config, one rule).`,
        status: 'ok',
        evalWorkers: workersLabel(opts, env),
      },
    }));
    try {
      // Seed and start every service first, so that the rounds can alternate between them.
      for (const e of entries) {
        try {
          log(`${e.row.name}: seeding ${e.n} flags directly`);
          const { dir, seed } = await seededDataDir(opts, rc.adminKey, e.n);
          log(`${e.row.name}: seeded in ${seed.ms.insert} ms; starting the service`);
          const started = await startTimed(opts, rc.adminKey, dir, env, e.n);
          e.target = started.target;
          e.evalKey = await createEvalKey(makeContext(opts, e.target, rc.adminKey));
          const st = started.startup;
          e.row.notes = [`seeded in ${seed.ms.insert} ms; service up in ${st.startupMs.toFixed(0)} ms, snapshot load ${st.snapshotLoadMs ?? '?'} ms`];
          e.row.extra = { seed, startup: st };
          rc.shared.set(`startup:${e.n}`, st);
        } catch (err) {
          e.row.status = 'failed';
          e.row.error = errText(err);
        }
      }
      for (let r = 0; r < opts.rounds; r++) {
        for (const e of entries) {
          if (e.target === undefined || e.evalKey === undefined) continue;
          log(`${e.row.name}: round ${r + 1}/${opts.rounds}`);
          try {
            const m: Measurement = { ...e.row, notes: undefined, extra: undefined };
            // Later rounds need only a short warm-up: the service is warm already.
            Object.assign(m, await measure(opts, e.target, restEvalRequest(e.evalKey, `bench-flag-${Math.floor(e.n / 2)}`), {
              warmupSec: r === 0 ? opts.warmupSec : Math.min(opts.warmupSec, 0.5),
            }));
            e.rounds.push(m);
          } catch (err) {
            e.row.status = 'failed';
            e.row.error = errText(err);
          }
        }
      }
    } finally {
      for (const e of entries) {
        // Peak RSS before the service goes away (the rounds' values are per round).
        await e.target?.stop();
      }
    }
    let first: Measurement | undefined;
    for (const e of entries) {
      if (e.rounds.length === 0) continue;
      const chosen = quietest(e.rounds);
      const { notes, extra, ...measured } = e.row;
      Object.assign(e.row, { ...measured, load: chosen.load, server: chosen.server, otherCpu: chosen.otherCpu, bound: chosen.bound });
      e.row.notes = notes;
      e.row.extra = {
        ...extra,
        rounds: e.rounds.map((m) => ({ load: m.load, server: m.server, otherCpu: m.otherCpu, bound: m.bound })),
        chosenRound: e.rounds.indexOf(chosen) + 1,
      };
      setRatio(e.row, rc.base);
      if (first === undefined) first = e.row;
      else setVersus(e.row, first);
      const perRound = e.rounds.map((m) =>
        `${m === chosen ? '[shown] ' : ''}${m.load?.rps.toFixed(0)} req/s, ${m.server?.cpuUsPerRequest.toFixed(1)} µs/req at other CPU ${((m.otherCpu?.utilization ?? NaN) * 100).toFixed(0)}%`);
      e.row.notes = [
        ...(e.row.notes ?? []),
        `rounds: ${perRound.join(' / ')}`,
        ...(e.row.versus ? [`vs ${e.row.versus.name}: req/s ×${e.row.versus.rps.toFixed(3)}, CPU/req ×${e.row.versus.cpuPerRequest.toFixed(3)}`] : []),
      ];
    }
    return entries.map((e) => e.row);
  },
};

export const snapshotBuild: CustomScenario = {
  name: 'snapshot',
  description:
    'buildSnapshot (dist/src/engine) of --snapshot-flags (100000) flags, each with one config with one rule, in a child ' +
    'with --expose-gc: cold and warm build time, heapUsed held by the snapshot after GC (its Flag/FlagConfig objects included), ' +
    'RSS growth; plus the service\'s own start-up `snapshots loaded` time on a database with that many flags.',
  async run(rc) {
    const { opts } = rc;
    const n = opts.snapshotFlags;
    const row: Measurement = { name: `snapshot-${n}`, description: this.description, status: 'ok' };
    try {
      log(`${row.name}: buildSnapshot in a child process`);
      const build = await runNodeJson<SnapshotBuildResult>(path.join(HERE, 'snapshot-build.js'), ['--flags', String(n), '--runs', '3'], {
        nodeArgs: ['--expose-gc'],
        cpus: opts.pin ? SERVER_CPUS : undefined,
        timeoutSec: 600,
      });
      let startup = rc.shared.get(`startup:${n}`) as StartupFigures | undefined;
      if (startup === undefined) {
        log(`${row.name}: seeding ${n} flags to time the service's start-up`);
        const { dir } = await seededDataDir(opts, rc.adminKey, n);
        const started = await startTimed(opts, rc.adminKey, dir, scalingEnv(opts), n);
        startup = started.startup;
        await started.target.stop();
      }
      row.evalWorkers = startup.evalWorkers;
      row.notes = [
        `buildSnapshot ${n} flags: cold ${build.buildMs.cold.toFixed(0)} ms (CPU ${build.buildMs.coldCpu.toFixed(0)} ms, GC threads included), warm ${build.buildMs.warmMedian?.toFixed(0) ?? '-'} ms`,
        `heap held ${build.heapMiB.snapshot.toFixed(0)} MiB (the input rows alone ${build.heapMiB.input.toFixed(0)} MiB), RSS +${build.rssMiB.snapshot.toFixed(0)} MiB`,
        `service start-up: snapshots loaded in ${startup.snapshotLoadMs ?? '?'} ms, up in ${startup.startupMs.toFixed(0)} ms, peak RSS ${startup.peakRssMiB.toFixed(0)} MiB`,
      ];
      row.extra = { build, serviceStartup: startup };
    } catch (err) {
      row.status = 'failed';
      row.error = errText(err);
    }
    return [row];
  },
};

/** POST /flags/<flag> on `baseUrl`; resolves with the answered variant key (or `HTTP <status>`). */
async function evalKeyOf(baseUrl: string, evalKey: string, flag = 'bench-flag-0'): Promise<string> {
  const r = await fetch(`${baseUrl}/flags/${flag}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-management-key': evalKey },
    body: EVAL_BODY,
    signal: AbortSignal.timeout(10_000),
  });
  const text = await r.text();
  if (r.status !== 200) return `HTTP ${r.status}`;
  return String((JSON.parse(text) as { key?: unknown }).key);
}

export const propagation: CustomScenario = {
  name: 'propagation',
  description:
    '--nodes (2) service nodes on one fresh PostgreSQL database (DATABASE_URL server) and NATS_URL: --changes (200) config ' +
    'changes of bench-flag-0 on node A (defaultVariantKey on/off, no rules); after each write is acknowledged, every other ' +
    'node is polled until it answers the new variant (delay = that answer\'s arrival − A\'s acknowledgement, the slowest node), ' +
    'and A is asked once (read-your-writes). Skipped without DATABASE_URL and NATS_URL.',
  async run(rc) {
    const { opts } = rc;
    const row: Measurement = { name: `propagation-${opts.nodes}n`, description: this.description, status: 'ok', evalWorkers: workersLabel(opts) };
    const dbUrl = process.env.DATABASE_URL;
    const natsUrl = process.env.NATS_URL;
    if (!dbUrl || !natsUrl) {
      row.status = 'skipped';
      row.notes = ['skipped: DATABASE_URL and NATS_URL must both be set (a PostgreSQL server and a NATS server)'];
      log(`${row.name}: ${row.notes[0]}`);
      return [row];
    }
    const name = `vexil_bench_${randomBytes(6).toString('hex')}`;
    const admin = postgres(dbUrl, { max: 1, onnotice: () => {}, connect_timeout: 5 });
    const nodes: ServiceTarget[] = [];
    let created = false;
    try {
      await admin.unsafe(`create database ${name}`);
      created = true;
      const u = new URL(dbUrl);
      u.pathname = `/${name}`;
      const cluster = { databaseUrl: u.toString(), natsUrl };
      log(`${row.name}: database ${name}; starting ${opts.nodes} nodes`);
      // Node A first (it migrates and bootstraps), then the others together.
      nodes.push(await startService(opts, rc.adminKey, { cluster, label: 'node-a' }));
      nodes.push(
        ...(await Promise.all(
          Array.from({ length: opts.nodes - 1 }, (_, i) => startService(opts, rc.adminKey, { cluster, label: `node-${String.fromCharCode(98 + i)}` })),
        )),
      );
      const [a, ...others] = nodes;
      const ctx = makeContext(opts, a, rc.adminKey);
      const evalKey = await createEvalKey(ctx);
      await ctx.api('POST', '/api/flags', {
        name: 'bench-flag-0',
        project: 'default',
        type: 'boolean',
        variants: [
          { key: 'on', value: true, valueType: 'boolean' },
          { key: 'off', value: false, valueType: 'boolean' },
        ],
      }, { expect: 201 });
      await ctx.api('POST', '/api/flags/bench-flag-0/configs', benchConfig('off', false), { expect: 200 });
      // Every node must see the flag before the clock starts.
      const ready = Date.now() + 15_000;
      for (const b of others) {
        while ((await evalKeyOf(b.baseUrl, evalKey)) !== 'off') {
          if (Date.now() > ready) throw new Error(`${b.baseUrl} did not see bench-flag-0 within 15 s`);
          await new Promise((r) => setTimeout(r, 20));
        }
      }
      log(`${row.name}: ${opts.changes} changes`);
      const TIMEOUT_MS = 5000;
      const delays: number[] = [];
      const writeMs: number[] = [];
      let current: 'on' | 'off' = 'off';
      let rywPass = 0;
      let rywTotal = 0;
      let timeouts = 0;
      let writeErrors = 0;
      const { cpuPerNodeSec, wallSec, otherCpu } = await withServerCpu(nodes.map((n) => n.pids[0]), async () => {
        for (let i = 0; i < opts.changes; i++) {
          const want: 'on' | 'off' = current === 'on' ? 'off' : 'on';
          const t0 = performance.now();
          let status = 0;
          try {
            const r = await fetch(`${a.baseUrl}/api/flags/bench-flag-0/configs`, {
              method: 'POST',
              headers: { 'content-type': 'application/json', 'x-management-key': rc.adminKey },
              body: JSON.stringify(benchConfig(want, false)),
              signal: AbortSignal.timeout(10_000),
            });
            await r.arrayBuffer();
            status = r.status;
          } catch {
            status = 0;
          }
          const tAck = performance.now();
          if (status !== 200) {
            writeErrors++;
            continue;
          }
          writeMs.push(tAck - t0);
          current = want;
          const ryw = evalKeyOf(a.baseUrl, evalKey).then((k) => k === want, () => false);
          const seen = others.map(async (b) => {
            for (;;) {
              let k = '';
              try {
                k = await evalKeyOf(b.baseUrl, evalKey);
              } catch {
                /* retried until the timeout */
              }
              const t = performance.now() - tAck;
              if (k === want) return t;
              if (t > TIMEOUT_MS) return Infinity;
            }
          });
          const [ok, ...d] = await Promise.all([ryw, ...seen]);
          rywTotal++;
          if (ok) rywPass++;
          const worst = Math.max(...(d as number[]));
          if (worst === Infinity) timeouts++;
          else delays.push(worst);
          // A short, varying pause so that changes do not line up with the nodes' timers.
          await new Promise((r) => setTimeout(r, 2 + (i % 7)));
        }
      });
      const sorted = [...delays].sort((x, y) => x - y);
      const w = [...writeMs].sort((x, y) => x - y);
      const prop = { p50: percentile(sorted, 50), p99: percentile(sorted, 99), max: sorted[sorted.length - 1] ?? NaN, count: sorted.length, timeouts };
      row.server = {
        cpuSec: cpuPerNodeSec.reduce((s, c) => s + c, 0),
        cpuUtilization: cpuPerNodeSec.reduce((s, c) => s + c, 0) / wallSec,
        cpuPerNode: cpuPerNodeSec.map((c) => c / wallSec),
        cpuUsPerRequest: NaN,
        peakRssMiB: nodes.map((n) => peakRssMiB(n.pids[0])),
      };
      row.otherCpu = otherCpu;
      row.notes = [
        `delay p50 ${prop.p50.toFixed(2)} ms, p99 ${prop.p99.toFixed(2)} ms, max ${prop.max.toFixed(2)} ms over ${prop.count} changes` +
          `${timeouts ? `, ${timeouts} not seen within ${TIMEOUT_MS} ms` : ''}${writeErrors ? `, ${writeErrors} writes failed` : ''}`,
        `same-node read-your-writes ${rywPass}/${rywTotal}; write latency p50 ${percentile(w, 50).toFixed(1)} ms, p99 ${percentile(w, 99).toFixed(1)} ms`,
      ];
      row.extra = {
        propagationMs: prop,
        readYourWrites: { pass: rywPass, total: rywTotal, rate: rywTotal === 0 ? NaN : rywPass / rywTotal },
        writeMs: { p50: percentile(w, 50), p99: percentile(w, 99), max: w[w.length - 1] ?? NaN, errors: writeErrors },
        database: 'postgresql (fresh database, dropped afterwards)',
      };
      if (writeErrors > 0 || timeouts > 0) row.status = 'failed';
      if (row.status === 'failed') row.error = row.notes[0];
    } catch (err) {
      row.status = 'failed';
      row.error = errText(err);
    } finally {
      await Promise.all(nodes.map((n) => n.stop()));
      if (created) {
        try {
          await admin.unsafe(`drop database if exists ${name} with (force)`);
        } catch (err) {
          log(`could not drop database ${name}: ${errText(err)}`);
        }
      }
      await admin.end({ timeout: 5 });
    }
    return [row];
  },
};
