/**
 * Authenticated keys by hash, for `ttlMs` (60 s by default, docs/api.md#keys). Unknown hashes are
 * cached too, so a repeated bad key does not reach the database; a key value is 256 random bits, so
 * a negative entry can never hide a key created later. Invalidation by key id is immediate on this
 * node (and on every node through the cluster bus); a rename of an application or environment drops
 * the organization's keys (their scopes changed, see cluster/sync.ts).
 *
 * Known keys and unknown hashes are bounded separately (`maxEntries` each, oldest first), so a
 * flood of random keys only ever evicts other unknown hashes, never a real key. (Plain Maps with
 * insertion order: bench/key-cache.ts measures them against lru-cache on the hot path.) Expiry is
 * checked with `Date.now()` on each peek: the evaluation that follows reads it anyway, and the
 * coarse clock used before (a cached value cleared by a timer armed each millisecond it was read)
 * cost more under load than the read it saved (docs/benchmarks.md, "REST against the bare endpoint").
 *
 * An entry in use is re-read before its lifetime ends, so that its requests never wait for the
 * database (or for a management actor busy with an admin's work) when the lifetime runs out: the
 * first request in the last `refreshAheadMs` of the lifetime (REFRESH_AHEAD_MS, 10 s, or a quarter
 * of a shorter lifetime) starts the re-read (one per hash), served the cached entry meanwhile, and
 * the answer starts a new lifetime. Past its lifetime an entry is never served without a re-read
 * (CONTRACT 4: a key changed with the bus down stops "at the latest after the 60-second cache"),
 * so a key disabled in the database stops when the re-read of its window answers, or at the end of
 * its lifetime, whichever is first. `fresh` answers only before the window (what a front thread is
 * taught, until the window opens: key-mirror.ts), so a thread's next request after it reaches the
 * main thread, whose cache the re-read then renews.
 *
 * While the database is unreachable, an expired entry is used rather than refusing every request
 * (evaluations keep serving from snapshots), for at most `staleMaxMs` past its lifetime
 * (VEXIL_KEY_STALE_MAX_MS, docs/limits.md); after that the lookup fails with the database's 503.
 * An invalidation from the bus still removes the entry at once.
 *
 * Keys are also found by id (`peekById`, `readById`) for credentials that name a key instead of
 * carrying its value: an OFREP stream token is signed with the key's stored hash (docs/ofrep.md).
 * A read by id is not cached (the cache is keyed by the hash of a presented value); it asks the
 * source of truth each time, which is what the open streams' periodic re-check needs.
 */
import { VexilError } from '../domain/errors.js';
import type { ManagementKey } from '../domain/types.js';

/** Reads a key by the hash of its value from the source of truth (node.ts: the keys store). */
export type KeyLoader = (hash: string) => Promise<ManagementKey | null>;

/** A key with the hash of its value as stored (what a stream token is signed with). */
export interface KeyWithHash {
  key: ManagementKey;
  hash: string;
}

/** Reads a key by id, with its stored hash, from the source of truth (node.ts: the keys store). */
export type KeyByIdLoader = (keyId: string) => Promise<KeyWithHash | null>;

export interface KeyCacheOptions {
  /** How long an entry serves before the database is asked again (VEXIL_KEY_CACHE_TTL_MS). */
  ttlMs: number;
  /** How long past that an entry serves while the database cannot re-check it (VEXIL_KEY_STALE_MAX_MS; default 300 s). */
  staleMaxMs?: number;
  now?: () => number;
  /** Known keys held (default 100,000), and unknown hashes (default the same). */
  maxEntries?: number;
  maxUnknown?: number;
  /** Reads keys by id (`readById`); without it `readById` fails with INTERNAL. */
  loadById?: KeyByIdLoader;
}

interface Entry {
  key: ManagementKey;
  expiresMs: number;
}

/** How long before the end of its lifetime an entry in use is re-read (at most a quarter of the lifetime). */
export const REFRESH_AHEAD_MS = 10_000;

export class KeyCache {
  /** Known keys (valid or disabled) by hash. */
  private readonly byHash = new Map<string, Entry>();
  /** Unknown hashes: expiry time by hash. */
  private readonly unknown = new Map<string, number>();
  private readonly hashById = new Map<string, string>();
  private readonly inflight = new Map<string, Promise<ManagementKey | null>>();
  /** Bumped by every invalidation: a lookup that started before one must not cache its answer. */
  private epoch = 0;
  private readonly invalidationListeners: ((keyId: string | null) => void)[] = [];
  private readonly orgListeners: ((orgId: string) => void)[] = [];

  private readonly ttlMs: number;
  private readonly staleMaxMs: number;
  private readonly refreshAheadMs: number;
  private readonly now: () => number;
  private readonly maxEntries: number;
  private readonly maxUnknown: number;
  private readonly loadById: KeyByIdLoader;

  constructor(
    private readonly load: KeyLoader,
    opts: KeyCacheOptions,
  ) {
    this.ttlMs = opts.ttlMs;
    this.staleMaxMs = opts.staleMaxMs ?? 300_000;
    this.refreshAheadMs = Math.min(REFRESH_AHEAD_MS, Math.floor(this.ttlMs / 4));
    this.now = opts.now ?? Date.now;
    this.maxEntries = opts.maxEntries ?? 100_000;
    this.maxUnknown = opts.maxUnknown ?? this.maxEntries;
    this.loadById =
      opts.loadById ??
      (() => Promise.reject(new VexilError('INTERNAL', 'This key cache was built without a loader by key id')));
  }

  /**
   * The cached key, `null` for a cached unknown hash, `undefined` when the database must be asked.
   * A key in the last `refreshAheadMs` of its lifetime starts its re-read here (see the file's comment).
   */
  peek(hash: string): ManagementKey | null | undefined {
    const e = this.byHash.get(hash);
    if (e !== undefined) {
      const now = this.now();
      if (now < e.expiresMs - this.refreshAheadMs) return e.key;
      if (now >= e.expiresMs) return undefined;
      if (!this.inflight.has(hash)) this.fetch(hash).catch(() => {}); // its own failure is the next lookup's
      return e.key;
    }
    const u = this.unknown.get(hash);
    return u === undefined || u <= this.now() ? undefined : null;
  }

  /**
   * The cached key before its re-read window, with the window's start (`untilMs`, on `now`'s clock):
   * what a front thread may serve it until, so that no thread serves it past the lifetime here and
   * the thread's next request after that renews it here; no I/O.
   */
  fresh(hash: string): { key: ManagementKey; untilMs: number } | undefined {
    const e = this.byHash.get(hash);
    if (e === undefined) return undefined;
    const untilMs = e.expiresMs - this.refreshAheadMs;
    return this.now() < untilMs ? { key: e.key, untilMs } : undefined;
  }

  /**
   * Whether this node has authenticated this hash before (a key record is held, even expired): such
   * a key is looked up even for a client address past its failed-authentication budget.
   */
  known(hash: string): boolean {
    return this.byHash.has(hash);
  }

  /** Entries held: known keys and unknown hashes. */
  get sizes(): { known: number; unknown: number } {
    return { known: this.byHash.size, unknown: this.unknown.size };
  }

  async lookup(hash: string): Promise<ManagementKey | null> {
    const cached = this.peek(hash);
    if (cached !== undefined) return cached;
    return this.fetch(hash);
  }

  /** Reads the key from the source of truth (one query per hash at a time) and caches the answer. */
  private fetch(hash: string): Promise<ManagementKey | null> {
    let p = this.inflight.get(hash);
    if (p === undefined) {
      // The query may have read the row before a disable, rotation or deletion committed; when an
      // invalidation arrives meanwhile, this answer serves its own request but is not cached.
      const epoch = this.epoch;
      const q: Promise<ManagementKey | null> = this.load(hash)
        .then(
          (key) => {
            if (this.epoch === epoch) this.store(hash, key);
            return key;
          },
          (err: unknown) => {
            if (err instanceof VexilError && err.code === 'UNAVAILABLE') {
              // Past its lifetime and not re-checkable: served for staleMaxMs more, then 503.
              const limit = this.now() - this.staleMaxMs;
              const stale = this.byHash.get(hash);
              if (stale !== undefined && stale.expiresMs >= limit) return stale.key;
              const unknownUntil = this.unknown.get(hash);
              if (unknownUntil !== undefined && unknownUntil >= limit) return null;
            }
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

  /**
   * A key this node's management actor has just created or rotated, with the hash of its value
   * (handed over before the answer that shows the value): its first request needs no lookup.
   */
  remember(hash: string, key: ManagementKey): void {
    this.store(hash, key);
  }

  /** Called with a key id when that key is disabled, rotated or deleted; with null when every key may have changed. */
  onInvalidate(listener: (keyId: string | null) => void): void {
    this.invalidationListeners.push(listener);
  }

  /** Called with an organization's id when all its keys are forgotten (a rename changed their scopes). */
  onInvalidateOrg(listener: (orgId: string) => void): void {
    this.orgListeners.push(listener);
  }

  /** A cached, unexpired key by id with its hash (no I/O); undefined when not cached. */
  peekById(keyId: string): KeyWithHash | undefined {
    const hash = this.hashById.get(keyId);
    if (hash === undefined) return undefined;
    const key = this.peek(hash);
    return key ? { key, hash } : undefined;
  }

  /** A key by id with its stored hash, read from the source of truth (not cached); null when there is none. */
  readById(keyId: string): Promise<KeyWithHash | null> {
    return this.loadById(keyId);
  }

  /** Forgets a key at once (disable, rotate, delete). */
  invalidateKey(keyId: string): void {
    for (const l of this.invalidationListeners) l(keyId);
    this.epoch++;
    this.inflight.clear(); // later lookups must not join a query that may predate the change
    const hash = this.hashById.get(keyId);
    if (hash !== undefined) this.drop(hash, this.byHash.get(hash));
  }

  /** Forgets every key of an organization at once (an application or environment was renamed). */
  invalidateOrg(orgId: string): void {
    for (const l of this.orgListeners) l(orgId);
    this.epoch++;
    this.inflight.clear();
    for (const [hash, e] of this.byHash) if (e.key?.orgId === orgId) this.drop(hash, e);
  }

  clear(): void {
    for (const l of this.invalidationListeners) l(null);
    this.epoch++;
    this.inflight.clear();
    this.byHash.clear();
    this.unknown.clear();
    this.hashById.clear();
  }

  private store(hash: string, key: ManagementKey | null): void {
    if (this.ttlMs === 0) return;
    const expiresMs = this.now() + this.ttlMs;
    if (key === null) {
      // Gone from the database (deleted, or rotated away): a record held for it goes too.
      const held = this.byHash.get(hash);
      if (held !== undefined) this.drop(hash, held);
      this.unknown.delete(hash); // re-insert at the end: Map order is age order
      if (this.unknown.size >= this.maxUnknown) this.unknown.delete(this.unknown.keys().next().value as string);
      this.unknown.set(hash, expiresMs);
      return;
    }
    this.unknown.delete(hash);
    const prev = this.byHash.get(hash);
    if (prev !== undefined) this.drop(hash, prev);
    if (this.byHash.size >= this.maxEntries) {
      // Oldest first (Map keeps insertion order).
      const oldest = this.byHash.keys().next().value as string;
      this.drop(oldest, this.byHash.get(oldest));
    }
    this.byHash.set(hash, { key, expiresMs });
    this.hashById.set(key.id, hash);
  }

  private drop(hash: string, e: Entry | undefined): void {
    this.byHash.delete(hash);
    if (e !== undefined && this.hashById.get(e.key.id) === hash) this.hashById.delete(e.key.id);
  }
}
