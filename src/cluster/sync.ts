/**
 * Keeps this node's snapshots and key cache in step with the others:
 * - bus events: a change is a hint on which the registry reads what changed from the database
 *   (registry.ts, docs/cluster.md "Bus trust"; on the front, its management actor reads, once for
 *   both replicas); a key event drops that key from the cache;
 * - it listens from its construction, which node.ts does before the bus subscribes, and the node
 *   polls once when subscribed (`pollNow`; the bus's first connection also triggers it): a change
 *   published before the subscription is found by that poll, any later one arrives as a hint;
 * - a poller compares every loaded organization's version with PostgreSQL: every
 *   `pollMs` while the bus is down (the fallback), every `safetyPollMs` while it is up (a net for
 *   lost messages);
 * - when the bus comes back, one immediate poll resynchronises snapshots and the key cache is
 *   cleared (key events may have been missed while it was away);
 * - when an organization's snapshot shows renamed (or removed) environments or applications, its
 *   keys are dropped from the cache: a rename rewrote their scopes in the database. This follows
 *   the snapshot, so it happens on every node however the change arrived (the writing node, a bus
 *   event or the poller), and at the same moment the flags show the new names.
 */
import type { KeyCache } from '../auth/key-cache.js';
import type { SnapshotRegistry } from '../snapshots/registry.js';
import type { Logger } from '../util/log.js';
import type { Bus } from './bus.js';

export interface SyncOptions {
  /** Poll interval while the bus is down. */
  pollMs: number;
  /** Poll interval while the bus is up. */
  safetyPollMs: number;
}

export interface Connectivity {
  readonly connected: boolean;
  onConnectivity(handler: (up: boolean) => void): void;
}

export class ClusterSync {
  private timer: NodeJS.Timeout | null = null;
  private polling: Promise<void> | null = null;
  private stopped = false;
  /** Date.now() of the last successful version poll (snapshot age metric). */
  lastPollAt = Date.now();

  constructor(
    /** Every organization's committed version, read from the source of truth (node.ts: the organization store). */
    private readonly orgVersions: () => Promise<Map<string, number>>,
    private readonly snapshots: SnapshotRegistry,
    private readonly keys: KeyCache,
    private readonly bus: Bus & Partial<Connectivity>,
    private readonly log: Logger,
    private readonly opts: SyncOptions,
  ) {
    const signature = (o: { environments: string[]; applications: string[] }) => JSON.stringify([o.environments, o.applications]);
    const names = new Map<string, string>();
    for (const orgId of snapshots.loadedOrgIds()) names.set(orgId, signature(snapshots.peek(orgId)!.org));
    snapshots.onChange((orgId, snap, touches) => {
      if (typeof touches === 'object') return; // a flag change leaves the organization's names alone
      const now = snap === null ? null : signature(snap.org);
      const before = names.get(orgId);
      if (now === null) names.delete(orgId);
      else names.set(orgId, now);
      if (before !== undefined && before !== now) this.keys.invalidateOrg(orgId);
    });
    bus.onEvent((e) => {
      if (e.kind === 'change') {
        this.snapshots.apply(e.change).catch((err) => this.log.warn('snapshot reload failed', { orgId: e.change.orgId, err }));
      } else if (e.kind === 'key') {
        this.keys.invalidateKey(e.keyId);
      }
    });
    bus.onConnectivity?.((up) => {
      if (up) {
        this.keys.clear();
        void this.pollNow();
      }
      this.schedule();
    });
    this.schedule();
  }

  private get interval(): number {
    return this.bus.connected === false ? this.opts.pollMs : this.opts.safetyPollMs;
  }

  private schedule(): void {
    if (this.stopped) return;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      void this.pollNow().finally(() => this.schedule());
    }, this.interval);
    this.timer.unref();
  }

  /** Brings up to date every loaded organization whose stored version is newer than its snapshot. */
  pollNow(): Promise<void> {
    if (this.polling !== null) return this.polling;
    this.polling = (async () => {
      try {
        const versions = await this.orgVersions();
        const work: Promise<void>[] = [];
        for (const orgId of this.snapshots.loadedOrgIds()) {
          const stored = versions.get(orgId);
          const snap = this.snapshots.peek(orgId);
          if (stored === undefined || snap === undefined || stored > snap.org.version) {
            work.push(this.snapshots.apply({ orgId, version: stored ?? Number.MAX_SAFE_INTEGER, touches: 'all' }));
          }
        }
        await Promise.all(work);
        this.lastPollAt = Date.now();
      } catch (err) {
        this.log.warn('version poll failed', { err: (err as Error).message });
      } finally {
        this.polling = null;
      }
    })();
    return this.polling;
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== null) clearTimeout(this.timer);
  }
}
