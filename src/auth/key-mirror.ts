/**
 * What a front thread other than the main one knows of keys (docs/threads.md, "Keys"): the keys
 * the main thread's key cache (key-cache.ts, the node's one cache) has told it it may serve, and
 * nothing else. A key it does not hold is never looked up here: the request goes to the main
 * thread (`NOT_HELD`, thread-routes.ts), which looks it up once for the node, spends the
 * failed-authentication budget if it is unknown, and sends the key back with its answer.
 *
 * Revocations are immediate on every thread: the main thread posts each one to every front
 * thread, then bumps a shared counter (`epoch`). Every `peek` compares that counter with the last
 * value it saw (one `Atomics.load`) and, when it moved, takes the pending messages off the port at
 * once (`drain`, `receiveMessageOnPort`), so a request that starts after the main thread
 * revoked a key, on whatever thread, no longer finds it.
 */
import type { ManagementKey } from '../domain/types.js';

/**
 * Thrown by what a front thread cannot decide itself (an unknown key, the failed-authentication
 * budget, an organization it has not been sent): the request is relayed to the main thread. One
 * instance, never a VexilError, so nothing answers it by mistake.
 */
export const NOT_HELD: Error = Object.freeze(new Error('Not held on this front thread: relayed to the main thread')) as Error;

interface Entry {
  key: ManagementKey;
  expiresMs: number;
}

export class KeyMirror {
  private readonly byHash = new Map<string, Entry>();
  private readonly hashById = new Map<string, string>();
  private seen: number;

  constructor(
    /** The main thread's revocation counter (Int32Array over a SharedArrayBuffer, cell 0). */
    private readonly epoch: Int32Array,
    /** Takes every pending message off this thread's port and handles it (revocations among them). */
    private readonly drain: () => void,
    /** How long a key is served before the main thread is asked again (VEXIL_KEY_CACHE_TTL_MS). */
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
  ) {
    this.seen = Atomics.load(epoch, 0);
  }

  /** The key this thread may serve for `hash`, or undefined: ask the main thread. */
  peek(hash: string): ManagementKey | undefined {
    const e = Atomics.load(this.epoch, 0);
    if (e !== this.seen) {
      this.seen = e;
      this.drain();
    }
    const entry = this.byHash.get(hash);
    if (entry === undefined) return undefined;
    if (entry.expiresMs <= this.now()) {
      this.drop(hash, entry.key.id);
      return undefined;
    }
    return entry.key;
  }

  /** Whether this thread holds the key (authenticate.ts: only held keys skip the budget). */
  known(hash: string): boolean {
    return this.peek(hash) !== undefined;
  }

  /** Not here: the main thread looks keys up (and spends the budget). */
  lookup(): Promise<never> {
    return Promise.reject(NOT_HELD);
  }

  peekById(): undefined {
    return undefined;
  }

  readById(): Promise<never> {
    return Promise.reject(NOT_HELD);
  }

  /**
   * The main thread authenticated `key` for this thread's request: served here until its lifetime
   * in the main thread's cache ends (`untilMs`), never longer than a lifetime from now.
   */
  learn(hash: string, key: ManagementKey, untilMs: number): void {
    if (this.ttlMs === 0) return;
    const prev = this.hashById.get(key.id);
    if (prev !== undefined && prev !== hash) this.byHash.delete(prev);
    this.byHash.set(hash, { key, expiresMs: Math.min(this.now() + this.ttlMs, untilMs) });
    this.hashById.set(key.id, hash);
  }

  forgetKey(keyId: string): void {
    const hash = this.hashById.get(keyId);
    if (hash !== undefined) this.drop(hash, keyId);
  }

  forgetOrg(orgId: string): void {
    for (const [hash, e] of this.byHash) if (e.key.orgId === orgId) this.drop(hash, e.key.id);
  }

  clear(): void {
    this.byHash.clear();
    this.hashById.clear();
  }

  get size(): number {
    return this.byHash.size;
  }

  private drop(hash: string, keyId: string): void {
    this.byHash.delete(hash);
    if (this.hashById.get(keyId) === hash) this.hashById.delete(keyId);
  }
}
