/**
 * The load scenarios (`SCENARIOS`) and the seeding and request helpers they share: a scenario
 * seeds a running service through its public API and names the one request the load generator
 * repeats (its shape: scenario-types.ts). A scenario that needs another topology (several nodes,
 * NATS, PostgreSQL) supplies its own `start`. Scenarios that are not one load run (flag-count
 * scaling, snapshot build, propagation, …) are custom scenarios (custom-scenario.ts, registry.ts).
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import {
  NotAvailable,
  type Background,
  type HarnessOptions,
  type LoadRequest,
  type Scenario,
  type ScenarioContext,
} from './scenario-types.js';

/** Body of the REST evaluation request (docs/api.md#evaluation) used by the REST scenarios and the bare baseline. */
export const EVAL_BODY = '{"userId":"u1","stage":"production","context":{"country":"NL"}}';
export const EVAL_PATH = '/flags/bench-flag-0';

/** Runs `fn` over `items` with at most `limit` calls in flight. */
async function pool<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) await fn(items[next++]);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

/** The variants of every benchmark flag. */
export const BOOLEAN_VARIANTS = [
  { key: 'on', value: true, valueType: 'boolean' },
  { key: 'off', value: false, valueType: 'boolean' },
];

/**
 * Creates `count` boolean flags bench-flag-<i> (variants on/off, project
 * default), each with a production configuration whose single rule sends
 * country == NL to `on` and whose default is `off`.
 */
export async function seedBooleanFlags(ctx: ScenarioContext, count: number): Promise<void> {
  const names = Array.from({ length: count }, (_, i) => `bench-flag-${i}`);
  await pool(names, 4, async (name) => {
    await ctx.api('POST', '/api/flags', {
      name,
      project: 'default',
      type: 'boolean',
      description: 'benchmark flag',
      tags: ['bench'],
      variants: BOOLEAN_VARIANTS,
    }, { expect: 201 });
    await ctx.api('POST', `/api/flags/${encodeURIComponent(name)}/configs`, {
      stage: 'production',
      enabled: true,
      defaultVariantKey: 'off',
      rolloutPercentage: 100,
      rules: [
        {
          priority: 1,
          conditions: [{ field: 'country', operator: '==', value: 'NL' }],
          allocations: [{ variantKey: 'on', percentage: 100 }],
        },
      ],
    }, { expect: 200 });
  });
}

/** The REST evaluation request of `flag` with a CanEvaluate key. */
export function restEvalRequest(evalKey: string, flag = 'bench-flag-0'): LoadRequest {
  return {
    method: 'POST',
    path: `/flags/${flag}`,
    headers: { 'content-type': 'application/json', 'x-management-key': evalKey },
    body: EVAL_BODY,
    expectStatus: 200,
    checkBody: expectVariantOn,
  };
}

/** Creates a CanEvaluate key scoped to application `default` and returns its value. */
export async function createEvalKey(ctx: ScenarioContext): Promise<string> {
  const created = await ctx.api<{ key?: unknown }>('POST', '/api/keys', {
    name: 'bench-eval',
    permissions: ['CanEvaluate'],
    application: 'default',
  }, { expect: 201 });
  if (typeof created.key !== 'string' || !/^[0-9a-f]{64}$/.test(created.key)) {
    throw new Error(`POST /api/keys answered no 64-hex key: ${JSON.stringify(created)}`);
  }
  return created.key;
}

/** Body check for the evaluation of bench-flag-0 with country NL. */
export function expectVariantOn(text: string): string | undefined {
  try {
    const r = JSON.parse(text) as { variant?: unknown; key?: unknown };
    if (r.variant === true && r.key === 'on') return undefined;
  } catch {
    /* fall through */
  }
  return `expected {"variant":true,"key":"on"}, got ${text.slice(0, 300)}`;
}

const restEval = (workers: (opts: HarnessOptions) => Record<string, string>, name: string, description: string): Scenario => ({
  name,
  description,
  env: workers,
  paced: true,
  async setup(ctx) {
    ctx.state.evalKey = await createEvalKey(ctx);
    await seedBooleanFlags(ctx, ctx.opts.flags);
  },
  request: (ctx) => restEvalRequest(String(ctx.state.evalKey)),
});

/** The GraphQL document with `n` aliased evaluations e0…e<n-1> of bench-flag-<i mod flags>. */
export function graphqlBatchQuery(n: number, flags: number): string {
  const fields: string[] = [];
  for (let i = 0; i < n; i++) {
    fields.push(`e${i}: evaluate(key:"bench-flag-${i % flags}", userId:"u0", stage:"production", context:{country:"NL"}) { key variant }`);
  }
  return `query { ${fields.join(' ')} }`;
}

/** Body check: no `errors`, and every alias e0…e<n-1> answered {key:"on", variant:true}. */
export function expectGraphqlAllOn(n: number): (text: string) => string | undefined {
  return (text) => {
    let r: { data?: Record<string, { key?: unknown; variant?: unknown } | null> | null; errors?: unknown };
    try {
      r = JSON.parse(text) as typeof r;
    } catch {
      return `not JSON: ${text.slice(0, 300)}`;
    }
    if (r.errors !== undefined) return `errors: ${JSON.stringify(r.errors).slice(0, 300)}`;
    for (let i = 0; i < n; i++) {
      const e = r.data?.[`e${i}`];
      if (e?.key !== 'on' || e.variant !== true) return `e${i} is ${JSON.stringify(e)}, expected {"key":"on","variant":true}`;
    }
    return undefined;
  };
}

/** Throws NotAvailable when the build has no GraphQL endpoint. */
async function requireGraphql(ctx: ScenarioContext): Promise<void> {
  const root = path.dirname(path.dirname(ctx.opts.servicePath));
  const routes = path.join(root, 'src', 'graphql', 'routes.js');
  if (!existsSync(routes) && !existsSync(path.join(path.dirname(ctx.opts.servicePath), 'graphql', 'routes.js'))) {
    throw new NotAvailable(`no GraphQL module in this build (${path.relative(process.cwd(), routes)} missing)`);
  }
  const r = await fetch(`${ctx.baseUrl}/api/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json', 'x-management-key': ctx.adminKey },
    body: JSON.stringify({ query: '{ __typename }' }),
    signal: AbortSignal.timeout(10_000),
  });
  await r.arrayBuffer();
  if (r.status === 404 || r.status === 405) throw new NotAvailable(`POST /api/graphql answered ${r.status}`);
}

const graphql = (name: string, description: string, size: (opts: HarnessOptions) => number, extraEnv: Record<string, string> = {}): Scenario => ({
  name,
  description,
  env: (opts) => ({ VEXIL_GRAPHQL_MAX_EVALUATIONS: String(Math.max(100, opts.batch)), ...extraEnv }),
  evaluationsPerRequest: size,
  async setup(ctx) {
    await requireGraphql(ctx);
    ctx.state.evalKey = await createEvalKey(ctx);
    const n = size(ctx.opts);
    ctx.state.flags = Math.max(ctx.opts.flags, n);
    await seedBooleanFlags(ctx, Number(ctx.state.flags));
  },
  request(ctx) {
    const n = size(ctx.opts);
    return {
      method: 'POST',
      path: '/api/graphql',
      headers: { 'content-type': 'application/json', accept: 'application/json', 'x-management-key': String(ctx.state.evalKey) },
      body: JSON.stringify({ query: graphqlBatchQuery(n, Number(ctx.state.flags)) }),
      expectStatus: 200,
      checkBody: expectGraphqlAllOn(n),
    };
  },
});

/** The production configuration of the seeded flags, with `defaultVariantKey` chosen. */
export function benchConfig(defaultVariantKey: 'on' | 'off', rules = true): Record<string, unknown> {
  return {
    stage: 'production',
    enabled: true,
    defaultVariantKey,
    rolloutPercentage: 100,
    rules: rules
      ? [{ priority: 1, conditions: [{ field: 'country', operator: '==', value: 'NL' }], allocations: [{ variantKey: 'on', percentage: 100 }] }]
      : [],
  };
}

/**
 * The mixed scenario's admin writer: `rate` config upserts per second of bench-flag-0 (the flag
 * under evaluation) through REST with the admin key, alternating its defaultVariantKey (the rule
 * still matches, so evaluations keep answering `on`). Open loop: a write is sent every 1/rate s
 * whatever the previous one does (at most 16 in flight; more are counted as skipped).
 */
export function configWriter(ctx: ScenarioContext, rate: number, flag = 'bench-flag-0'): Background {
  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  let errors = 0;
  let sent = 0;
  let skipped = 0;
  let inflight = 0;
  const url = `${ctx.baseUrl}/api/flags/${flag}/configs`;
  const headers = { 'content-type': 'application/json', 'x-management-key': ctx.adminKey };
  const t0 = performance.now();
  const tick = (): void => {
    if (inflight >= 16) {
      skipped++;
      return;
    }
    inflight++;
    const i = sent++;
    const start = performance.now();
    fetch(url, { method: 'POST', headers, body: JSON.stringify(benchConfig(i % 2 === 0 ? 'on' : 'off')), signal: AbortSignal.timeout(10_000) })
      .then(async (r) => {
        await r.arrayBuffer();
        statuses[r.status] = (statuses[r.status] ?? 0) + 1;
        if (r.status === 200) latencies.push(performance.now() - start);
        else errors++;
      })
      .catch(() => {
        statuses.error = (statuses.error ?? 0) + 1;
        errors++;
      })
      .finally(() => {
        inflight--;
      });
  };
  const timer = setInterval(tick, 1000 / rate);
  return {
    async stop() {
      clearInterval(timer);
      const wallSec = (performance.now() - t0) / 1000;
      const deadline = Date.now() + 15_000;
      while (inflight > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      const sorted = [...latencies].sort((a, b) => a - b);
      const pct = (p: number): number => (sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]);
      const w = { rate, sent, completed: latencies.length, errors, skipped, achievedRate: sent / wallSec, statuses,
        latencyMs: { p50: pct(50), p99: pct(99), max: sorted.length === 0 ? NaN : sorted[sorted.length - 1] } };
      return {
        notes: [
          `writer: ${sent} config upserts at ${w.achievedRate.toFixed(1)}/s, latency p50 ${w.latencyMs.p50.toFixed(1)} ms, ` +
            `p99 ${w.latencyMs.p99.toFixed(1)} ms, max ${w.latencyMs.max.toFixed(1)} ms, errors ${errors}${skipped ? `, skipped ${skipped}` : ''}`,
        ],
        extra: { writer: w },
      };
    },
  };
}


// ---- OFREP (docs/ofrep.md) ----------------------------------------------------------------------

/** The OFREP single evaluation of bench-flag-0: the same user, stage and context as EVAL_BODY. */
export const OFREP_BODY = '{"context":{"targetingKey":"u1","stage":"production","country":"NL"}}';
/** Flags of the ofrep-bulk scenario. */
export const OFREP_BULK_FLAGS = 50;

function expectOfrepOn(text: string): string | undefined {
  try {
    const r = JSON.parse(text) as { value?: unknown; variant?: unknown; reason?: unknown };
    if (r.value === true && r.variant === 'on' && r.reason === 'TARGETING_MATCH') return undefined;
  } catch {
    /* fall through */
  }
  return `expected {"value":true,"variant":"on","reason":"TARGETING_MATCH",…}, got ${text.slice(0, 300)}`;
}

function expectOfrepBulk(n: number): (text: string) => string | undefined {
  return (text) => {
    try {
      const r = JSON.parse(text) as { flags?: { value?: unknown }[] };
      if (r.flags?.length === n && r.flags.every((f) => f.value === true)) return undefined;
    } catch {
      /* fall through */
    }
    return `expected ${n} flags all true, got ${text.slice(0, 300)}`;
  };
}

const ofrepBulkRequest = (key: string, extra: Record<string, string> = {}): LoadRequest => ({
  method: 'POST',
  path: '/ofrep/v1/evaluate/flags',
  headers: { 'content-type': 'application/json', 'x-management-key': key, ...extra },
  body: OFREP_BODY,
  expectStatus: 200,
  checkBody: expectOfrepBulk(OFREP_BULK_FLAGS),
});

const ofrepBulkSetup = async (ctx: ScenarioContext): Promise<void> => {
  ctx.state.evalKey = await createEvalKey(ctx);
  await seedBooleanFlags(ctx, Math.max(OFREP_BULK_FLAGS, ctx.opts.flags));
  if (ctx.opts.flags > OFREP_BULK_FLAGS) throw new NotAvailable(`ofrep-bulk needs --flags ≤ ${OFREP_BULK_FLAGS}`);
};

export const OFREP_SCENARIOS: Scenario[] = [
  {
    name: 'ofrep-eval',
    description:
      'POST /ofrep/v1/evaluate/flags/bench-flag-0 (OFREP single evaluation) with the same key, user, stage and ' +
      'context as rest-eval; answer {"key":"bench-flag-0","value":true,"variant":"on","reason":"TARGETING_MATCH",…}. ' +
      'VEXIL_EVAL_WORKERS=0, as rest-front: compare the two rows.',
    env: { VEXIL_EVAL_WORKERS: '0' },
    async setup(ctx) {
      ctx.state.evalKey = await createEvalKey(ctx);
      await seedBooleanFlags(ctx, ctx.opts.flags);
    },
    request: (ctx) => ({
      method: 'POST',
      path: '/ofrep/v1/evaluate/flags/bench-flag-0',
      headers: { 'content-type': 'application/json', 'x-management-key': String(ctx.state.evalKey) },
      body: OFREP_BODY,
      expectStatus: 200,
      checkBody: expectOfrepOn,
    }),
  },
  {
    name: 'ofrep-bulk',
    description:
      `POST /ofrep/v1/evaluate/flags (OFREP bulk) over ${OFREP_BULK_FLAGS} seeded flags, all matching; ` +
      `evals/s = req/s × ${OFREP_BULK_FLAGS}. Front thread (bulk always evaluates there).`,
    env: { VEXIL_EVAL_WORKERS: '0' },
    evaluationsPerRequest: () => OFREP_BULK_FLAGS,
    setup: ofrepBulkSetup,
    request: (ctx) => ofrepBulkRequest(String(ctx.state.evalKey)),
  },
  {
    name: 'ofrep-304',
    description:
      'ofrep-bulk with If-None-Match set to the current ETag: 304, no body, nothing evaluated. ' +
      '"not available" when the node does not answer 304 (a front that does not pass If-None-Match).',
    env: { VEXIL_EVAL_WORKERS: '0' },
    async setup(ctx) {
      await ofrepBulkSetup(ctx);
      const key = String(ctx.state.evalKey);
      const first = await fetch(`${ctx.baseUrl}/ofrep/v1/evaluate/flags`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-management-key': key }, body: OFREP_BODY });
      await first.arrayBuffer();
      const etag = first.headers.get('etag');
      if (etag === null) throw new NotAvailable('the bulk answer has no ETag');
      const again = await fetch(`${ctx.baseUrl}/ofrep/v1/evaluate/flags`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-management-key': key, 'if-none-match': etag }, body: OFREP_BODY });
      await again.arrayBuffer();
      if (again.status !== 304) throw new NotAvailable(`If-None-Match with the current ETag answered ${again.status}, not 304`);
      ctx.state.etag = etag;
    },
    request: (ctx) => ({ ...ofrepBulkRequest(String(ctx.state.evalKey), { 'if-none-match': String(ctx.state.etag) }), expectStatus: 304, checkBody: (text) => (text === '' ? undefined : `a 304 with a body: ${text.slice(0, 100)}`) }),
  },
];

export const SCENARIOS: Scenario[] = [
  restEval(
    () => ({}),
    'rest-eval',
    'POST /flags/bench-flag-0 (REST evaluation, docs/api.md#evaluation) with a CanEvaluate key scoped to application ' +
      '`default`; the flag\'s production rule (country == NL) matches, answer {"variant":true,"key":"on"}. ' +
      '--flags N boolean flags are seeded so the flag store is not trivially small. VEXIL_EVAL_WORKERS: ' +
      '--eval-workers or the service default.',
  ),
  restEval(
    () => ({ VEXIL_EVAL_WORKERS: '0' }),
    'rest-front',
    'rest-eval with VEXIL_EVAL_WORKERS=0: evaluation on the front (uWS) thread.',
  ),
  {
    ...restEval(
      () => ({ VEXIL_EVAL_WORKERS: '0', VEXIL_HTTP_FRONT: 'node' }),
      'rest-node-front',
      'rest-front on the node:http fallback front (VEXIL_HTTP_FRONT=node), which serves platforms where no native ' +
        'uWebSockets.js binary loads; compare with rest-front for the README\'s Requirements table.',
    ),
    paced: false,
    fallbackFront: true,
  },
  restEval(
    (opts) => ({ VEXIL_EVAL_WORKERS: String(opts.poolWorkers) }),
    'rest-pool',
    'rest-eval with the Piscina evaluation pool (VEXIL_EVAL_WORKERS=--pool-workers, 2 by default); under ' +
      'pinning the workers share CPU 0 with the front thread.',
  ),
  restEval(
    () => ({ VEXIL_EVAL_WORKERS: '0', VEXIL_METRICS: '0' }),
    'rest-metrics-off',
    'rest-front with VEXIL_METRICS=0 (no /metrics, no per-request observation): the baseline of the metrics cost; ' +
      'compare with rest-front (metrics on) in the same run.',
  ),
  graphql(
    'graphql-eval',
    'POST /api/graphql with one aliased `evaluate(key:"bench-flag-0", userId:"u0", stage:"production", ' +
      'context:{country:"NL"}) { key variant }` and a CanEvaluate key; "not available" when the build has no GraphQL.',
    () => 1,
  ),
  graphql(
    'graphql-batch',
    'POST /api/graphql with --batch (100) aliased evaluations e<i> of bench-flag-<i> for user u0 in one query ' +
      '(VEXIL_GRAPHQL_MAX_EVALUATIONS raised to the batch size); evals/s = req/s × batch.',
    (opts) => opts.batch,
  ),
  graphql(
    'graphql-batch-front',
    'graphql-batch with VEXIL_EVAL_WORKERS=0: the same documents on the front thread only (the baseline of ' +
      'the pool\'s "never slower" target).',
    (opts) => opts.batch,
    { VEXIL_EVAL_WORKERS: '0' },
  ),
  {
    ...restEval(
      () => ({}),
      'mixed',
      'rest-eval load plus an admin writer in the runner: --write-rate (20) config upserts/s of bench-flag-0 ' +
        '(POST /api/flags/bench-flag-0/configs with the admin key, alternating defaultVariantKey). Reports the ' +
        'evaluation req/s and the writes\' latency and errors.',
    ),
    paced: false,
    background: (ctx) => configWriter(ctx, ctx.opts.writeRate),
  },
  ...OFREP_SCENARIOS,
];
