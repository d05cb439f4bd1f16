/**
 * `npm run bench -- large-org` (docs/benchmarks.md, "Large organizations"): what an admin of a
 * 100,000-flag organization waits for, on an otherwise idle node (pinned to CPU 0) seeded directly
 * with VEXIL_BENCH_ORG_FLAGS (100,000) flags: a page of the flag list, a page deep in it, a search,
 * the full unpaged list, GraphQL pages of 1,000 flags with their configurations (each
 * VEXIL_BENCH_LARGE_REPS = 10 times, round robin: median and p95, bytes, items, X-Total-Count and
 * Link), then once a document VEXIL_GRAPHQL_MAX_RESULT refuses (20 aliases of every flag with its
 * configurations): the time to answer, whether it was refused, and the node's RSS before and after.
 * The UI's figures come from the browser test's JSON (bench/results/ui-100k.json or
 * VEXIL_BENCH_UI_JSON) when there is one.
 *
 * The requests are sent by a child process (this file run as a script) pinned to CPU 1, so that
 * reading a 40 MB answer never takes the node's core.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { CONFIGS_SELECTION, PAGE_QUERY, SEARCH_TERM, timed, type Timed } from './admin-loop.js';
import { HERE, LOAD_CPUS, ROOT, log, percentile, runNodeJson, seededCopy, startService, type Measurement, type ServiceTarget } from './harness.js';
import { statusMiB } from './proc.js';
import type { CustomScenario, RunContext } from './custom-scenario.js';

/** Flags of the large organization of the `isolation` and `large-org` scenarios. */
export const orgFlags = (): number => Number(process.env.VEXIL_BENCH_ORG_FLAGS ?? '100000');

/** A node on a copy of the run's directly seeded large organization (seeded once per run). */
export async function startLargeOrg(rc: RunContext, label: string, env?: Record<string, string>): Promise<{ target: ServiceTarget; flags: number; note: string }> {
  const flags = orgFlags();
  log(`${label}: an organization of ${flags} flags (bench/seed.ts, once per run)`);
  const { dir, seed } = await seededCopy(rc.opts, rc.adminKey, flags);
  const t0 = performance.now();
  const target = await startService(rc.opts, rc.adminKey, { dataDir: dir, label, startupTimeoutSec: Math.max(rc.opts.startupTimeoutSec, 300), ...(env ? { env } : {}) });
  return { target, flags, note: `${flags} flags seeded in ${seed.ms.insert} ms; node up in ${(performance.now() - t0).toFixed(0)} ms` };
}

/** A document over VEXIL_GRAPHQL_MAX_RESULT (docs/graphql.md, "Limits"): 20 aliases of every flag with its configurations. */
export const REFUSED_DOCUMENT = `{ ${Array.from({ length: 20 }, (_, i) =>
  `a${i}: flags { name project tags variants { key value } ${CONFIGS_SELECTION} }`).join(' ')} }`;

interface Probe {
  name: string;
  what: string;
  path: string;
  graphql?: { query: string; variables: Record<string, unknown> };
}

function probes(flags: number): Probe[] {
  const deep = `bench-flag-${Math.floor(flags * 0.9)}`;
  const page = (after: string | null) => ({ query: PAGE_QUERY, variables: { after } });
  return [
    { name: 'page', what: 'GET /api/flags?limit=100 (first page)', path: '/api/flags?limit=100' },
    { name: 'deep-page', what: `GET /api/flags?limit=100&after=${deep} (~90 % into the name order)`, path: `/api/flags?limit=100&after=${deep}` },
    { name: 'search', what: `GET /api/flags?q=${SEARCH_TERM}&limit=50 (11 matches)`, path: `/api/flags?q=${SEARCH_TERM}&limit=50` },
    { name: 'full-list', what: 'GET /api/flags (every flag, unpaged)', path: '/api/flags' },
    { name: 'graphql-page', what: 'GraphQL flagConnection(first: 1000) with configurations, first page', path: '/api/graphql', graphql: page(null) },
    { name: 'graphql-deep-page', what: `the same after ${deep}`, path: '/api/graphql', graphql: page(deep) },
  ];
}

interface ProbeResult {
  name: string;
  what: string;
  n: number;
  ms: { median: number; p95: number; min: number; max: number };
  outcomes: Record<string, number>;
  bytes: number;
  /** Flags in the (first) answer: the array's length, or flagConnection's nodes. */
  items?: number;
  totalCount?: string | null;
  link?: string | null;
  error?: string;
}

interface RefusedResult {
  ms: number;
  outcome: string;
  refused: boolean;
  message?: string;
  bytes: number;
  rssMiB: { before: number; after: number; peakBefore: number; peakAfter: number };
  /** How long after the answer the node answered GET /healthz again. */
  healthzAfterMs: number;
  timeoutMs: number;
}

interface ProbeSpec {
  baseUrl: string;
  key: string;
  flags: number;
  reps: number;
  serverPid: number;
  refusedTimeoutMs: number;
}

const outcomeCount = (m: Record<string, number>): string => Object.entries(m).map(([k, v]) => `${k} ×${v}`).join(', ');

function items(t: Timed): { items?: number; graphqlTotal?: number } {
  const j = t.json as { data?: { flagConnection?: { nodes?: unknown[]; totalCount?: number } } } | unknown[] | undefined;
  if (Array.isArray(j)) return { items: j.length };
  const c = j?.data?.flagConnection;
  return c ? { items: c.nodes?.length, graphqlTotal: c.totalCount } : {};
}

/** The child's work: every probe `reps` times round robin, then the refused document once. */
async function probe(spec: ProbeSpec): Promise<{ probes: ProbeResult[]; refused: RefusedResult }> {
  const list = probes(spec.flags);
  const ms: number[][] = list.map(() => []);
  const results: ProbeResult[] = list.map((p) => ({ name: p.name, what: p.what, n: 0, ms: { median: NaN, p95: NaN, min: NaN, max: NaN }, outcomes: {}, bytes: 0 }));
  for (let r = 0; r < spec.reps; r++) {
    for (const [i, p] of list.entries()) {
      const t = await timed(spec.baseUrl, spec.key, p.path, { graphql: p.graphql, parse: r === 0 });
      const res = results[i];
      ms[i].push(t.ms);
      res.outcomes[t.outcome] = (res.outcomes[t.outcome] ?? 0) + 1;
      if (t.error !== undefined) res.error = t.error;
      if (r === 0) {
        const it = items(t);
        Object.assign(res, {
          bytes: t.bytes,
          items: it.items,
          totalCount: it.graphqlTotal !== undefined ? String(it.graphqlTotal) : (t.headers?.get('x-total-count') ?? null),
          link: t.headers?.get('link') ?? null,
        });
      }
    }
  }
  for (const [i, res] of results.entries()) {
    const s = [...ms[i]].sort((x, y) => x - y);
    res.n = s.length;
    res.ms = { median: percentile(s, 50), p95: percentile(s, 95), min: s[0], max: s[s.length - 1] };
  }
  const pid = spec.serverPid;
  const before = { rss: statusMiB(pid, 'VmRSS'), peak: statusMiB(pid, 'VmHWM') };
  const t = await timed(spec.baseUrl, spec.key, '/api/graphql', { graphql: { query: REFUSED_DOCUMENT }, timeoutMs: spec.refusedTimeoutMs });
  const rssAfter = statusMiB(pid, 'VmRSS');
  const t1 = performance.now();
  while ((await timed(spec.baseUrl, spec.key, '/healthz', { timeoutMs: 120_000 })).status === 0 && performance.now() - t1 < 120_000);
  const healthzAfterMs = performance.now() - t1;
  const j = t.json as { data?: unknown; errors?: Array<{ message?: string }> } | undefined;
  return {
    probes: results,
    refused: {
      ms: t.ms,
      outcome: t.error ? `${t.outcome} (${t.error})` : t.outcome,
      // Refused: a 4xx, or GraphQL errors without data (nothing executed).
      refused: (t.status >= 400 && t.status < 500) || (j?.errors !== undefined && (j.data === undefined || j.data === null)),
      message: (j?.errors?.[0]?.message ?? (t.status >= 400 && t.json !== undefined ? JSON.stringify(t.json) : undefined))?.slice(0, 300),
      bytes: t.bytes,
      rssMiB: { before: before.rss, after: rssAfter, peakBefore: before.peak, peakAfter: statusMiB(pid, 'VmHWM') },
      healthzAfterMs,
      timeoutMs: spec.refusedTimeoutMs,
    },
  };
}

/** The UI's figures at 100,000 flags from the browser test, when it left them. */
function uiFigures(): { file: string; figures?: Record<string, unknown> } {
  const file = process.env.VEXIL_BENCH_UI_JSON ?? path.join(ROOT, 'bench/results/ui-100k.json');
  if (!existsSync(file)) return { file };
  const lines = readFileSync(file, 'utf8').split('\n').map((l) => l.trim()).filter((l) => l.startsWith('{'));
  try {
    return { file, figures: JSON.parse(lines[lines.length - 1] ?? '') as Record<string, unknown> };
  } catch {
    return { file };
  }
}

const f1 = (n: number | undefined): string => (n === undefined || !Number.isFinite(n) ? '-' : n.toFixed(1));

export const largeOrg: CustomScenario = {
  name: 'large-org',
  description:
    'An idle node with VEXIL_BENCH_ORG_FLAGS (100,000) flags: a page, a deep page, a search, the full list and GraphQL pages of 1,000 flags ' +
    'with configurations (median and p95 of VEXIL_BENCH_LARGE_REPS = 10, sent from CPU 1), then the 20-alias document the GraphQL result estimate refuses ' +
    '(time, refused or not, node RSS before/after), and the UI browser test\'s figures when bench/results/ui-100k.json exists.',
  async run(rc) {
    const rows: Measurement[] = [];
    const { target, flags, note } = await startLargeOrg(rc, 'large-org');
    try {
      const spec: ProbeSpec = {
        baseUrl: target.baseUrl,
        key: rc.adminKey,
        flags,
        reps: Number(process.env.VEXIL_BENCH_LARGE_REPS ?? '10'),
        serverPid: target.pids[0],
        refusedTimeoutMs: 60_000,
      };
      log(`large-org: ${spec.reps} rounds of ${probes(flags).length} requests, then the refused document (client timeout ${spec.refusedTimeoutMs / 1000} s)`);
      const r = await runNodeJson<{ probes: ProbeResult[]; refused: RefusedResult }>(path.join(HERE, 'large-org.js'), [JSON.stringify(spec)], {
        cpus: rc.opts.pin ? LOAD_CPUS : undefined,
        timeoutSec: 1800,
      });
      for (const p of r.probes) {
        rows.push({
          name: `large-org-${p.name}`,
          description: p.what,
          status: 'ok',
          notes: [
            `median ${f1(p.ms.median)} ms, p95 ${f1(p.ms.p95)} ms (min ${f1(p.ms.min)}, max ${f1(p.ms.max)}, n ${p.n}); ${outcomeCount(p.outcomes)}`,
            `${(p.bytes / 1024).toFixed(0)} KiB, ${p.items ?? '-'} flags; total ${p.totalCount ?? 'not given'}; Link ${p.link ?? 'none'}` +
              (p.error ? `; error ${p.error}` : ''),
          ],
          extra: { largeOrg: p },
        });
      }
      const d = r.refused;
      const rss = d.rssMiB;
      rows.push({
        name: 'large-org-refused',
        description: `the refused document: 20 aliases of flags { name project tags variants { key value } ${CONFIGS_SELECTION} }`,
        status: 'ok',
        notes: [
          `${d.refused ? 'refused' : 'NOT refused'}: ${d.outcome} in ${f1(d.ms)} ms, ${(d.bytes / 1024).toFixed(0)} KiB${d.message ? ` ("${d.message}")` : ''}`,
          `node RSS ${f1(rss.before)} → ${f1(rss.after)} MiB (peak ${f1(rss.peakBefore)} → ${f1(rss.peakAfter)} MiB); /healthz answered ${f1(d.healthzAfterMs)} ms after`,
          note,
        ],
        extra: {
          largeOrg: d,
          targets: [{ target: 'large-org: the 20-alias document is refused', figure: `${d.outcome} in ${f1(d.ms)} ms, RSS ${f1(rss.before)} → ${f1(rss.after)} MiB`, met: d.refused }],
        },
      });
      const ui = uiFigures();
      rows.push({
        name: 'large-org-ui',
        description: `the admin UI at ${flags} flags (browser test's JSON line in ${path.relative(ROOT, ui.file)})`,
        status: ui.figures ? 'ok' : 'skipped',
        notes: [ui.figures ? Object.entries(ui.figures).map(([k, v]) => `${k} ${typeof v === 'number' ? f1(v) : JSON.stringify(v)}`).join(', ') : `not measured (no ${path.relative(ROOT, ui.file)})`],
        extra: { largeOrg: ui },
      });
    } finally {
      await target.stop();
    }
    return rows;
  },
};

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  probe(JSON.parse(process.argv[2] ?? '{}') as ProbeSpec).then(
    (r) => {
      process.stdout.write(`${JSON.stringify(r)}\n`);
      process.exit(0);
    },
    (err: unknown) => {
      process.stderr.write(`large-org: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.exit(1);
    },
  );
}
