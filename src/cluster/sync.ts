/**
 * Keeps this node's snapshots and key cache in step with the others:
 * - bus events: a change reloads what it touched; a key event drops that key from the cache;
 * - a poller compares every loaded organization's version with PostgreSQL: every
 *   `pollMs` while the bus is down (the fallback), every `safetyPollMs` while it is up (a net for
 *   lost messages);
 * - when the bus comes back, one immediate poll resynchronises snapshots and the key cache is
 *   cleared (key events may have been missed while it was away).
 */
import type { KeyCache } from '../auth/key-cache.js';
import { orgVersions } from '../features/organizations/store.js';
import type { SnapshotRegistry } from '../snapshots/registry.js';
import type { Database } from '../storage/database.js';
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

  constructor(
    private readonly db: Database,
    private readonly snapshots: SnapshotRegistry,
    private readonly keys: KeyCache,
    private readonly bus: Bus & Partial<Connectivity>,
    private readonly log: Logger,
    private readonly opts: SyncOptions,
  ) {
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

  /** Reloads every loaded organization whose stored version is newer than its snapshot. */
  pollNow(): Promise<void> {
    if (this.polling !== null) return this.polling;
    this.polling = (async () => {
      try {
        const versions = await orgVersions(this.db);
        const work: Promise<void>[] = [];
        for (const orgId of this.snapshots.loadedOrgIds()) {
          const stored = versions.get(orgId);
          const snap = this.snapshots.peek(orgId);
          if (stored === undefined || snap === undefined || stored > snap.org.version) {
            work.push(this.snapshots.apply({ orgId, version: stored ?? Number.MAX_SAFE_INTEGER, touches: 'all' }));
          }
        }
        await Promise.all(work);
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
