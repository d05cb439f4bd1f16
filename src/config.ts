/**
 * Settings come from the environment (README, "Configuration") and are validated once at start-up:
 * a bad value stops the node with a message naming the variable, rather than surfacing under load.
 */
import { randomBytes } from 'node:crypto';
import { availableParallelism, hostname } from 'node:os';
import { z } from 'zod';
import { KEY_RE } from './domain/input-formats.js';
import { DEFAULT_TENANCY_LIMITS, type TenancyLimits } from './domain/validation/tenancy-limits.js';
import type { ClientTimeouts } from './http/client-timeouts.js';

const intIn = (min: number, max: number) => z.coerce.number().int().min(min).max(max);

/** `NATS_URL`: one or more comma-separated server URLs; credentials may sit in the userinfo. */
function natsUrlsValid(value: string): boolean {
  return value.split(',').every((u) => {
    try {
      return ['nats:', 'tls:', 'ws:', 'wss:'].includes(new URL(u.trim()).protocol);
    } catch {
      return false;
    }
  });
}

/** VEXIL_FRONT_THREADS by default (CONTRACT 20): one per core this process may use, at most 16. */
export const defaultFrontThreads = (cores: number): number => Math.min(16, cores);

const schema = z.object({
  HOST: z.string().min(1).default('127.0.0.1'),
  PORT: intIn(0, 65535).default(8080),
  VEXIL_DATA_DIR: z.string().min(1).default('./data'),
  DATABASE_URL: z.string().regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL').optional(),
  NATS_URL: z
    .string()
    .min(1)
    .refine(natsUrlsValid, 'must be nats://, tls://, ws:// or wss:// URLs (comma-separated), optionally with user:pass@ or token@')
    .optional(),
  VEXIL_BOOTSTRAP_ADMIN_KEY: z.string().regex(KEY_RE, 'must be 64 lowercase hex characters').optional(),
  VEXIL_OPERATOR_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  VEXIL_RATE_LIMIT_EVAL: z.coerce.number().positive().default(10_000),
  VEXIL_RATE_LIMIT_MGMT: z.coerce.number().positive().default(100),
  VEXIL_GRAPHQL_MAX_DEPTH: intIn(1, 1000).default(15),
  VEXIL_GRAPHQL_MAX_EVALUATIONS: intIn(1, 100_000).default(100),
  VEXIL_GRAPHQL_MAX_FIELDS: intIn(1, 1_000_000).default(1000),
  VEXIL_GRAPHQL_MAX_RESULT: intIn(1, 1_000_000_000).default(200_000),
  VEXIL_GRAPHQL_MAX_MUTATIONS: intIn(1, 10_000).default(20),
  VEXIL_MAX_ANSWER_BYTES: intIn(1024, 1024 * 1024 * 1024).default(256 * 1024 * 1024),
  VEXIL_CONTEXT_MAX_DEPTH: intIn(1, 10_000).default(32),
  VEXIL_CONTEXT_MAX_VALUES: intIn(1, 10_000_000).default(10_000),
  VEXIL_RATE_LIMIT_AUTH_FAILURES: z.coerce.number().positive().default(50),
  VEXIL_NATS_CREDS: z.string().min(1).optional(),
  // The cores this process may run on (sched affinity: `taskset -c 0` gives 1), not every core of the machine.
  VEXIL_EVAL_WORKERS: intIn(0, 256).default(availableParallelism()),
  VEXIL_EVAL_QUEUE_MAX: intIn(1, 10_000_000).default(10_000),
  VEXIL_EVAL_HANDOFF: z.enum(['auto', 'always', 'never']).default('auto'),
  // The actor's threads at VEXIL_MANAGEMENT_NICE (`nice`; `low` is its old name), or in SCHED_IDLE once ready (lifted while it starves).
  VEXIL_MANAGEMENT_PRIORITY: z.enum(['nice', 'low', 'idle']).default('nice'),
  VEXIL_MANAGEMENT_NICE: intIn(1, 19).default(10),
  VEXIL_WORKER_FLAG_CACHE: intIn(0, 10_000_000).default(4096),
  VEXIL_KEY_CACHE_TTL_MS: intIn(0, 3_600_000).default(60_000),
  // How long past its cache lifetime a key that cannot be re-checked is served (docs/limits.md).
  VEXIL_KEY_STALE_MAX_MS: intIn(0, 86_400_000).default(300_000),
  VEXIL_SYNC_POLL_MS: intIn(50, 600_000).default(1000),
  VEXIL_SYNC_SAFETY_POLL_MS: intIn(100, 3_600_000).default(15_000),
  VEXIL_NODE_ID: z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, 'letters, digits, _ . - only').optional(),
  VEXIL_REQUIRE_NATIVE_HTTP: z.enum(['0', '1', 'true', 'false']).default('0'),
  VEXIL_HTTP_FRONT: z.enum(['auto', 'node']).default('auto'),
  // Front threads (CONTRACT 20, docs/threads.md): the cores this process may use, at most 16.
  VEXIL_FRONT_THREADS: intIn(1, 256).default(defaultFrontThreads(availableParallelism())),
  // How the threads share the port: SO_REUSEPORT (Linux), uWebSockets.js's acceptor, or the best here.
  VEXIL_FRONT_ACCEPT: z.enum(['auto', 'reuseport', 'acceptor']).default('auto'),
  VEXIL_SHUTDOWN_GRACE_MS: intIn(0, 600_000).default(10_000),
  // Origins a browser may call the OFREP routes from: `*`, or a comma-separated list of scheme://host[:port].
  VEXIL_CORS_ORIGINS: z
    .string()
    .transform((s) => s.split(',').map((o) => o.trim()).filter((o) => o !== ''))
    .refine((list) => list.every((o) => o === '*' || /^https?:\/\/[^/?#\s]+$/.test(o)), 'must be * or comma-separated origins such as https://app.example.com (no path)')
    .optional(),
  VEXIL_PUBLIC_URL: z.string().regex(/^https?:\/\/[^/?#\s]+(\/[^?#\s]*)?$/, 'must be an absolute http(s) URL without query').optional(),
  VEXIL_LOG_LEVEL: z.enum(['debug', 'info', 'warn', 'error', 'silent']).default('info'),
  VEXIL_METRICS: z.enum(['0', '1', 'true', 'false']).default('1'),
  VEXIL_METRICS_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  // Tenancy limits (docs/limits.md, "Tenancy limits").
  VEXIL_MAX_FLAGS_PER_ORG: intIn(1, 100_000_000).default(DEFAULT_TENANCY_LIMITS.maxFlagsPerOrg),
  VEXIL_MAX_KEYS_PER_ORG: intIn(1, 10_000_000).default(DEFAULT_TENANCY_LIMITS.maxKeysPerOrg),
  VEXIL_MAX_CONFIGS_PER_FLAG: intIn(1, 1_000_000).default(DEFAULT_TENANCY_LIMITS.maxConfigsPerFlag),
  VEXIL_MAX_RULES_PER_CONFIG: intIn(1, 1_000_000).default(DEFAULT_TENANCY_LIMITS.maxRulesPerConfig),
  VEXIL_MAX_CONDITIONS_PER_RULE: intIn(1, 1_000_000).default(DEFAULT_TENANCY_LIMITS.maxConditionsPerRule),
  VEXIL_MAX_VARIANTS_PER_FLAG: intIn(1, 1_000_000).default(DEFAULT_TENANCY_LIMITS.maxVariantsPerFlag),
  VEXIL_MAX_VALUE_BYTES: intIn(1, 1_048_576).default(DEFAULT_TENANCY_LIMITS.maxValueBytes),
  VEXIL_MAX_SEGMENTS_PER_ORG: intIn(1, 1_000_000).default(DEFAULT_TENANCY_LIMITS.maxSegmentsPerOrg),
  VEXIL_MAX_SEGMENT_VALUES: intIn(1, 1_000_000).default(DEFAULT_TENANCY_LIMITS.maxSegmentValues),
  VEXIL_MAX_PENDING_SCHEDULES_PER_FLAG: intIn(1, 1_000_000).default(DEFAULT_TENANCY_LIMITS.maxPendingSchedulesPerFlag),
  VEXIL_MAX_PENDING_SCHEDULES_PER_ORG: intIn(1, 100_000_000).default(DEFAULT_TENANCY_LIMITS.maxPendingSchedulesPerOrg),
  // Database faults (docs/storage.md): statement, lock and idle-in-transaction timeout.
  VEXIL_DB_STATEMENT_TIMEOUT_MS: intIn(1, 3_600_000).default(5000),
  // Slow clients (docs/limits.md, "Slow clients"): 10 s, 30 s and 120 s are the defaults and the
  // most allowed; lower values are for tests.
  VEXIL_HEAD_TIMEOUT_MS: intIn(100, 10_000).default(10_000),
  VEXIL_BODY_TIMEOUT_MS: intIn(100, 30_000).default(30_000),
  VEXIL_IDLE_TIMEOUT_MS: intIn(100, 120_000).default(120_000),
  // Event streams (docs/ofrep.md, "The event stream"): per key and node, and how often an open
  // stream's key is read again.
  VEXIL_SSE_MAX_STREAMS_PER_KEY: intIn(1, 10_000_000).default(1000),
  VEXIL_SSE_KEY_RECHECK_MS: intIn(100, 60_000).default(60_000),
  // Bus trust (docs/cluster.md, "Bus trust"): every bus message signed with it (HMAC-SHA256).
  VEXIL_CLUSTER_SECRET: z.string().min(32, 'must be at least 32 characters').optional(),
  // Flag insights (docs/insights.md): evaluation counting on or off (off: the bench baseline), how
  // often the management actor writes the counts, and the most distinct counters held between two
  // writes (past it, counts are dropped and counted in the log).
  VEXIL_INSIGHTS: z.enum(['on', 'off']).default('on'),
  VEXIL_INSIGHTS_FLUSH_MS: intIn(50, 10_000).default(10_000),
  VEXIL_INSIGHTS_MAX_PENDING: intIn(1000, 10_000_000).default(1_000_000),
  // Change-request previews over sampled contexts (docs/change-requests.md, "Sampled contexts"):
  // contexts kept per flag and stage on this node (0: off), and the most bytes all of them count for.
  VEXIL_CONTEXT_SAMPLE: intIn(0, 1000).default(0),
  VEXIL_CONTEXT_SAMPLE_MAX_BYTES: intIn(1024 * 1024, 4 * 1024 * 1024 * 1024).default(64 * 1024 * 1024),
  // Flag statuses (docs/insights.md, "Lifecycle"): how often the management actor recomputes them.
  VEXIL_INSIGHTS_STATUS_MS: intIn(50, 60_000).default(1000),
  // Webhooks (docs/webhooks.md, docs/limits.md "Webhooks").
  VEXIL_WEBHOOK_ALLOW_HTTP: z.enum(['0', '1', 'true', 'false']).default('0'),
  VEXIL_WEBHOOK_ALLOW_PRIVATE: z.enum(['0', '1', 'true', 'false']).default('0'),
  VEXIL_MAX_WEBHOOKS_PER_ORG: intIn(0, 10_000).default(20),
  VEXIL_WEBHOOK_TIMEOUT_MS: intIn(100, 600_000).default(10_000),
  VEXIL_WEBHOOK_RETRY_BASE_MS: intIn(10, 3_600_000).default(2000),
  VEXIL_WEBHOOK_RETRY_MAX_MS: intIn(10, 86_400_000).default(3_600_000),
  VEXIL_WEBHOOK_RETRY_FOR_MS: intIn(1000, 30 * 86_400_000).default(3 * 86_400_000),
  VEXIL_WEBHOOK_POLL_MS: intIn(10, 600_000).default(1000),
  VEXIL_WEBHOOK_CONCURRENCY: intIn(1, 1000).default(16),
  VEXIL_WEBHOOK_ROTATION_OVERLAP_MS: intIn(0, 30 * 86_400_000).default(86_400_000),
});

export interface Config {
  host: string;
  port: number;
  dataDir: string;
  databaseUrl: string | null;
  natsUrl: string | null;
  bootstrapAdminKey: string | null;
  operatorToken: string | null;
  rateLimitEval: number;
  rateLimitMgmt: number;
  graphqlMaxDepth: number;
  graphqlMaxEvaluations: number;
  /** Field selections per GraphQL operation, fragments expanded (docs/limits.md, "GraphQL documents"). */
  graphqlMaxFields: number;
  /** Upper bound of the values one GraphQL result may hold, estimated before executing (docs/graphql.md). */
  graphqlMaxResult: number;
  /** Mutation fields in one GraphQL document; each costs a management token (docs/graphql.md, "Limits"). */
  graphqlMaxMutations: number;
  /** Largest answer body any route sends, in bytes; past it 400 naming how to page (docs/limits.md). */
  maxAnswerBytes: number;
  /** Evaluation context size limits (docs/limits.md, "Evaluation contexts"). */
  contextLimits: { maxDepth: number; maxValues: number };
  /** Failed authentications per second per client address (burst: 1 s worth). */
  rateLimitAuthFailures: number;
  /** A NATS `.creds` file (JWT + NKey seed), or null. */
  natsCreds: string | null;
  evalWorkers: number;
  /** Evaluations handed to the pool and not yet answered, past which requests get 503 (docs/cluster.md). */
  evalQueueMax: number;
  /** Who decides between the front thread and the pool per request (src/evaluation/pool/handoff.ts). */
  evalHandoff: 'auto' | 'always' | 'never';
  /** The management actor process's scheduling (src/management/priority.ts). */
  managementPriority: 'nice' | 'idle';
  /** The nice value of every thread of the management actor's process (src/management/transport.ts). */
  managementNice: number;
  /** Compiled flags each evaluation worker keeps (docs/snapshots.md); 0 compiles on every use. */
  workerFlagCache: number;
  keyCacheTtlMs: number;
  /** How long past its cache lifetime a key the database cannot re-check is still served, then 503 (docs/limits.md). */
  keyStaleMaxMs: number;
  /** PostgreSQL version poll while the cluster bus is down, and while it is up (safety net). */
  syncPollMs: number;
  syncSafetyPollMs: number;
  nodeId: string;
  /** Refuse to start on the node:http fallback front. */
  requireNativeHttp: boolean;
  /** `node` forces the node:http front (tests, comparisons); `auto` prefers native uWebSockets.js. */
  httpFront: 'auto' | 'node';
  /** Front threads serving the port (VEXIL_FRONT_THREADS; docs/threads.md). */
  frontThreads: number;
  /** How they share it (VEXIL_FRONT_ACCEPT). */
  frontAccept: 'auto' | 'reuseport' | 'acceptor';
  /** Time in-flight requests get after SIGTERM/SIGINT (README, "Health checks"). */
  shutdownGraceMs: number;
  logLevel: 'debug' | 'info' | 'warn' | 'error' | 'silent';
  /** `GET /metrics` and the per-request metrics (off: only to measure their cost). */
  metrics: boolean;
  /** When set, `GET /metrics` needs `Authorization: Bearer <token>`. */
  metricsToken: string | null;
  /** Base URL clients reach this service at (OFREP event-stream URLs); null: from the request's Host. */
  publicUrl: string | null;
  /** VEXIL_CORS_ORIGINS: origins allowed to call the OFREP routes from a browser (`*`: any); empty: none. */
  corsOrigins: string[];
  /** Count and size limits per organization, flag and configuration (docs/limits.md, "Tenancy limits"). */
  tenancyLimits: TenancyLimits;
  /** One database statement, a write's wait for its organization's lock, an idle transaction (docs/storage.md). */
  dbStatementTimeoutMs: number;
  /** Request head, body and keep-alive idle time bounds (docs/limits.md, "Slow clients"; http/client-timeouts.ts). */
  clientTimeouts: ClientTimeouts;
  /** Open OFREP event streams of one key on this node; one more is 429 (docs/ofrep.md, "The event stream"). */
  sseMaxStreamsPerKey: number;
  /** How often every open event stream's key is read again from the database (at most 60 s). */
  sseKeyRecheckMs: number;
  /**
   * Signs every cluster bus message; unsigned or wrongly signed ones are dropped (docs/cluster.md,
   * "Bus trust"). Never logged.
   */
  clusterSecret: string | null;
  /** VEXIL_INSIGHTS: evaluations are counted per flag (docs/insights.md). */
  insights: boolean;
  /** VEXIL_INSIGHTS_FLUSH_MS: the management actor writes the counts this often. */
  insightsFlushMs: number;
  /** VEXIL_INSIGHTS_MAX_PENDING: distinct counters held between two writes, at most. */
  insightsMaxPending: number;
  /** How often the management actor reads usage and recomputes flag statuses (docs/insights.md, "Lifecycle"). */
  insightsStatusMs: number;
  /** VEXIL_CONTEXT_SAMPLE: evaluated contexts kept per flag and stage for previews (0: off; docs/change-requests.md). */
  contextSample: number;
  /** VEXIL_CONTEXT_SAMPLE_MAX_BYTES: what all sampled contexts of the node may count for (samples/store.ts). */
  contextSampleMaxBytes: number;
  /** Webhooks (docs/webhooks.md). */
  webhooks: WebhookSettings;
}

export interface WebhookSettings {
  /** VEXIL_WEBHOOK_ALLOW_HTTP: http:// endpoints allowed (else https only). */
  allowHttp: boolean;
  /** VEXIL_WEBHOOK_ALLOW_PRIVATE: loopback, private, link-local... addresses allowed. */
  allowPrivate: boolean;
  /** VEXIL_MAX_WEBHOOKS_PER_ORG */
  maxPerOrg: number;
  /** VEXIL_WEBHOOK_TIMEOUT_MS: one attempt, connection to the last byte read. */
  timeoutMs: number;
  /** VEXIL_WEBHOOK_RETRY_BASE_MS / _MAX_MS / _FOR_MS: the retry schedule (retry.ts). */
  retryBaseMs: number;
  retryMaxMs: number;
  retryForMs: number;
  /** VEXIL_WEBHOOK_POLL_MS: how often the dispatcher looks for other nodes' messages. */
  pollMs: number;
  /** VEXIL_WEBHOOK_CONCURRENCY: attempts in flight on one node (one per endpoint at most). */
  concurrency: number;
  /** VEXIL_WEBHOOK_ROTATION_OVERLAP_MS: how long a rotated-out secret still signs. */
  rotationOverlapMs: number;
}

export class ConfigError extends Error {}

/** Reads the settings from `env`; empty strings count as unset. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const present = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = schema.safeParse(present);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ConfigError(`Invalid setting ${String(issue.path[0])}: ${issue.message}`);
  }
  const e = parsed.data;
  return {
    host: e.HOST,
    port: e.PORT,
    dataDir: e.VEXIL_DATA_DIR,
    databaseUrl: e.DATABASE_URL ?? null,
    natsUrl: e.NATS_URL ?? null,
    bootstrapAdminKey: e.VEXIL_BOOTSTRAP_ADMIN_KEY ?? null,
    operatorToken: e.VEXIL_OPERATOR_TOKEN ?? null,
    rateLimitEval: e.VEXIL_RATE_LIMIT_EVAL,
    rateLimitMgmt: e.VEXIL_RATE_LIMIT_MGMT,
    graphqlMaxDepth: e.VEXIL_GRAPHQL_MAX_DEPTH,
    graphqlMaxEvaluations: e.VEXIL_GRAPHQL_MAX_EVALUATIONS,
    graphqlMaxFields: e.VEXIL_GRAPHQL_MAX_FIELDS,
    graphqlMaxResult: e.VEXIL_GRAPHQL_MAX_RESULT,
    graphqlMaxMutations: e.VEXIL_GRAPHQL_MAX_MUTATIONS,
    maxAnswerBytes: e.VEXIL_MAX_ANSWER_BYTES,
    contextLimits: { maxDepth: e.VEXIL_CONTEXT_MAX_DEPTH, maxValues: e.VEXIL_CONTEXT_MAX_VALUES },
    rateLimitAuthFailures: e.VEXIL_RATE_LIMIT_AUTH_FAILURES,
    natsCreds: e.VEXIL_NATS_CREDS ?? null,
    evalWorkers: e.VEXIL_EVAL_WORKERS,
    evalQueueMax: e.VEXIL_EVAL_QUEUE_MAX,
    evalHandoff: e.VEXIL_EVAL_HANDOFF,
    managementPriority: e.VEXIL_MANAGEMENT_PRIORITY === 'idle' ? 'idle' : 'nice',
    managementNice: e.VEXIL_MANAGEMENT_NICE,
    workerFlagCache: e.VEXIL_WORKER_FLAG_CACHE,
    keyCacheTtlMs: e.VEXIL_KEY_CACHE_TTL_MS,
    keyStaleMaxMs: e.VEXIL_KEY_STALE_MAX_MS,
    syncPollMs: e.VEXIL_SYNC_POLL_MS,
    syncSafetyPollMs: e.VEXIL_SYNC_SAFETY_POLL_MS,
    nodeId: e.VEXIL_NODE_ID ?? `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`,
    requireNativeHttp: e.VEXIL_REQUIRE_NATIVE_HTTP === '1' || e.VEXIL_REQUIRE_NATIVE_HTTP === 'true',
    httpFront: e.VEXIL_HTTP_FRONT,
    frontThreads: e.VEXIL_FRONT_THREADS,
    frontAccept: e.VEXIL_FRONT_ACCEPT,
    shutdownGraceMs: e.VEXIL_SHUTDOWN_GRACE_MS,
    logLevel: e.VEXIL_LOG_LEVEL,
    metrics: e.VEXIL_METRICS === '1' || e.VEXIL_METRICS === 'true',
    metricsToken: e.VEXIL_METRICS_TOKEN ?? null,
    publicUrl: e.VEXIL_PUBLIC_URL?.replace(/\/+$/, '') ?? null,
    corsOrigins: e.VEXIL_CORS_ORIGINS ?? [],
    tenancyLimits: {
      maxFlagsPerOrg: e.VEXIL_MAX_FLAGS_PER_ORG,
      maxKeysPerOrg: e.VEXIL_MAX_KEYS_PER_ORG,
      maxConfigsPerFlag: e.VEXIL_MAX_CONFIGS_PER_FLAG,
      maxRulesPerConfig: e.VEXIL_MAX_RULES_PER_CONFIG,
      maxConditionsPerRule: e.VEXIL_MAX_CONDITIONS_PER_RULE,
      maxVariantsPerFlag: e.VEXIL_MAX_VARIANTS_PER_FLAG,
      maxValueBytes: e.VEXIL_MAX_VALUE_BYTES,
      maxSegmentsPerOrg: e.VEXIL_MAX_SEGMENTS_PER_ORG,
      maxSegmentValues: e.VEXIL_MAX_SEGMENT_VALUES,
      maxPendingSchedulesPerFlag: e.VEXIL_MAX_PENDING_SCHEDULES_PER_FLAG,
      maxPendingSchedulesPerOrg: e.VEXIL_MAX_PENDING_SCHEDULES_PER_ORG,
    },
    dbStatementTimeoutMs: e.VEXIL_DB_STATEMENT_TIMEOUT_MS,
    clientTimeouts: { headMs: e.VEXIL_HEAD_TIMEOUT_MS, bodyMs: e.VEXIL_BODY_TIMEOUT_MS, idleMs: e.VEXIL_IDLE_TIMEOUT_MS },
    sseMaxStreamsPerKey: e.VEXIL_SSE_MAX_STREAMS_PER_KEY,
    sseKeyRecheckMs: e.VEXIL_SSE_KEY_RECHECK_MS,
    clusterSecret: e.VEXIL_CLUSTER_SECRET ?? null,
    insights: e.VEXIL_INSIGHTS === 'on',
    insightsFlushMs: e.VEXIL_INSIGHTS_FLUSH_MS,
    insightsMaxPending: e.VEXIL_INSIGHTS_MAX_PENDING,
    insightsStatusMs: e.VEXIL_INSIGHTS_STATUS_MS,
    contextSample: e.VEXIL_CONTEXT_SAMPLE,
    contextSampleMaxBytes: e.VEXIL_CONTEXT_SAMPLE_MAX_BYTES,
    webhooks: {
      allowHttp: e.VEXIL_WEBHOOK_ALLOW_HTTP === '1' || e.VEXIL_WEBHOOK_ALLOW_HTTP === 'true',
      allowPrivate: e.VEXIL_WEBHOOK_ALLOW_PRIVATE === '1' || e.VEXIL_WEBHOOK_ALLOW_PRIVATE === 'true',
      maxPerOrg: e.VEXIL_MAX_WEBHOOKS_PER_ORG,
      timeoutMs: e.VEXIL_WEBHOOK_TIMEOUT_MS,
      retryBaseMs: e.VEXIL_WEBHOOK_RETRY_BASE_MS,
      retryMaxMs: e.VEXIL_WEBHOOK_RETRY_MAX_MS,
      retryForMs: e.VEXIL_WEBHOOK_RETRY_FOR_MS,
      pollMs: e.VEXIL_WEBHOOK_POLL_MS,
      concurrency: e.VEXIL_WEBHOOK_CONCURRENCY,
      rotationOverlapMs: e.VEXIL_WEBHOOK_ROTATION_OVERLAP_MS,
    },
  };
}
