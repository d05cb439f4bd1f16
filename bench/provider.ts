/**
 * `npm run bench -- provider` (docs/benchmarks.md, "In-process provider"): what the in-process
 * OpenFeature provider (packages/openfeature-provider, its built bundle) costs beside the same
 * evaluation over REST.
 *
 * 1. A node (pinned to CPU 0, VEXIL_EVAL_WORKERS=0) with flag `bench-split`: two rules (country ==
 *    NL → on; plan in [pro, team] → 50 % on / 50 % off), default off. In a child process pinned to
 *    CPU 1 (this file run as a script), a provider loads its feed and evaluates it for 1,000 users
 *    (plan pro: the split rule) three ways, each for VEXIL_BENCH_PROVIDER_SEC (2) s, best of 3:
 *    `provider.resolve` (synchronous), `await provider.resolveBooleanEvaluation` and `await
 *    client.getBooleanValue` (the OpenFeature client layer on top). Then the same evaluation over
 *    REST (`POST /flags/bench-split`), a closed-loop run of the harness (the node's one core).
 * 2. A node on a copy of the run's seeded 100,000-flag database (bench/seed.ts, once per run, as
 *    large-org): a child process starts a provider on it and reports how long initialize took
 *    (best of three providers in turn; aim ≤ 2 s), split into the snapshot request and decoding, and its memory (RSS and heap,
 *    before and after) and an evaluation.
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { CustomScenario } from './custom-scenario.js';
import { HERE, LOAD_CPUS, ROOT, log, makeContext, measure, runNodeJson, startService, workersLabel, type Measurement } from './harness.js';
import { startLargeOrg } from './large-org.js';
import { createEvalKey } from './scenarios.js';

const BUNDLE = path.join(ROOT, 'packages/openfeature-provider/dist/index.js');
const FLAG = 'bench-split';
const USERS = 1000;
const seconds = (): number => Number(process.env.VEXIL_BENCH_PROVIDER_SEC ?? '2');

const RULES = [
  { id: 'nl', priority: 1, conditions: [{ field: 'country', operator: '==', value: 'NL' }], allocations: [{ variantKey: 'on', percentage: 100 }] },
  {
    id: 'paid',
    priority: 2,
    conditions: [{ field: 'plan', operator: 'in', value: ['pro', 'team'] }],
    allocations: [
      { variantKey: 'on', percentage: 50 },
      { variantKey: 'off', percentage: 50 },
    ],
  },
];

interface ThroughputFigures {
  initMs: number;
  perSec: { resolve: number; resolveAsync: number; client: number };
  reasons: Record<string, number>;
}

interface LoadFigures {
  flags: number;
  initMs: number;
  snapshotMs: number;
  decodeMs: number;
  bytes: number;
  rssMiB: { before: number; after: number };
  heapMiB: { before: number; after: number };
  answer: unknown;
  initRuns: number[];
}

const MiB = 1024 * 1024;

/** Evaluations per second of `fn` (called with a user index), best of three runs of `sec` seconds. */
async function rate(sec: number, fn: (i: number) => unknown | Promise<unknown>, sync: boolean): Promise<number> {
  let best = 0;
  for (let round = 0; round < 3; round++) {
    let n = 0;
    const t0 = performance.now();
    const end = t0 + sec * 1000;
    while (performance.now() < end) {
      // 1,000 evaluations between clock reads.
      if (sync) for (let i = 0; i < 1000; i++) fn(i);
      else for (let i = 0; i < 1000; i++) await fn(i);
      n += 1000;
    }
    best = Math.max(best, n / ((performance.now() - t0) / 1000));
  }
  return best;
}

/** Child process, part 1: the three ways of evaluating. */
async function throughput(url: string, key: string): Promise<ThroughputFigures> {
  const { VexilProvider } = await import(pathToFileURL(BUNDLE).href);
  const { OpenFeature } = await import('@openfeature/server-sdk');
  const provider = new VexilProvider({ url, key, stage: 'production' });
  const t0 = performance.now();
  await OpenFeature.setProviderAndWait(provider);
  const initMs = performance.now() - t0;
  const client = OpenFeature.getClient();
  const contexts = Array.from({ length: USERS }, (_, i) => ({ targetingKey: `user-${i}`, plan: 'pro', country: 'DE' }));
  const reasons: Record<string, number> = {};
  for (const c of contexts) {
    const d = provider.resolve(FLAG, false, c, 'boolean');
    reasons[`${d.reason}/${d.flagMetadata?.reasonCode}/${String(d.value)}`] = (reasons[`${d.reason}/${d.flagMetadata?.reasonCode}/${String(d.value)}`] ?? 0) + 1;
  }
  const sec = seconds();
  const perSec = {
    resolve: await rate(sec, (i) => provider.resolve(FLAG, false, contexts[i], 'boolean'), true),
    resolveAsync: await rate(sec, (i) => provider.resolveBooleanEvaluation(FLAG, false, contexts[i]), false),
    client: await rate(sec, (i) => client.getBooleanValue(FLAG, false, contexts[i]), false),
  };
  await OpenFeature.close();
  return { initMs, perSec, reasons };
}

/** The parts of initialize, measured apart (in a function of their own, so that nothing of them stays reachable). */
async function apart(url: string, key: string, decodeFeed: (json: unknown) => unknown): Promise<{ snapshotMs: number; decodeMs: number; bytes: number; held: number }> {
  const s0 = performance.now();
  const res = await fetch(`${url}/sdk/v1/snapshot?stage=production`, { headers: { 'x-api-key': key } });
  const text = await res.text();
  const body = JSON.parse(text);
  const snapshotMs = performance.now() - s0;
  const d0 = performance.now();
  decodeFeed(body);
  return { snapshotMs, decodeMs: performance.now() - d0, bytes: text.length, held: body.flags.length };
}

/** Child process, part 2: loading a large feed. */
async function load(url: string, key: string, flags: number): Promise<LoadFigures> {
  const { VexilProvider } = await import(pathToFileURL(BUNDLE).href);
  const { decodeFeed } = await import('../src/engine/feed-decode.js');
  const { OpenFeature } = await import('@openfeature/server-sdk');
  const { snapshotMs, decodeMs, bytes, held } = await apart(url, key, decodeFeed);
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  const before = process.memoryUsage();
  // Three providers in turn (each closed before the next): the best initialize, memory after the first.
  const initRuns: number[] = [];
  let after = before;
  let answer: unknown;
  for (let round = 0; round < 3; round++) {
    const provider = new VexilProvider({ url, key, stage: 'production' });
    const t0 = performance.now();
    await OpenFeature.setProviderAndWait(provider);
    initRuns.push(performance.now() - t0);
    if (round === 0) {
      gc?.();
      after = process.memoryUsage();
      answer = await OpenFeature.getClient().getBooleanDetails(`bench-flag-${Math.floor(flags / 2)}`, false, { targetingKey: 'u1', country: 'NL' });
    }
    await OpenFeature.clearProviders();
    gc?.();
  }
  await OpenFeature.close();
  const initMs = Math.min(...initRuns);
  return {
    flags: held,
    initMs,
    snapshotMs,
    decodeMs,
    bytes,
    rssMiB: { before: before.rss / MiB, after: after.rss / MiB },
    heapMiB: { before: before.heapUsed / MiB, after: after.heapUsed / MiB },
    answer,
    initRuns,
  };
}

const f0 = (x: number) => x.toFixed(0);

export const provider: CustomScenario = {
  name: 'provider',
  description:
    'The in-process OpenFeature provider: evaluations/s on one core (CPU 1) for a two-rule flag with a split, through ' +
    'provider.resolve, resolveBooleanEvaluation and client.getBooleanValue, beside the same evaluation over REST (node on ' +
    'CPU 0); and initialize on a 100,000-flag feed (time, memory).',
  async run(rc) {
    const { opts } = rc;
    const rows: Measurement[] = [];
    const env = { VEXIL_EVAL_WORKERS: '0' };
    const target = await startService(opts, rc.adminKey, { env, label: 'provider' });
    try {
      const ctx = makeContext(opts, target, rc.adminKey);
      const key = await createEvalKey(ctx);
      await ctx.api('POST', '/api/flags', { name: FLAG, project: 'default', type: 'boolean', variants: [{ key: 'on', value: true, valueType: 'boolean' }, { key: 'off', value: false, valueType: 'boolean' }] });
      await ctx.api('POST', `/api/flags/${FLAG}/configs`, { stage: 'production', enabled: true, defaultVariantKey: 'off', rolloutPercentage: 100, rules: RULES });
      log('provider: in-process evaluation (child process on CPU 1)');
      const fig = await runNodeJson<ThroughputFigures>(path.join(HERE, 'provider.js'), ['throughput', target.baseUrl, key], { cpus: opts.pin ? LOAD_CPUS : undefined, timeoutSec: 120 });
      const describe = (how: string) => `${FLAG} (two rules, the second a 50/50 split; ${USERS} users on the split) through ${how}, one core, best of 3 × ${seconds()} s`;
      const row = (name: string, how: string, perSec: number, extra: Record<string, unknown> = {}): Measurement => ({
        name,
        description: describe(how),
        status: 'ok',
        notes: [`${f0(perSec)} evaluations/s (${(1e9 / perSec).toFixed(0)} ns each)`],
        extra: { evaluationsPerSec: perSec, ...extra },
      });
      rows.push(row('provider-resolve', 'provider.resolve (synchronous)', fig.perSec.resolve, { aim: 1_000_000, met: fig.perSec.resolve >= 1_000_000, reasons: fig.reasons, initMs: fig.initMs }));
      rows.push(row('provider-resolve-async', 'await provider.resolveBooleanEvaluation', fig.perSec.resolveAsync));
      rows.push(row('provider-client', 'await client.getBooleanValue (@openfeature/server-sdk)', fig.perSec.client, { clientLayerNs: 1e9 / fig.perSec.client - 1e9 / fig.perSec.resolveAsync }));
      log('provider: the same evaluation over REST');
      const rest = await measure(opts, target, {
        method: 'POST',
        path: `/flags/${FLAG}`,
        headers: { 'content-type': 'application/json', 'x-management-key': key },
        body: '{"userId":"user-1","stage":"production","context":{"plan":"pro","country":"DE"}}',
        expectStatus: 200,
      });
      rows.push({
        name: 'provider-rest',
        description: `POST /flags/${FLAG} with the same context (REST, node on CPU 0, VEXIL_EVAL_WORKERS=0), for comparison`,
        status: 'ok',
        evalWorkers: workersLabel(opts, env),
        ...rest,
        notes: [`${f0(rest.load!.rps)} evaluations/s over REST; the provider's resolve is ${(fig.perSec.resolve / rest.load!.rps).toFixed(0)} × that`],
      });
    } catch (err) {
      rows.push({ name: 'provider', description: this.description, status: 'failed', error: String(err instanceof Error ? err.stack : err) });
    } finally {
      await target.stop();
    }

    try {
      const large = await startLargeOrg(rc, 'provider-100k');
      try {
        const key = await createEvalKey(makeContext(opts, large.target, rc.adminKey));
        log(`provider: initialize on ${large.flags} flags (child process on CPU 1)`);
        const fig = await runNodeJson<LoadFigures>(path.join(HERE, 'provider.js'), ['load', large.target.baseUrl, key, String(large.flags)], {
          cpus: opts.pin ? LOAD_CPUS : undefined,
          nodeArgs: ['--expose-gc'],
          timeoutSec: 300,
        });
        rows.push({
          name: `provider-load-${large.flags}`,
          description: `VexilProvider initialize on a feed of ${large.flags} flags (bench/seed.ts): GET /sdk/v1/snapshot, parse, decode with the engine`,
          status: 'ok',
          notes: [
            `initialize ${f0(fig.initMs)} ms, best of 3 (${fig.initRuns.map(f0).join(', ')}; aim ≤ 2000): snapshot request + JSON.parse ${f0(fig.snapshotMs)} ms, decodeFeed ${f0(fig.decodeMs)} ms (measured apart); ${(fig.bytes / MiB).toFixed(1)} MiB of JSON`,
            `memory: RSS ${f0(fig.rssMiB.before)} → ${f0(fig.rssMiB.after)} MiB, heap ${f0(fig.heapMiB.before)} → ${f0(fig.heapMiB.after)} MiB (after GC)`,
            large.note,
          ],
          extra: { ...fig, aim: 2000, met: fig.initMs <= 2000 },
        });
      } finally {
        await large.target.stop();
      }
    } catch (err) {
      rows.push({ name: 'provider-load', description: this.description, status: 'failed', error: String(err instanceof Error ? err.stack : err) });
    }
    return rows;
  },
};

// Run as a script: the child process of the scenario.
if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const [what, url, key, flags] = process.argv.slice(2);
  const result = what === 'load' ? await load(url, key, Number(flags)) : await throughput(url, key);
  console.log(JSON.stringify(result));
  process.exit(0);
}
