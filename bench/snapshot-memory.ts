/**
 * snapshot-memory (docs/benchmarks.md, "Shared snapshots"): what the evaluation workers cost in
 * memory with many flags, and what the shared store (src/snapshots/shared-store.ts) costs per
 * change and per worker start.
 *
 *   npm run bench -- snapshot-memory [--snapshot-flags 100000]
 *
 * 1. Service: one database seeded with --snapshot-flags flags (bench/seed.ts), started twice in
 *    turn on copies of it: VEXIL_EVAL_WORKERS=0, then VEXIL_EVAL_WORKERS=4 with
 *    VEXIL_EVAL_HANDOFF=always. For each: VmRSS of the node process (every thread) after the
 *    snapshots loaded, and again after evaluating a spread of distinct flags (a fifth of them, at
 *    most 20,000) over REST, through the workers in the pooled run. The ratio pooled ÷ inline is
 *    the figure docs/snapshots.md, "Memory", reports (target ≤ 1.5).
 * 2. Store, in a child process (this file run directly): writing a synthetic organization of that
 *    many flags, one-flag changes (µs and bytes each), and what a starting worker costs (messages
 *    posted, then its first evaluation: a lazy compile).
 */
import { cpSync, mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Flag, FlagConfig } from '../src/domain/types.js';
import { buildSnapshot, compileFlag, evaluateFlag } from '../src/engine/index.js';
import { SharedStoreReader, SharedStoreWriter, type StoreMessage } from '../src/snapshots/shared-store.js';
import { syntheticFlag, syntheticOrg } from './snapshot-build.js';
import { HERE, freshDataDir, log, makeContext, runNodeJson, startService, tempDirs, type Measurement } from './harness.js';
import { EVAL_BODY, createEvalKey } from './scenarios.js';
import type { SeedResult } from './seed.js';
import type { CustomScenario } from './custom-scenario.js';

const MiB = 1024 * 1024;

/** Current resident set size (VmRSS) of a process, every thread included, in MiB. */
function vmRssMiB(pid: number): number {
  try {
    const m = readFileSync(`/proc/${pid}/status`, 'utf8').match(/^VmRSS:\s+(\d+)\s+kB/m);
    return m ? Number(m[1]) / 1024 : NaN;
  } catch {
    return NaN;
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface RunFigures {
  workers: number;
  rssLoadedMiB: number;
  rssAfterMiB: number;
  evaluated: number;
  evalSec: number;
  failures: number;
}

async function measureService(
  opts: Parameters<CustomScenario['run']>[0]['opts'],
  adminKey: string,
  dir: string,
  workers: number,
  flags: number,
  spread: number,
): Promise<RunFigures> {
  const env: Record<string, string> = { VEXIL_EVAL_WORKERS: String(workers) };
  if (workers > 0) env.VEXIL_EVAL_HANDOFF = 'always';
  const target = await startService(opts, adminKey, { dataDir: dir, env, startupTimeoutSec: Math.max(opts.startupTimeoutSec, 300) });
  try {
    const pid = target.pids[0];
    const evalKey = await createEvalKey(makeContext(opts, target, adminKey));
    await sleep(3000);
    const rssLoadedMiB = vmRssMiB(pid);
    const step = Math.max(1, Math.floor(flags / spread));
    let next = 0;
    let failures = 0;
    const t0 = performance.now();
    const one = async (): Promise<void> => {
      while (next < spread) {
        const flag = `bench-flag-${(next++ * step) % flags}`;
        const r = await fetch(`${target.baseUrl}/flags/${flag}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-management-key': evalKey },
          body: EVAL_BODY,
        });
        const body = (await r.json()) as { key?: string };
        if (r.status !== 200 || body.key !== 'on') failures++;
      }
    };
    await Promise.all(Array.from({ length: 32 }, one));
    const evalSec = (performance.now() - t0) / 1000;
    await sleep(3000);
    return { workers, rssLoadedMiB, rssAfterMiB: vmRssMiB(pid), evaluated: spread, evalSec, failures };
  } finally {
    await target.stop();
  }
}

export const snapshotMemory: CustomScenario = {
  name: 'snapshot-memory',
  description:
    'Node RSS (VmRSS, all threads) with --snapshot-flags (100000) seeded flags, VEXIL_EVAL_WORKERS=4 (hand-off always) against ' +
    'VEXIL_EVAL_WORKERS=0, after load and after evaluating a spread of distinct flags; plus the shared store\'s cost per ' +
    'one-flag change and per worker start (in a child process).',
  async run(rc) {
    const { opts } = rc;
    const n = opts.snapshotFlags;
    const spread = Math.min(20_000, Math.max(1, Math.floor(n / 5)));
    const row: Measurement = { name: `snapshot-memory-${n}`, description: this.description, status: 'ok', evalWorkers: '0 vs 4' };
    try {
      log(`${row.name}: seeding ${n} flags`);
      const seeded = await freshDataDir(opts);
      await runNodeJson<SeedResult>(path.join(HERE, 'seed.js'), ['--data-dir', seeded, '--flags', String(n), '--admin-key', rc.adminKey], { timeoutSec: 900 });
      const copy = (): string => {
        const d = mkdtempSync(path.join(os.tmpdir(), 'vexil-bench-'));
        tempDirs.add(d);
        cpSync(seeded, d, { recursive: true });
        return d;
      };
      log(`${row.name}: VEXIL_EVAL_WORKERS=0`);
      const inline = await measureService(opts, rc.adminKey, copy(), 0, n, spread);
      log(`${row.name}: VEXIL_EVAL_WORKERS=4`);
      const pooled = await measureService(opts, rc.adminKey, copy(), 4, n, spread);
      log(`${row.name}: shared store figures`);
      const store = await runNodeJson<StoreFigures>(path.join(HERE, 'snapshot-memory.js'), ['--flags', String(n)], { timeoutSec: 600 });
      const ratioLoaded = pooled.rssLoadedMiB / inline.rssLoadedMiB;
      const ratioAfter = pooled.rssAfterMiB / inline.rssAfterMiB;
      row.notes = [
        `RSS after load: workers=0 ${inline.rssLoadedMiB.toFixed(0)} MiB, workers=4 ${pooled.rssLoadedMiB.toFixed(0)} MiB, ratio ${ratioLoaded.toFixed(2)}`,
        `RSS after ${spread} distinct flags evaluated: workers=0 ${inline.rssAfterMiB.toFixed(0)} MiB, workers=4 ${pooled.rssAfterMiB.toFixed(0)} MiB, ratio ${ratioAfter.toFixed(2)} (target ≤ 1.5)`,
        `evaluations: ${inline.evalSec.toFixed(1)} s inline, ${pooled.evalSec.toFixed(1)} s pooled; failures ${inline.failures} / ${pooled.failures}`,
        `store: ${n} flags written in ${store.writeAllMs.toFixed(0)} ms (${(store.sharedBytes / MiB).toFixed(1)} MiB shared); one-flag change ${store.changeUs.toFixed(1)} µs, ${store.bytesPerChange.toFixed(0)} bytes written; ` +
          `worker start: ${store.replayMessages} message(s), ${store.replayMs.toFixed(2)} ms to replay, first evaluation ${store.firstEvalUs.toFixed(0)} µs (cold code); ` +
          `warm cache miss ${store.missUs.toFixed(1)} µs, hit ${store.hitUs.toFixed(2)} µs`,
      ];
      for (const l of row.notes) log(`${row.name}: ${l}`);
      if (inline.failures + pooled.failures > 0) throw new Error(`${inline.failures + pooled.failures} evaluations did not answer "on"`);
      row.extra = { inline, pooled, ratioLoaded, ratioAfter, store };
    } catch (err) {
      row.status = 'failed';
      row.error = err instanceof Error ? err.message : String(err);
    }
    return [row];
  },
};

// ------------------------------------------------------------------ store figures (child process)

export interface StoreFigures {
  flags: number;
  writeAllMs: number;
  sharedBytes: number;
  changes: number;
  /** Mean µs of one one-flag change (compile on the front thread excluded: the registry does that anyway). */
  changeUs: number;
  bytesPerChange: number;
  replayMessages: number;
  replayMs: number;
  firstEvalUs: number;
  /** Mean µs of a warm cache miss (read, JSON.parse, compileFlag) and of a hit, over distinct flags. */
  missUs: number;
  hitUs: number;
}

export function storeFigures(n: number, changes = 2000): StoreFigures {
  const org = syntheticOrg();
  const stamp = new Date().toISOString();
  const flags: Flag[] = [];
  const configs = new Map<string, FlagConfig[]>();
  for (let i = 0; i < n; i++) {
    const f = syntheticFlag(i, stamp);
    flags.push(f.flag);
    configs.set(f.flag.name, f.configs);
  }
  const snap = buildSnapshot(org, flags, configs);
  const posted: StoreMessage[] = [];
  const writer = new SharedStoreWriter((m) => posted.push(m));
  let t0 = performance.now();
  writer.update(org.id, snap, 'all');
  const writeAllMs = performance.now() - t0;
  const sharedBytes = writer.sharedBytes();

  const compiled = Array.from({ length: changes }, (_, i) => {
    const f = syntheticFlag(i % n, new Date(Date.now() + i).toISOString());
    return compileFlag(f.flag, f.configs);
  });
  const bytes0 = writer.stats.bytesWritten;
  let us = 0;
  for (let i = 0; i < changes; i++) {
    const c = compiled[i];
    snap.flags.set(c.flag.name, c);
    snap.org = { ...snap.org, version: snap.org.version + 1 };
    t0 = performance.now();
    writer.update(org.id, snap, { flag: c.flag.name });
    us += (performance.now() - t0) * 1000;
  }
  const bytesPerChange = (writer.stats.bytesWritten - bytes0) / changes;

  posted.length = 0;
  t0 = performance.now();
  writer.replay();
  const replayMs = performance.now() - t0;
  const replayMessages = posted.length;
  const reader = new SharedStoreReader(4096);
  for (const m of posted) reader.receive(m);
  t0 = performance.now();
  const view = reader.view(org.id)!;
  const f = view.flag(`bench-flag-${Math.floor(n / 2)}`)!;
  evaluateFlag(view.snapshot, f, { userId: 'u1', stage: 'production', clientId: null, context: { country: 'NL' } }, Date.now());
  const firstEvalUs = (performance.now() - t0) * 1000;
  const probes = Math.min(2000, n);
  const step = Math.max(1, Math.floor(n / probes));
  t0 = performance.now();
  for (let i = 0; i < probes; i++) view.flag(`bench-flag-${(i * step + 1) % n}`);
  const missUs = ((performance.now() - t0) * 1000) / probes;
  t0 = performance.now();
  for (let r = 0; r < 5; r++) for (let i = probes - 1000; i < probes; i++) view.flag(`bench-flag-${(i * step + 1) % n}`);
  const hitUs = ((performance.now() - t0) * 1000) / 5000;
  return { flags: n, writeAllMs, sharedBytes, changes, changeUs: us / changes, bytesPerChange, replayMessages, replayMs, firstEvalUs, missUs, hitUs };
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const i = process.argv.indexOf('--flags');
  const n = i >= 0 ? Number(process.argv[i + 1]) : 100_000;
  process.stdout.write(`${JSON.stringify(storeFigures(n))}\n`);
}
