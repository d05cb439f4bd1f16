/**
 * Which nodes are alive, from heartbeats on the bus (one a second, a node counts as gone after
 * `ttlMs` of silence). The count sets this node's share of every key's rate limit. While the bus
 * is down the last known count is kept: no node can learn of others then, and keeping the share
 * errs on the side of refusing rather than over-admitting.
 *
 * A heartbeat alone proves nothing (anyone on the bus can send one, under any id): with a
 * `PeerRegistry` (node.ts passes the database's `cluster_nodes`), a peer counts only while its id
 * is also in the database with a fresh row, which only a node holding the database's credentials
 * can write. Every node refreshes its own row every `refreshMs`; a heartbeat from an id not yet
 * confirmed re-reads the registry, at most once per `confirmMinMs`, so a new node counts within
 * about a second of its first heartbeat and a flood of forged ids costs one small read a second.
 */
import type { Bus } from './bus.js';

/** Unconfirmed ids remembered between two registry reads (forged ones cannot grow this further). */
const MAX_PENDING = 256;
/** How long a shutdown waits to remove this node's row. */
const LEAVE_WAIT_MS = 1000;

export interface PeerRegistry {
  /** Registers or refreshes this node. */
  register(): Promise<void>;
  /** The ids of the nodes registered recently enough to count. */
  live(): Promise<Set<string>>;
  /** This node leaves (graceful shutdown). */
  leave(): Promise<void>;
}

export interface MembershipOptions {
  intervalMs?: number;
  ttlMs?: number;
  /** How often the node refreshes its registration and re-reads the others'. */
  refreshMs?: number;
  /** At most one registry read this often for heartbeats of ids not yet confirmed. */
  confirmMinMs?: number;
  now?: () => number;
}

export class Membership {
  /** Confirmed peers (or every peer, without a registry): id → last heartbeat. */
  private readonly peers = new Map<string, number>();
  /** Heartbeats of ids not confirmed yet, waiting for the next registry read. */
  private readonly pending = new Map<string, number>();
  private readonly timer: NodeJS.Timeout;
  private readonly refreshTimer: NodeJS.Timeout | null = null;
  private count = 1;
  /** Ids the registry confirmed at the last read; null: no registry, every heartbeat counts. */
  private confirmed: Set<string> | null;
  private reading: Promise<void> | null = null;
  private lastRead = 0;
  private stopped = false;
  private readonly ttlMs: number;
  private readonly confirmMinMs: number;
  private readonly now: () => number;

  constructor(
    private readonly bus: Bus,
    private readonly nodeId: string,
    private readonly onCount: (nodes: number) => void,
    private readonly registry: PeerRegistry | null = null,
    opts: MembershipOptions = {},
  ) {
    this.ttlMs = opts.ttlMs ?? 3500;
    this.confirmMinMs = opts.confirmMinMs ?? 1000;
    this.now = opts.now ?? Date.now;
    this.confirmed = registry === null ? null : new Set();
    bus.onEvent((e) => {
      if (e.kind !== 'heartbeat' || e.node === this.nodeId) return;
      if (this.confirmed === null || this.confirmed.has(e.node)) {
        const known = this.peers.has(e.node);
        this.peers.set(e.node, this.now());
        if (!known) this.recount();
        return;
      }
      // Not confirmed (yet): remembered, boundedly, until the registry has been read again.
      if (this.pending.size < MAX_PENDING) this.pending.set(e.node, this.now());
      this.readRegistry(false);
    });
    if (registry !== null) {
      // Registered before the first heartbeat, so peers confirm this node at once.
      void this.refresh().finally(() => this.beat());
      this.refreshTimer = setInterval(() => void this.refresh(), opts.refreshMs ?? 10_000);
      this.refreshTimer.unref();
    } else {
      this.beat();
    }
    this.timer = setInterval(() => this.beat(), opts.intervalMs ?? 1000);
    this.timer.unref();
  }

  get nodes(): number {
    return this.count;
  }

  private async refresh(): Promise<void> {
    if (this.stopped) return;
    try {
      await this.registry!.register();
    } catch {
      // The database is away: peers keep counting this node until its row is 30 s old.
    }
    this.readRegistry(true);
    await this.reading;
  }

  /** Re-reads the confirmed ids (throttled unless `force`); a failed read keeps the last set. */
  private readRegistry(force: boolean): void {
    if (this.reading !== null || (!force && this.now() - this.lastRead < this.confirmMinMs)) return;
    this.lastRead = this.now();
    this.reading = this.registry!.live()
      .then((ids) => {
        this.confirmed = ids;
        for (const [id, at] of this.pending) if (ids.has(id)) this.peers.set(id, at);
        this.pending.clear();
        for (const id of this.peers.keys()) if (!ids.has(id)) this.peers.delete(id);
        this.recount();
      })
      .catch(() => {})
      .finally(() => (this.reading = null));
  }

  private beat(): void {
    if (this.stopped) return;
    this.bus.publish({ kind: 'heartbeat', node: this.nodeId });
    const cutoff = this.now() - this.ttlMs;
    for (const [id, seen] of this.peers) if (seen < cutoff) this.peers.delete(id);
    for (const [id, seen] of this.pending) if (seen < cutoff) this.pending.delete(id);
    this.recount();
  }

  private recount(): void {
    const n = 1 + this.peers.size;
    if (n === this.count) return;
    this.count = n;
    this.onCount(n);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    if (this.refreshTimer !== null) clearInterval(this.refreshTimer);
    // Bounded: a database that does not answer must not hold up the shutdown.
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<void>((r) => (timer = setTimeout(r, LEAVE_WAIT_MS)));
    await Promise.race([this.registry?.leave().catch(() => {}), waited]);
    clearTimeout(timer);
  }
}
