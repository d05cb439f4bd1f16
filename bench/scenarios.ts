/**
 * Benchmark scenarios. A scenario seeds a running service through its public
 * API and names the one request the load generator repeats. Add GraphQL or
 * cluster scenarios by appending to SCENARIOS; a scenario that needs another
 * topology (several nodes, NATS, PostgreSQL) supplies its own `start`.
 */

export interface HarnessOptions {
  durationSec: number;
  connections: number;
  pipelining: number;
  flags: number;
  warmupSec: number;
  /** Path of the service entry point (dist/src/main.js). */
  servicePath: string;
  startupTimeoutSec: number;
  /** Value for VEXIL_EVAL_WORKERS, when given. */
  evalWorkers: string | undefined;
  pin: boolean;
  verbose: boolean;
  keepData: boolean;
}

/** A running system under test. */
export interface Target {
  baseUrl: string;
  /** Processes whose CPU time and peak RSS are recorded (summed / listed). */
  pids: number[];
  stop(): Promise<void>;
  /** Recent output of the processes, for error messages. */
  tail(): string;
}

export interface ScenarioContext {
  opts: HarnessOptions;
  target: Target;
  baseUrl: string;
  /** The org-wide Admin/CanRead/CanWrite key the service was bootstrapped with. */
  adminKey: string;
  /**
   * JSON call against the target. Throws with method, path, status and body
   * when the status is not `expect` (default: any 2xx).
   */
  api<T = unknown>(method: string, path: string, body?: unknown, opts?: { key?: string; expect?: number }): Promise<T>;
  /** Free-form state shared between setup() and request(). */
  state: Record<string, unknown>;
}

export interface LoadRequest {
  method: string;
  /** Path and query, e.g. /flags/bench-flag-0 */
  path: string;
  headers: Record<string, string>;
  body?: string;
  /** Checked once before the load: expected status and a check of the body. */
  expectStatus: number;
  checkBody?: (text: string) => string | undefined;
}

export interface Scenario {
  name: string;
  description: string;
  /** Start the system under test; default: one `node dist/src/main.js` on PGlite. */
  start?: (opts: HarnessOptions, adminKey: string) => Promise<Target>;
  /** Extra environment for the default single-node start. */
  env?: Record<string, string>;
  setup(ctx: ScenarioContext): Promise<void>;
  request(ctx: ScenarioContext): LoadRequest;
}

/** Body of the REST evaluation request (SPEC 4.1) used by the REST scenarios and the bare baseline. */
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
      variants: [
        { key: 'on', value: true, valueType: 'boolean' },
        { key: 'off', value: false, valueType: 'boolean' },
      ],
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

export const SCENARIOS: Scenario[] = [
  {
    name: 'rest-eval',
    description:
      'POST /flags/bench-flag-0 (REST evaluation, SPEC 4.1) with a CanEvaluate key scoped to application ' +
      '`default`; the flag\'s production rule (country == NL) matches, answer {"variant":true,"key":"on"}. ' +
      '--flags N boolean flags are seeded so the flag store is not trivially small.',
    async setup(ctx) {
      ctx.state.evalKey = await createEvalKey(ctx);
      await seedBooleanFlags(ctx, ctx.opts.flags);
    },
    request(ctx) {
      return {
        method: 'POST',
        path: EVAL_PATH,
        headers: { 'content-type': 'application/json', 'x-management-key': String(ctx.state.evalKey) },
        body: EVAL_BODY,
        expectStatus: 200,
        checkBody: expectVariantOn,
      };
    },
  },
];
