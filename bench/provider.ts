/**
 * `npm run bench -- provider` (docs/benchmarks.md, "In-process provider"): what the in-process
 * OpenFeature provider (packages/openfeature-provider, its built bundle) costs beside the same
 * evaluation over REST.
 *
 * 1. A node (pinned to CPU 0, VEXIL_EVAL_WORKERS=0) with flag `bench-split`: two rules (country ==
 *    NL → on; plan in [pro, team] → 50 % on / 50 % off), default off. In a child process pinned to
 *    CPU 1 (this file run as a script), a provider loads its feed and evaluates it for 1,000 users
 *    (plan pro: the split rule), one evaluation after another, three ways: `provider.resolve`
 *    (synchronous, Vexil only), `await provider.resolveBooleanEvaluation` (the OpenFeature provider
 *    interface, what the SDK calls) and `await client.getBooleanValue` (the OpenFeature client on
 *    top); each the median of VEXIL_BENCH_PROVIDER_ROUNDS (9) rounds of VEXIL_BENCH_PROVIDER_SEC
 *    (0.5) s, with the spread. With `VEXIL_BENCH_BASE_PROVIDER=<another build's
 *    packages/openfeature-provider/dist/index.js>`, that bundle is copied under dist/bench (so that
 *    it imports this tree's `@openfeature/server-sdk`) and measured in the same child, on a domain
 *    of its own over the same node, the builds alternating round by round (the order swapped every
 *    pair): each row then gives this build ÷ base, the median of the pairs with their range. Then
 *    the same evaluation over REST (`POST /flags/bench-split`), a closed-loop run of the harness
 *    (the node's one core).
 * 2. A node on a copy of the run's seeded 100,000-flag database (bench/seed.ts, once per run, as
 *    large-org): a child process starts a provider on it and reports how long initialize took
 *    (best of three providers in turn; aim ≤ 2 s), split into the snapshot request and decoding, and its memory (RSS and heap,
 *    before and after) and an evaluation. VEXIL_BENCH_PROVIDER_LOAD=0 leaves this part out.
 */
import { copyFileSync, mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { CustomScenario } from './custom-scenario.js';
import { HERE, LOAD_CPUS, ROOT, log, makeContext, measure, runNodeJson, startService, workersLabel, type Measurement } from './harness.js';
import { startLargeOrg } from './large-org.js';
import { createEvalKey } from './scenarios.js';

const BUNDLE = path.join(ROOT, 'packages/openfeature-provider/dist/index.js');
const FLAG = 'bench-split';
const USERS = 1000;
/** Seconds of one measured round (VEXIL_BENCH_PROVIDER_SEC, 0.5) and rounds per way and build (VEXIL_BENCH_PROVIDER_ROUNDS, 9). */
const seconds = (): number => Number(process.env.VEXIL_BENCH_PROVIDER_SEC ?? '0.5');
const roundCount = (): number => Math.max(1, Math.floor(Number(process.env.VEXIL_BENCH_PROVIDER_ROUNDS ?? '9')));
/** Where a base build's bundle is copied, so that it imports the same `@openfeature/server-sdk` as this tree's (one OpenFeature API object). */
const BASE_COPY = path.join(ROOT, 'dist/bench/base-provider/index.js');

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

/** The three ways of evaluating, in the order measured. */
const WAYS = ['resolve', 'resolveAsync', 'client'] as const;
type Way = (typeof WAYS)[number];

/** Rounds of one way and one build: evaluations/s of each round, and their median and spread. */
interface Rounds {
  rounds: number[];
  median: number;
  min: number;
  max: number;
}

interface BuildFigures {
  /** `new` (this tree's bundle) or `base` (VEXIL_BENCH_BASE_PROVIDER). */
  label: string;
  bundle: string;
  initMs: number;
  perSec: Record<Way, Rounds>;
  reasons: Record<string, number>;
}

interface ThroughputFigures {
  builds: BuildFigures[];
  /** With a base build: new ÷ base of each pair of rounds (taken back to back, the order swapped every pair). */
  ratios?: Record<Way, Rounds>;
  /** os.loadavg() (1 min) before and after: the machine's state while measuring. */
  loadAvg: { before: number; after: number };
  roundSec: number;
  roundCount: number;
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

/** Evaluations per second of `fn` (called with a user index) over one round of `sec` seconds. */
async function round(sec: number, fn: (i: number) => unknown, sync: boolean): Promise<number> {
  let n = 0;
  const t0 = performance.now();
  const end = t0 + sec * 1000;
  while (performance.now() < end) {
    // 1,000 evaluations between clock reads, one after another (each awaited when asynchronous).
    if (sync) for (let i = 0; i < 1000; i++) fn(i);
    else for (let i = 0; i < 1000; i++) await fn(i);
    n += 1000;
  }
  return n / ((performance.now() - t0) / 1000);
}

function summary(rounds: number[]): Rounds {
  const s = [...rounds].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return { rounds, median: s.length % 2 === 1 ? s[mid] : (s[mid - 1] + s[mid]) / 2, min: s[0], max: s[s.length - 1] };
}

/**
 * Child process, part 1: each build's provider (this tree's bundle, and the base build's when
 * given) on an OpenFeature domain of its own, over the same node; the three ways measured in
 * rounds, the builds alternating round by round (the order swapped every pair) so that both see
 * the same machine.
 */
async function throughput(url: string, key: string, bundles: string[]): Promise<ThroughputFigures> {
  const { OpenFeature } = await import('@openfeature/server-sdk');
  const loadBefore = os.loadavg()[0];
  const contexts = Array.from({ length: USERS }, (_, i) => ({ targetingKey: `user-${i}`, plan: 'pro', country: 'DE' }));
  const builds = [];
  for (const [b, bundle] of bundles.entries()) {
    const { VexilProvider } = await import(pathToFileURL(bundle).href);
    const provider = new VexilProvider({ url, key, stage: 'production' });
    const domain = `vexil-bench-${b}`;
    const t0 = performance.now();
    await OpenFeature.setProviderAndWait(domain, provider);
    const initMs = performance.now() - t0;
    const client = OpenFeature.getClient(domain);
    const reasons: Record<string, number> = {};
    for (const c of contexts) {
      const d = provider.resolve(FLAG, false, c, 'boolean');
      const k = `${d.reason}/${d.flagMetadata?.reasonCode}/${String(d.value)}`;
      reasons[k] = (reasons[k] ?? 0) + 1;
    }
    // What users call: the synchronous Vexil-only method, the provider interface the SDK calls (awaited, with the SDK's logger argument), the client.
    const logger = console;
    const fns: Record<Way, [(i: number) => unknown, boolean]> = {
      resolve: [(i) => provider.resolve(FLAG, false, contexts[i], 'boolean'), true],
      resolveAsync: [(i) => provider.resolveBooleanEvaluation(FLAG, false, contexts[i], logger), false],
      client: [(i) => client.getBooleanValue(FLAG, false, contexts[i]), false],
    };
    builds.push({ label: b === 0 ? 'new' : 'base', bundle, initMs, reasons, fns });
  }
  const sec = seconds();
  const count = roundCount();
  const perSec = builds.map(() => ({}) as Record<Way, number[]>);
  for (const way of WAYS) {
    // A warm-up round of each build first (not counted).
    for (const b of builds) await round(Math.min(sec, 0.5), b.fns[way][0], b.fns[way][1]);
    for (let r = 0; r < count; r++) {
      const order = r % 2 === 0 ? builds.map((_, i) => i) : builds.map((_, i) => i).reverse();
      for (const i of order) (perSec[i][way] ??= []).push(await round(sec, builds[i].fns[way][0], builds[i].fns[way][1]));
    }
  }
  await OpenFeature.close();
  const figures: ThroughputFigures = {
    builds: builds.map((b, i) => ({
      label: b.label,
      bundle: b.bundle,
      initMs: b.initMs,
      reasons: b.reasons,
      perSec: Object.fromEntries(WAYS.map((w) => [w, summary(perSec[i][w])])) as Record<Way, Rounds>,
    })),
    loadAvg: { before: loadBefore, after: os.loadavg()[0] },
    roundSec: sec,
    roundCount: count,
  };
  if (builds.length > 1) {
    figures.ratios = Object.fromEntries(WAYS.map((w) => [w, summary(perSec[0][w].map((x, r) => x / perSec[1][w][r]))])) as Record<Way, Rounds>;
  }
  return figures;
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
    'provider.resolve, an awaited resolveBooleanEvaluation and client.getBooleanValue (median of rounds, spread; paired ' +
    'against VEXIL_BENCH_BASE_PROVIDER when set), beside the same evaluation over REST (node on CPU 0); and initialize on ' +
    'a 100,000-flag feed (time, memory; VEXIL_BENCH_PROVIDER_LOAD=0 leaves it out).',
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
      const baseBundle = process.env.VEXIL_BENCH_BASE_PROVIDER;
      const bundles = [BUNDLE];
      if (baseBundle) {
        mkdirSync(path.dirname(BASE_COPY), { recursive: true });
        copyFileSync(path.resolve(baseBundle), BASE_COPY);
        bundles.push(BASE_COPY);
      }
      log(`provider: in-process evaluation (child process on CPU 1)${baseBundle ? `, paired against ${baseBundle}` : ''}`);
      const fig = await runNodeJson<ThroughputFigures>(path.join(HERE, 'provider.js'), ['throughput', target.baseUrl, key, ...bundles], { cpus: opts.pin ? LOAD_CPUS : undefined, timeoutSec: 600 });
      const [now, base] = fig.builds;
      const machine = `load average ${fig.loadAvg.before.toFixed(1)} → ${fig.loadAvg.after.toFixed(1)} (2 cores: other work shares the machine when it is above ~1)`;
      const describe = (how: string) =>
        `${FLAG} (two rules, the second a 50/50 split; ${USERS} users on the split) through ${how}, one core (CPU 1), median of ${fig.roundCount} rounds of ${fig.roundSec} s${base ? ', alternating with the base build' : ''}`;
      const spread = (r: Rounds) => `${f0(r.median)}/s (${(1e9 / r.median).toFixed(0)} ns each), rounds ${f0(r.min)}–${f0(r.max)}`;
      const row = (name: string, way: Way, how: string, extra: Record<string, unknown> = {}): Measurement => {
        const notes = [`${spread(now.perSec[way])}; ${machine}`];
        if (base && fig.ratios) {
          const q = fig.ratios[way];
          notes.push(`base ${base.bundle === BASE_COPY ? baseBundle : base.bundle}: ${spread(base.perSec[way])}; this build ÷ base, median of ${q.rounds.length} pairs ${(q.median * 100).toFixed(1)} % (${(q.min * 100).toFixed(1)}–${(q.max * 100).toFixed(1)} %)`);
        }
        return {
          name,
          description: describe(how),
          status: 'ok',
          notes,
          extra: {
            evaluationsPerSec: now.perSec[way].median,
            rounds: now.perSec[way],
            loadAvg: fig.loadAvg,
            ...(base ? { base: { bundle: baseBundle, rounds: base.perSec[way] }, ratio: fig.ratios?.[way] } : {}),
            ...extra,
          },
        };
      };
      rows.push(row('provider-resolve', 'resolve', 'provider.resolve (synchronous, Vexil only)', { reasons: now.reasons, initMs: now.initMs }));
      rows.push(row('provider-resolve-async', 'resolveAsync', 'await provider.resolveBooleanEvaluation (the OpenFeature provider interface)', { aim: 1_000_000, met: now.perSec.resolveAsync.median >= 1_000_000 }));
      rows.push(row('provider-client', 'client', 'await client.getBooleanValue (@openfeature/server-sdk client)', { clientLayerNs: 1e9 / now.perSec.client.median - 1e9 / now.perSec.resolveAsync.median }));
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
        notes: [`${f0(rest.load!.rps)} evaluations/s over REST; the provider's awaited resolveBooleanEvaluation is ${(now.perSec.resolveAsync.median / rest.load!.rps).toFixed(0)} × that, resolve ${(now.perSec.resolve.median / rest.load!.rps).toFixed(0)} ×`],
      });
    } catch (err) {
      rows.push({ name: 'provider', description: this.description, status: 'failed', error: String(err instanceof Error ? err.stack : err) });
    } finally {
      await target.stop();
    }

    // VEXIL_BENCH_PROVIDER_LOAD=0 leaves out part 2 (seeding 100,000 flags), for paired runs of part 1.
    if (process.env.VEXIL_BENCH_PROVIDER_LOAD === '0') return rows;
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
  const [what, url, key, ...rest] = process.argv.slice(2);
  const result = what === 'load' ? await load(url, key, Number(rest[0])) : await throughput(url, key, rest.length > 0 ? rest : [BUNDLE]);
  console.log(JSON.stringify(result));
  process.exit(0);
}
