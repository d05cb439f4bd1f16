/**
 * Which nodes are alive, from heartbeats on the bus (one a second, a node counts as gone after
 * `ttlMs` of silence). The count sets this node's share of every key's rate limit. While the bus
 * is down the last known count is kept: no node can learn of others then, and keeping the share
 * errs on the side of refusing rather than over-admitting.
 */
import type { Bus } from './bus.js';

export class Membership {
  private readonly peers = new Map<string, number>();
  private readonly timer: NodeJS.Timeout;
  private count = 1;

  constructor(
    private readonly bus: Bus,
    private readonly nodeId: string,
    private readonly onCount: (nodes: number) => void,
    intervalMs = 1000,
    private readonly ttlMs = 3500,
    private readonly now: () => number = Date.now,
  ) {
    bus.onEvent((e) => {
      if (e.kind !== 'heartbeat' || e.node === this.nodeId) return;
      const known = this.peers.has(e.node);
      this.peers.set(e.node, this.now());
      if (!known) this.recount();
    });
    this.beat();
    this.timer = setInterval(() => this.beat(), intervalMs);
    this.timer.unref();
  }

  get nodes(): number {
    return this.count;
  }

  private beat(): void {
    this.bus.publish({ kind: 'heartbeat', node: this.nodeId });
    const cutoff = this.now() - this.ttlMs;
    for (const [id, seen] of this.peers) if (seen < cutoff) this.peers.delete(id);
    this.recount();
  }

  private recount(): void {
    const n = 1 + this.peers.size;
    if (n === this.count) return;
    this.count = n;
    this.onCount(n);
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
