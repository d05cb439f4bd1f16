/**
 * `npm run bench -- isolation` (docs/benchmarks.md, "Large organizations"): does management work
 * delay evaluation on the node that does it? One node with VEXIL_BENCH_ORG_FLAGS (100,000) flags,
 * pinned to CPU 0 (its evaluation workers too). Its REST evaluation capacity is measured briefly
 * (closed loop, 3 s), then one open-loop evaluation load runs at a fixed
 * VEXIL_BENCH_ISOLATION_FRACTION (0.35) of it (or at VEXIL_BENCH_ISOLATION_RATE req/s, to repeat a
 * run at the same rate) for the whole scenario, each request timed from the tick that issued it
 * (bench/load.ts, paced, phase mode). The run alternates VEXIL_BENCH_ISOLATION_SLICES (6) pairs of
 * slices of --duration (5) seconds:
 *
 *   quiet#i: evaluation only;
 *   admin#i: evaluation while the admin loop (bench/admin-loop.ts, a child on CPU 1 beside the
 *            generator) sends, one at a time: the unpaged flag list, a search, the next GraphQL page
 *            of 1,000 flags with configurations, the audit log;
 *   after#i: from the admin loop's stop until its last request has answered, then until no
 *            evaluation waits for a connection any more (the backlog the admin work left), then
 *            1 s: kept apart so that neither the admin slices nor the quiet ones absorb the tail.
 *
 * Two start-up costs are kept out of the slices, as the evaluation load's own warm-up is, and
 * reported apart: the admin loop sends one round of its requests before the evaluation load starts
 * (a node's first unpaged list of 100,000 flags builds the list fragments later lists reuse: it
 * took 2.0-4.1 s, later ones about 0.3 s; its times are the admin row's `warm-up round`), and the
 * evaluations of the first SETTLE_MS of the measured run, while the generator's new connections
 * open, count in no slice (evaluations of 34-56 ms in the first 250 ms in 9 of 16 runs; in the two
 * of them that logged the node's event loop, it never paused 15 ms, nor the generator's 8 ms:
 * docs/cluster.md, "What stalls the isolation check").
 *
 * Webhooks (issue 30, docs/webhooks.md): VEXIL_BENCH_ISOLATION_WEBHOOKS (10) endpoints subscribed
 * to `*`, local receivers in this process answering 204, get a message for each write of the
 * admin loop; its dispatcher runs in the node's management actor while evaluation is measured.
 * The admin row says how many of those messages were received (waiting up to 60 s after the last
 * slice for the last of them).
 *
 * Aims: evaluation p99 with the admin loop ≤ max(2 × quiet p99, quiet p99 + 2 ms); no
 * evaluation takes 50 ms (any slice); every admin request answers 200 (GraphQL without errors).
 *
 * Each slice also records what ran outside the bench (processes started, their CPU: OutsideBook),
 * and a slice that fails an aim on its own is named with it, so that a neighbour's burst on the
 * node's core is told from the node's own stall (docs/benchmarks.md, "Finding a stall").
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { ADMIN_ROUTES, WRITE_ROUTE, type AdminRecord } from './admin-loop.js';
import { LOAD_CPUS, ROOT, log, makeContext, measure, median, percentile, workersLabel, type Measurement } from './harness.js';
import type { PhaseResult } from './load.js';
import { cpuSeconds, idlePolicy, outsideDelta, outsideSample, peakRssMiB, processTree, startChild, systemCpu, type Child, type OutsideSample } from './proc.js';
import { Stretches } from './stretches.js';
import { ThreadBook } from './threads.js';
import { startLargeOrg } from './large-org.js';
import type { CustomScenario } from './custom-scenario.js';
import type { ScenarioContext } from './scenario-types.js';
import { createEvalKey, restEvalRequest } from './scenarios.js';

const KINDS = ['quiet', 'admin', 'after'] as const;
type Kind = (typeof KINDS)[number];
const SETTLE_MS = 1000;
/** Longest wait for the evaluation backlog to drain after an admin slice. */
const DRAIN_CAP_MS = 60_000;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const treeCpu = (pid: number): number => processTree(pid).reduce((s, p) => s + (Number.isFinite(cpuSeconds(p)) ? cpuSeconds(p) : 0), 0);

interface CpuMoment { wall: number; server: number; ours: number; busy: number }
interface CpuStretch { wallSec: number; serverSec: number; otherSec: number }

/** CPU of the node and of the rest of the machine (all but this runner's process tree), per kind of slice. */
class CpuBook extends Stretches<Kind, CpuMoment, CpuStretch> {
  constructor(serverPid: number) {
    super(
      () => ({ wall: performance.now(), server: treeCpu(serverPid), ours: treeCpu(process.pid), busy: systemCpu().busySec }),
      (acc, before, after) => ({
        wallSec: (acc?.wallSec ?? 0) + (after.wall - before.wall) / 1000,
        serverSec: (acc?.serverSec ?? 0) + after.server - before.server,
        otherSec: (acc?.otherSec ?? 0) + after.busy - before.busy - (after.ours - before.ours),
      }),
    );
  }
}

/**
 * Per slice (`quiet#1`, `admin#1`…), what ran outside the bench (this runner, the node, the
 * generator and the admin loop): processes started and their CPU (bench/proc.ts `outsideSample`).
 * A neighbour that starts a process on the node's core takes its share at the front's priority: on
 * this machine RabbitMQ starts an Erlang VM (`epmd-starter`) about every 45 s, 50-100 ms of CPU on
 * each core (docs/cluster.md, "What stalls the isolation check, continued").
 */
class OutsideBook extends Stretches<string, OutsideSample, ReturnType<typeof outsideDelta>> {
  constructor() {
    // Each slice has a name of its own (`admin#3`): its figures are set, not added to.
    super(() => outsideSample(new Set(processTree(process.pid))), (_acc, before, after) => outsideDelta(before, after));
  }

  /** "processes started / CPU ms (busiest name ms)" for one slice. */
  describe(slice: string): string {
    const d = this.byKind.get(slice);
    if (d === undefined) return '-';
    const [name, ms] = d.top[0] ?? ['', 0];
    return `${d.forks} / ${d.cpuMs.toFixed(0)}${ms > 0 ? ` (${name} ${ms.toFixed(0)})` : ''}`;
  }
}

/** Config upserts of `count` flags (not the evaluated one), so that GET /api/audit has a page to answer. */
async function auditEvents(ctx: ScenarioContext, count: number): Promise<void> {
  for (let i = 1; i <= count; i++) {
    await ctx.api('POST', `/api/flags/bench-flag-${i}/configs`, { stage: 'production', enabled: true, defaultVariantKey: 'off', rolloutPercentage: 100, rules: [] }, { expect: 200 });
  }
}

/** Per admin route: requests, outcomes, latency and size. */
function adminSummary(records: AdminRecord[]): { lines: string[]; byRoute: Record<string, unknown>; all200: boolean; other: Record<string, number> } {
  const byRoute: Record<string, unknown> = {};
  const lines: string[] = [];
  const other: Record<string, number> = {};
  for (const { route } of ADMIN_ROUTES) {
    const rs = records.filter((r) => r.route === route);
    if (rs.length === 0) continue;
    const ms = rs.map((r) => r.ms).sort((x, y) => x - y);
    const outcomes: Record<string, number> = {};
    for (const r of rs) {
      outcomes[r.outcome] = (outcomes[r.outcome] ?? 0) + 1;
      if (r.outcome !== '200') other[`${route}: ${r.outcome}`] = (other[`${route}: ${r.outcome}`] ?? 0) + 1;
    }
    const bytes = percentile(rs.map((r) => r.bytes).sort((x, y) => x - y), 50);
    const s = { count: rs.length, outcomes, ms: { p50: percentile(ms, 50), p99: percentile(ms, 99), max: ms[ms.length - 1] }, bytesMedian: bytes };
    byRoute[route] = s;
    lines.push(`${route}: ${s.count} × ${Object.entries(outcomes).map(([k, v]) => `${k}${v === s.count ? '' : ` ×${v}`}`).join(', ')}, ` +
      `${s.ms.p50.toFixed(0)} ms median, ${s.ms.max.toFixed(0)} ms max, ${(bytes / 1024).toFixed(0)} KiB`);
  }
  return { lines, byRoute, all200: records.length > 0 && Object.keys(other).length === 0, other };
}

const ms2 = (n: number): string => n.toFixed(2);

export const isolation: CustomScenario = {
  name: 'isolation',
  description:
    'Open-loop REST evaluation at a fixed share of capacity on a node with 100,000 flags (pinned to CPU 0), in alternating slices without and ' +
    'with an admin loop (unpaged list, search, GraphQL pages of 1,000 flags with configurations, audit log). Aims: admin-slice p99 ≤ ' +
    'max(2 × quiet p99, quiet p99 + 2 ms), no evaluation ≥ 50 ms, every admin request 200.',
  async run(rc) {
    const { opts } = rc;
    const slices = Number(process.env.VEXIL_BENCH_ISOLATION_SLICES ?? '6');
    const fraction = Number(process.env.VEXIL_BENCH_ISOLATION_FRACTION ?? '0.35');
    const fixedRate = process.env.VEXIL_BENCH_ISOLATION_RATE ? Number(process.env.VEXIL_BENCH_ISOLATION_RATE) : undefined;
    const sliceMs = opts.durationSec * 1000;
    const hooks = Number(process.env.VEXIL_BENCH_ISOLATION_WEBHOOKS ?? '10');
    // The webhook receivers: one server, one path per endpoint; messages of the admin's writes counted.
    const received = { all: 0, writes: 0, ids: new Set<string>() };
    const receiver = createServer((q, res) => {
      const chunks: Buffer[] = [];
      q.on('data', (c: Buffer) => chunks.push(c));
      q.on('end', () => {
        received.all++;
        try {
          if ((JSON.parse(Buffer.concat(chunks).toString('utf8')) as { type?: string }).type === 'flag.update') {
            received.writes++;
            received.ids.add(String(q.headers['webhook-id']));
          }
        } catch {
          /* counted in `all` only */
        }
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    const rxUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
    const { target, flags, note } = await startLargeOrg(rc, 'isolation', { VEXIL_WEBHOOK_ALLOW_HTTP: '1', VEXIL_WEBHOOK_ALLOW_PRIVATE: '1' });
    let admin: Child | undefined;
    try {
      const ctx = makeContext(opts, target, rc.adminKey);
      const req = restEvalRequest(await createEvalKey(ctx), `bench-flag-${Math.floor(flags / 2)}`);
      await auditEvents(ctx, 100);
      for (let i = 0; i < hooks; i++) await ctx.api('POST', '/api/webhooks', { url: `${rxUrl}/e${i}`, events: ['*'] }, { expect: 201 });
      log('isolation: evaluation capacity (closed loop)');
      const cap = await measure({ ...opts, durationSec: 3 }, target, req, { warmupSec: 1 });
      const capacity = cap.load?.rps ?? NaN;
      const rate = fixedRate ?? Math.max(100, Math.round(capacity * fraction));
      log(`isolation: capacity ${capacity.toFixed(0)} req/s; evaluating at ${rate} req/s ` +
        `(${fixedRate ? 'VEXIL_BENCH_ISOLATION_RATE' : `${fraction} × capacity`}), ${(rate / capacity * 100).toFixed(0)} % of it`);

      // The admin client shares the generator's core; in SCHED_IDLE it takes only what the generator leaves.
      admin = startChild('admin', ...idlePolicy(process.execPath, [path.join(ROOT, 'dist/bench/admin-loop.js'), JSON.stringify({
        baseUrl: target.baseUrl,
        key: rc.adminKey,
        pauseMs: Number(process.env.VEXIL_BENCH_ADMIN_PAUSE_MS ?? '0'),
        warm: true,
      })]), { cpus: opts.pin ? LOAD_CPUS : undefined, echo: opts.verbose });
      // Both waited for at once: a waiter sees only the lines printed after it.
      const [[, warmJson]] = await Promise.all([admin.waitForLine(/^warm (\{.*\})$/, 120_000), admin.waitForLine(/^ready$/, 120_000)]);
      const warmRecords = (JSON.parse(warmJson) as { records: AdminRecord[] }).records;
      const warmNote = `warm-up round before the slices (no evaluation load): ${warmRecords.map((r) => `${r.route} ${r.outcome} ${r.ms.toFixed(0)} ms`).join('; ')}`;
      log(`isolation: ${warmNote}`);
      const adminChild = admin;
      const book = new CpuBook(target.pids[0]);
      const threadBook = new ThreadBook<Kind>(target.pids[0]);
      const outside = new OutsideBook();
      const records: AdminRecord[] = [];
      /** Per admin slice: ms from the admin's last answer until no evaluation waited (Infinity: not within DRAIN_CAP_MS). */
      const drains: number[] = [];
      const m = await measure(opts, target, req, {
        rate,
        drive: async (gen) => {
          // Requests issued before the first phase count in none (the generator's connections opening).
          await sleep(SETTLE_MS);
          const enter = (kind: Kind, i: number): void => {
            book.enter(kind);
            threadBook.enter(kind);
            outside.enter(`${kind}#${i}`);
            gen.phase(`${kind}#${i}`);
          };
          for (let i = 1; i <= slices; i++) {
            log(`  slice pair ${i}/${slices}`);
            enter('quiet', i);
            await sleep(sliceMs);
            enter('admin', i);
            const answer = adminChild.waitForLine(/^\{.*\}$/, sliceMs + 300_000);
            adminChild.proc.kill('SIGUSR1');
            await sleep(sliceMs);
            enter('after', i);
            adminChild.proc.kill('SIGUSR2');
            records.push(...(JSON.parse((await answer)[0]) as { records: AdminRecord[] }).records);
            // Evaluations that queued behind the admin work must have left before the next quiet
            // slice starts, or it would measure the admin's backlog.
            const t0 = performance.now();
            const drained = await Promise.race([gen.drained().then(() => true), sleep(DRAIN_CAP_MS).then(() => false)]);
            drains.push(drained ? performance.now() - t0 : Infinity);
            await sleep(SETTLE_MS);
          }
          book.enter(undefined);
          threadBook.enter(undefined);
          outside.enter(undefined);
        },
      });
      const load = m.load;
      const phases = load?.phases;
      if (load === undefined || phases === undefined) throw new Error('the generator returned no phases');
      const adm = adminSummary(records);
      // Every admin write's message to every endpoint, waited for up to a minute after the last slice.
      const adminWrites = records.filter((r) => r.route === WRITE_ROUTE && r.outcome === '200').length;
      const expectedHooks = adminWrites * hooks;
      const hookWait = performance.now();
      while (received.ids.size < expectedHooks && performance.now() - hookWait < 60_000) await sleep(100);
      const hookNote =
        `webhooks: ${hooks} endpoints; ${adminWrites} admin writes; ${received.ids.size} of their ${expectedHooks} messages received ` +
        `(${received.writes} deliveries, ${received.all} requests in all), ` +
        (received.ids.size >= expectedHooks ? `the last ${(performance.now() - hookWait).toFixed(0)} ms after the last slice (0: before it ended)` : 'the rest not within 60 s of the last slice');
      log(`isolation: ${hookNote}`);
      const q = phases.quiet;
      const a = phases.admin;
      // The quiet reference is the median of the quiet slices' p99s: one slice hit by a neighbour's
      // stall would otherwise set the pooled quiet p99 and loosen the limit (a stall in an admin
      // slice can still fail the aim: repeat the run before believing a failure).
      const sliceP99s = (kind: Kind): number[] =>
        Array.from({ length: slices }, (_, i) => phases[`${kind}#${i + 1}`]?.latencyMs.p99).filter((x) => x !== undefined);
      const quietRef = median(sliceP99s('quiet'));
      const limit = Math.max(2 * quietRef, quietRef + 2);
      // Shown beside the target, not in it: the admin slices' own median, which one slice's stall
      // (the machine's or the server's) does not move, as it does not move the quiet reference.
      const adminMedian = median(sliceP99s('admin'));
      const worst = Math.max(...KINDS.map((k) => phases[k]?.latencyMs.max ?? 0));
      const failed = KINDS.reduce((s, k) => s + (phases[k] ? phases[k].errors + phases[k].non2xx : 0), 0);
      const perSlice = (kind: Kind): string =>
        Array.from({ length: slices }, (_, i) => phases[`${kind}#${i + 1}`]).map((p) => (p ? ms2(p.latencyMs.p99) : '-')).join(', ');
      const outsidePerSlice = (kind: Kind): string => Array.from({ length: slices }, (_, i) => outside.describe(`${kind}#${i + 1}`)).join(', ');
      // The slices that failed an aim on their own, with what ran outside the bench meanwhile.
      const failedSlices = KINDS.flatMap((kind) =>
        Array.from({ length: slices }, (_, i) => `${kind}#${i + 1}`).filter((n) => {
          const p = phases[n];
          return p !== undefined && ((kind === 'admin' && p.latencyMs.p99 > limit) || p.latencyMs.max >= 50);
        }),
      );
      const failedNote = failedSlices.length === 0 ? undefined :
        `slices that failed an aim on their own (p99 over the limit, or an evaluation of 50 ms), with processes started / CPU ms outside the bench meanwhile: ` +
        failedSlices.map((n) => `${n} p99 ${ms2(phases[n].latencyMs.p99)} ms, max ${ms2(phases[n].latencyMs.max)} ms: ${outside.describe(n)}`).join('; ');
      const common = [
        `fixed ${rate} req/s = ${(rate / capacity * 100).toFixed(0)} % of the ${capacity.toFixed(0)} req/s measured closed-loop; ${slices} × (${opts.durationSec} s quiet, ` +
          `${opts.durationSec} s admin, admin and evaluation backlog drain + ${SETTLE_MS / 1000} s)`,
        `generator: ${load.paced?.lateStarts ?? 0} requests waited for a free connection (at most ${load.paced?.maxBacklog ?? 0}), ` +
          `event-loop delay p99 ${ms2(load.generatorLoopDelayMs?.p99 ?? NaN)} ms, max ${ms2(load.generatorLoopDelayMs?.max ?? NaN)} ms`,
      ];
      const rows: Measurement[] = KINDS.filter((k) => phases[k] !== undefined).map((kind) => {
        const p: PhaseResult = phases[kind];
        const cpu = book.byKind.get(kind);
        const row: Measurement = {
          name: `isolation-${kind}`,
          description: kind === 'quiet' ? 'evaluation only' : kind === 'admin' ? 'evaluation while the admin loop runs' : 'from the admin loop\'s stop until its last answer and the evaluation backlog has drained, + 1 s',
          status: 'ok',
          evalWorkers: workersLabel(opts),
          load: { ...load, durationSec: p.wallSec, requests: p.requests, rps: p.requests / p.wallSec, latencyMs: p.latencyMs, non2xx: p.non2xx, errors: p.errors, timeouts: p.timeouts, statusCodes: p.statusCodes, phases: undefined },
          server: cpu && {
            cpuSec: cpu.serverSec,
            cpuUtilization: cpu.serverSec / cpu.wallSec,
            cpuPerNode: [cpu.serverSec / cpu.wallSec],
            cpuUsPerRequest: (cpu.serverSec * 1e6) / p.requests,
            peakRssMiB: [peakRssMiB(target.pids[0])],
          },
          otherCpu: cpu && { utilization: cpu.otherSec / cpu.wallSec, irqUtilization: NaN },
          bound: 'paced',
          notes: [
            `p99 per slice (ms): ${perSlice(kind)}; max ${ms2(p.latencyMs.max)} ms; generator event-loop delay max ${ms2(p.generatorLoopDelayMs.max)} ms`,
            `node threads, CPU/run-queue wait in ms per s (sys: of it in the kernel; flt: minor page faults per s): ${threadBook.describe(kind)}`,
            `outside the bench per slice (processes started / CPU ms, the busiest name): ${outsidePerSlice(kind)}`,
          ],
        };
        return row;
      });
      const quietRow = rows[0];
      quietRow.notes = [...(quietRow.notes ?? []), ...common, note, ...(failedNote ? [failedNote] : [])];
      const adminRow = rows.find((r) => r.name === 'isolation-admin');
      if (adminRow) adminRow.notes = [...(adminRow.notes ?? []), `admin loop: ${records.length} requests: ${adm.lines.join('; ')}`, warmNote, hookNote];
      const afterRow = rows.find((r) => r.name === 'isolation-after');
      if (afterRow) afterRow.notes = [...(afterRow.notes ?? []), `evaluation backlog drained ${drains.map((d) => (Number.isFinite(d) ? `${d.toFixed(0)} ms` : `not within ${DRAIN_CAP_MS / 1000} s`)).join(', ')} after the admin's last answer`];
      const targets = [
        {
          target: 'isolation: evaluation p99 with the admin loop ≤ max(2 × quiet p99, quiet p99 + 2 ms)',
          figure: `admin ${ms2(a?.latencyMs.p99 ?? NaN)} ms, quiet ${ms2(quietRef)} ms (median of the quiet slices' p99s; all quiet slices together ` +
            `${ms2(q.latencyMs.p99)} ms); limit ${ms2(limit)} ms; ×${((a?.latencyMs.p99 ?? NaN) / quietRef).toFixed(1)} ` +
            `(median of the admin slices' p99s ${ms2(adminMedian)} ms, ×${(adminMedian / quietRef).toFixed(1)})`,
          met: a !== undefined && a.latencyMs.p99 <= limit,
        },
        {
          target: 'isolation: no evaluation takes 50 ms or fails',
          figure: `max quiet ${ms2(q.latencyMs.max)}, admin ${ms2(a?.latencyMs.max ?? NaN)}, after ${ms2(phases.after?.latencyMs.max ?? NaN)} ms; ${failed} failed`,
          met: worst < 50 && failed === 0,
        },
        {
          target: 'isolation: every admin request answers 200',
          figure: adm.all200 ? `${records.length}/${records.length}` : `${records.length - Object.values(adm.other).reduce((s, v) => s + v, 0)}/${records.length}; ` +
            Object.entries(adm.other).map(([k, v]) => `${k} ×${v}`).join('; '),
          met: adm.all200,
        },
      ];
      quietRow.extra = { isolation: { rate, capacity, quietP99Ms: quietRef, limitMs: limit, fraction: fixedRate ? undefined : fraction, slices, sliceSec: opts.durationSec, phases, drainsMs: drains, cpu: Object.fromEntries(book.byKind), outside: Object.fromEntries(outside.byKind), admin: adm.byRoute, adminRecords: records, adminWarmRecords: warmRecords, webhooks: { endpoints: hooks, adminWrites, expected: expectedHooks, received: received.ids.size, deliveries: received.writes, requests: received.all } }, targets };
      for (const t of targets) log(`isolation: ${t.met ? 'met' : 'NOT met'}: ${t.target}: ${t.figure}`);
      if (failedNote) log(`isolation: ${failedNote}`);
      return rows;
    } finally {
      admin?.proc.kill('SIGTERM');
      await admin?.stop();
      await target.stop();
      receiver.closeAllConnections();
      await new Promise((r) => receiver.close(r));
    }
  },
};
