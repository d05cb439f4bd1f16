/**
 * The node's one copy of its flag data in shared memory (shared-store.ts), kept current from the
 * snapshot registry and announced to every thread that reads it: the evaluation pool's workers on
 * a BroadcastChannel (they say 'hello' when they start), and each front thread on its own port
 * (`attach`), where the announcements stay in order with everything else the main thread tells it
 * (a relayed management answer arrives after the change it made: docs/threads.md).
 *
 * Built only when some thread other than the main one reads the data (VEXIL_EVAL_WORKERS > 0 or
 * VEXIL_FRONT_THREADS > 1); the main thread itself evaluates from the registry.
 */
import { BroadcastChannel } from 'node:worker_threads';
import type { SnapshotRegistry } from './registry.js';
import { SharedStoreWriter, type StoreMessage } from './shared-store.js';

export interface PublisherOptions {
  /** BroadcastChannel name of the evaluation workers (one per node). */
  channel: string;
  /** Dead bytes below which an organization is never compacted (tests lower it). */
  compactMinBytes?: number;
}

export class SnapshotPublisher {
  /** Writes each change once; its `stats` count what was written and posted. */
  readonly store: SharedStoreWriter;
  private readonly channel: BroadcastChannel;
  private readonly readers = new Set<(msg: StoreMessage) => void>();

  constructor(registry: SnapshotRegistry, opts: PublisherOptions) {
    this.channel = new BroadcastChannel(opts.channel);
    this.channel.unref();
    this.store = new SharedStoreWriter(
      (msg) => {
        this.channel.postMessage(msg);
        for (const post of this.readers) post(msg);
      },
      { compactMinBytes: opts.compactMinBytes },
    );
    // A starting evaluation worker gets references to the shared memory (one small message per
    // organization), not the data: nothing is copied per worker.
    this.channel.onmessage = (ev: unknown) => {
      if ((ev as { data: StoreMessage }).data.type === 'hello') this.store.replay((msg) => this.channel.postMessage(msg));
    };
    for (const orgId of registry.loadedOrgIds()) this.store.update(orgId, registry.peek(orgId)!, 'all');
    registry.onChange((orgId, snap, touches) => this.store.update(orgId, snap, touches));
  }

  /** A front thread's port: it is told every current generation now, and every change from now on. Returns the detach. */
  attach(post: (msg: StoreMessage) => void): () => void {
    this.store.replay(post);
    this.readers.add(post);
    return () => this.readers.delete(post);
  }

  close(): void {
    this.readers.clear();
    this.channel.close();
  }
}
