/**
 * Authenticated keys by hash, for `ttlMs` (60 s, SPEC 5.5). Unknown hashes are cached too, so a
 * flood of bad keys does not reach the database; a key value is 256 random bits, so a negative
 * entry can never hide a key created later. Invalidation by key id is immediate on this node (and
 * on every node through the cluster bus).
 *
 * While the database is unreachable, an expired entry is used rather than refusing every request
 * (evaluations keep serving from snapshots). Nobody can disable or rotate a key then anyway, and an
 * invalidation from the bus still removes the entry at once.
 */
import { VexilError } from '../domain/errors.js';
import type { ManagementKey } from '../domain/types.js';
import type { Queryable } from '../storage/database.js';
import { findKeyByHash } from '../features/keys/store.js';

interface Entry {
  key: ManagementKey | null;
  expiresMs: number;
}

export class KeyCache {
  private readonly byHash = new Map<string, Entry>();
  private readonly hashById = new Map<string, string>();
  private readonly inflight = new Map<string, Promise<ManagementKey | null>>();
  /** Bumped by every invalidation: a lookup that started before one must not cache its answer. */
  private epoch = 0;

  constructor(
    private readonly db: Queryable,
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
    private readonly maxEntries = 100_000,
  ) {}

  /** The cached key, `null` for a cached unknown hash, `undefined` when the database must be asked. */
  peek(hash: string): ManagementKey | null | undefined {
    const e = this.byHash.get(hash);
    if (e === undefined || e.expiresMs <= this.now()) return undefined;
    return e.key;
  }

  async lookup(hash: string): Promise<ManagementKey | null> {
    const cached = this.peek(hash);
    if (cached !== undefined) return cached;
    let p = this.inflight.get(hash);
    if (p === undefined) {
      // The query may have read the row before a disable, rotation or deletion committed; when an
      // invalidation arrives meanwhile, this answer serves its own request but is not cached.
      const epoch = this.epoch;
      const q: Promise<ManagementKey | null> = findKeyByHash(this.db, hash)
        .then(
          (key) => {
            if (this.epoch === epoch) this.store(hash, key);
            return key;
          },
          (err: unknown) => {
            const stale = this.byHash.get(hash);
            if (stale !== undefined && err instanceof VexilError && err.code === 'UNAVAILABLE') return stale.key;
            throw err;
          },
        )
        .finally(() => {
          if (this.inflight.get(hash) === q) this.inflight.delete(hash);
        });
      p = q;
      this.inflight.set(hash, p);
    }
    return p;
  }

  /** Forgets a key at once (disable, rotate, delete). */
  invalidateKey(keyId: string): void {
    this.epoch++;
    this.inflight.clear(); // later lookups must not join a query that may predate the change
    const hash = this.hashById.get(keyId);
    if (hash !== undefined) this.drop(hash, this.byHash.get(hash));
  }

  clear(): void {
    this.epoch++;
    this.inflight.clear();
    this.byHash.clear();
    this.hashById.clear();
  }

  private store(hash: string, key: ManagementKey | null): void {
    if (this.ttlMs === 0) return;
    this.byHash.delete(hash); // re-insert at the end: Map order is age order
    if (this.byHash.size >= this.maxEntries) {
      // Oldest first (Map keeps insertion order).
      const oldest = this.byHash.keys().next().value as string;
      this.drop(oldest, this.byHash.get(oldest));
    }
    this.byHash.set(hash, { key, expiresMs: this.now() + this.ttlMs });
    if (key !== null) this.hashById.set(key.id, hash);
  }

  private drop(hash: string, e: Entry | undefined): void {
    this.byHash.delete(hash);
    if (e?.key) this.hashById.delete(e.key.id);
  }
}
