/**
 * The cluster bus carries invalidations between nodes that share one PostgreSQL. A node applies
 * its own changes directly (read-your-writes) and publishes them so the others look again: an
 * event is a hint, never data a node serves (docs/cluster.md, "Bus trust"; wire.ts checks it).
 */
import type { Change } from '../snapshots/registry.js';

export type ClusterEvent =
  | { kind: 'change'; change: Change }
  | { kind: 'key'; orgId: string; keyId: string }
  /** Liveness, every second: nodes count each other to share rate limits. */
  | { kind: 'heartbeat'; node: string };

export interface Bus {
  publish(event: ClusterEvent): void;
  onEvent(handler: (event: ClusterEvent) => void): void;
  close(): Promise<void>;
}

/** Single node: there is nobody else to tell. */
export class LocalBus implements Bus {
  publish(): void {}
  onEvent(): void {}
  async close(): Promise<void> {}
}
