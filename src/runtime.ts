/**
 * What request handlers and services need, built once per node, in the process that runs them.
 * Services take it as their first argument instead of importing singletons, so tests can build
 * several nodes in one process.
 *
 * The node's two processes each build their own (docs/cluster.md, "The boundary"):
 * - `FrontRuntime` (node.ts): admission state (key cache, rate limits, failed-authentication
 *   budget), the cluster bus, the evaluation pool. It has no database: the front reads through the
 *   management actor (management/handle.ts) and writes nothing.
 * - `ActorRuntime` (management/actor.ts): the database, and a bus that hands every event to the
 *   front. It admits nothing.
 * `Runtime` is what both have: what evaluation reads on either side (a management GraphQL
 * document evaluates too).
 */
import type { Config } from './config.js';
import type { Database } from './storage/database.js';
import type { SnapshotRegistry } from './snapshots/registry.js';
import type { KeyCache } from './auth/key-cache.js';
import type { AuthFailureBudget } from './auth/auth-failures.js';
import type { Limiter } from './ratelimit/token-bucket.js';
import type { Bus } from './cluster/bus.js';
import type { Logger } from './util/log.js';
import type { EvalPool } from './evaluation/pool/eval-pool.js';
import type { EvalCounts } from './ops/eval-counts.js';
import type { ManagementKey } from './domain/types.js';
import type { SampleStore } from './samples/store.js';

export interface Runtime {
  config: Config;
  snapshots: SnapshotRegistry;
  log: Logger;
  /** Evaluation worker pool, or null when evaluating inline (VEXIL_EVAL_WORKERS=0, and always in the actor). */
  pool: EvalPool | null;
  /** Evaluations served, by reason (metrics). */
  evalCounts: EvalCounts;
  /** Wall clock in ms (evaluation time windows). */
  now(): number;
}

/** The front's: it admits requests, evaluates, and follows the cluster. */
export interface FrontRuntime extends Runtime {
  keys: KeyCache;
  limiter: Limiter;
  /** Failed authentications per client address (docs/limits.md, "Failed authentications"). */
  authFailures: AuthFailureBudget;
  bus: Bus;
}

/** The management actor's: it runs management requests against the database it owns. */
export interface ActorRuntime extends Runtime {
  db: Database;
  /** What a write publishes goes to the front (mailbox `event`), which applies it and tells the other nodes. */
  bus: Bus;
  /**
   * A key this node created or rotated, committed, with the hash of its value: handed to the
   * front's key cache before the answer (mailbox `key`), so its first request asks nothing.
   */
  keyIssued?(hash: string, key: ManagementKey): void;
  /** The contexts this node recently evaluated (VEXIL_CONTEXT_SAMPLE), for previews; null or absent when sampling is off. */
  samples?: SampleStore | null;
}
