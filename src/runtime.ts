/**
 * Everything a request handler or service needs, built once per node by `node.ts`. Services take
 * it as their first argument instead of importing singletons, so tests can build several nodes in
 * one process.
 */
import type { Config } from './config.js';
import type { Database } from './storage/database.js';
import type { SnapshotRegistry } from './snapshots/registry.js';
import type { KeyCache } from './auth/key-cache.js';
import type { AuthFailureBudget } from './auth/auth-failures.js';
import type { RateLimiter } from './ratelimit/token-bucket.js';
import type { Bus } from './cluster/bus.js';
import type { Logger } from './util/log.js';
import type { EvalPool } from './evaluation/pool/eval-pool.js';
import type { EvalCounts } from './ops/eval-counts.js';

export interface Runtime {
  config: Config;
  db: Database;
  snapshots: SnapshotRegistry;
  keys: KeyCache;
  limiter: RateLimiter;
  /** Failed authentications per client address (docs/limits.md, "Failed authentications"). */
  authFailures: AuthFailureBudget;
  bus: Bus;
  log: Logger;
  /** Evaluation worker pool, or null when evaluating on the front thread (VEXIL_EVAL_WORKERS=0). */
  pool: EvalPool | null;
  /** Evaluations served, by reason (metrics); shared with the evaluation workers. */
  evalCounts: EvalCounts;
  /** Wall clock in ms (evaluation time windows). */
  now(): number;
}
