/**
 * Messages between the front thread and the evaluation workers.
 *
 * Snapshot replication goes over a BroadcastChannel (one per node): every worker receives every
 * update, in the order the front thread applied them. Each evaluation item carries the snapshot
 * version the front thread had when it accepted the request; a worker that is behind waits for
 * that version before evaluating, so a node never answers from older data than it already served
 * (read-your-writes holds through the pool).
 */
import type { Principal } from '../auth/permissions.js';
import type { Evaluation, Flag, FlagConfig, Organization } from '../domain/types.js';

export interface FlagData {
  flag: Flag;
  configs: FlagConfig[];
}

export type SnapshotMessage =
  | { type: 'full'; org: Organization; flags: FlagData[] }
  | { type: 'flag'; org: Organization; name: string; data: FlagData | null }
  | { type: 'settings'; org: Organization }
  | { type: 'drop'; orgId: string }
  /** Sent by a worker that has just started: the front thread answers with full snapshots. */
  | { type: 'hello' };

export interface EvalItem {
  kind: 'eval';
  orgId: string;
  /** Minimum snapshot version the worker must hold. */
  version: number;
  flag: string;
  userId: string;
  stage: string;
  clientId: string | null;
  context: Record<string, unknown> | null;
}

/**
 * A GraphQL document whose operation only evaluates (see GraphQLExecutor.prepare): the worker
 * executes it with graphql-jit against its replica and answers the serialised response.
 */
export interface GraphQLItem {
  kind: 'graphql';
  orgId: string;
  version: number;
  principal: Principal;
  query: string;
  operationName: string | null;
  variables: Record<string, unknown> | null;
}

export type PoolItem = EvalItem | GraphQLItem;

export interface EvalTask {
  nowMs: number;
  items: PoolItem[];
}

export type PoolError = { error: 'NOT_FOUND' | 'STALE' | 'INTERNAL'; message: string };
/** An evaluation, a serialised GraphQL response, or an error. */
export type EvalOutcome = Evaluation | { graphql: string } | PoolError;

export interface WorkerData {
  channel: string;
  graphqlMaxDepth: number;
  graphqlMaxEvaluations: number;
}
