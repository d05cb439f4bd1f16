/**
 * Settings come from the environment (CONTRACT.md 1) and are validated once at start-up: a bad
 * value stops the node with a message naming the variable, rather than surfacing under load.
 */
import { randomBytes } from 'node:crypto';
import { cpus, hostname } from 'node:os';
import { z } from 'zod';

const intIn = (min: number, max: number) => z.coerce.number().int().min(min).max(max);

const schema = z.object({
  HOST: z.string().min(1).default('127.0.0.1'),
  PORT: intIn(0, 65535).default(8080),
  VEXIL_DATA_DIR: z.string().min(1).default('./data'),
  DATABASE_URL: z.string().regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL').optional(),
  NATS_URL: z.string().min(1).optional(),
  VEXIL_BOOTSTRAP_ADMIN_KEY: z.string().regex(/^[0-9a-f]{64}$/, 'must be 64 lowercase hex characters').optional(),
  VEXIL_OPERATOR_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  VEXIL_RATE_LIMIT_EVAL: z.coerce.number().positive().default(10_000),
  VEXIL_RATE_LIMIT_MGMT: z.coerce.number().positive().default(100),
  VEXIL_GRAPHQL_MAX_DEPTH: intIn(1, 1000).default(15),
  VEXIL_GRAPHQL_MAX_EVALUATIONS: intIn(1, 100_000).default(100),
  VEXIL_EVAL_WORKERS: intIn(0, 256).default(cpus().length),
  VEXIL_KEY_CACHE_TTL_MS: intIn(0, 3_600_000).default(60_000),
  VEXIL_SYNC_POLL_MS: intIn(50, 600_000).default(1000),
  VEXIL_SYNC_SAFETY_POLL_MS: intIn(100, 3_600_000).default(15_000),
  VEXIL_NODE_ID: z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, 'letters, digits, _ . - only').optional(),
  VEXIL_ALLOW_UWS_FALLBACK: z.enum(['0', '1', 'true', 'false']).default('0'),
  VEXIL_LOG_LEVEL: z.enum(['debug', 'info', 'warn', 'error', 'silent']).default('info'),
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
  evalWorkers: number;
  keyCacheTtlMs: number;
  /** PostgreSQL version poll while the cluster bus is down, and while it is up (safety net). */
  syncPollMs: number;
  syncSafetyPollMs: number;
  nodeId: string;
  allowUwsFallback: boolean;
  logLevel: 'debug' | 'info' | 'warn' | 'error' | 'silent';
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
    evalWorkers: e.VEXIL_EVAL_WORKERS,
    keyCacheTtlMs: e.VEXIL_KEY_CACHE_TTL_MS,
    syncPollMs: e.VEXIL_SYNC_POLL_MS,
    syncSafetyPollMs: e.VEXIL_SYNC_SAFETY_POLL_MS,
    nodeId: e.VEXIL_NODE_ID ?? `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`,
    allowUwsFallback: e.VEXIL_ALLOW_UWS_FALLBACK === '1' || e.VEXIL_ALLOW_UWS_FALLBACK === 'true',
    logLevel: e.VEXIL_LOG_LEVEL,
  };
}
