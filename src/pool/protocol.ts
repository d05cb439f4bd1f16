/**
 * Messages between the front thread and the evaluation workers.
 *
 * Snapshot replication goes over a BroadcastChannel (one per node): every worker receives every
 * update, in the order the front thread applied them. Each evaluation item carries the snapshot
 * version the front thread had when it accepted the request; a worker that is behind waits for
 * that version before evaluating, so a node never answers from older data than it already served
 * (read-your-writes holds through the pool).
 */
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
  orgId: string;
  /** Minimum snapshot version the worker must hold. */
  version: number;
  flag: string;
  userId: string;
  stage: string;
  clientId: string | null;
  context: Record<string, unknown> | null;
}

export interface EvalTask {
  nowMs: number;
  items: EvalItem[];
}

export type EvalOutcome = Evaluation | { error: 'NOT_FOUND' | 'STALE' | 'INTERNAL'; message: string };

export interface WorkerData {
  channel: string;
}
