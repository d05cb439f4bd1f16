/**
 * Per-key token buckets (docs/api.md#order-of-checks): `rate` tokens per second, burst = one
 * second's worth, but never less than one token: below 1/s (a low setting, or a cluster share of
 * it) a bucket capped at less than one token could never admit a request. Each Management Key has
 * an evaluation bucket and a management bucket. Pure apart from the clock, which is injected so
 * tests can drive it.
 */

export interface Bucket {
  tokens: number;
  updatedMs: number;
}

export type BucketKind = 'eval' | 'mgmt';

/** Adds what `rate` tokens per second earned since the bucket's last update, up to `capacity`. */
export function refill(b: Bucket, nowMs: number, rate: number, capacity: number): void {
  const elapsed = nowMs - b.updatedMs;
  if (elapsed > 0) {
    b.tokens = Math.min(capacity, b.tokens + (elapsed * rate) / 1000);
    b.updatedMs = nowMs;
  }
}

/** Whole seconds until a bucket holding `tokens` has one token again (at least 1). */
export const secondsUntilToken = (tokens: number, rate: number): number => Math.max(1, Math.ceil((1 - tokens) / rate));

export class RateLimiter {
  private readonly buckets: Record<BucketKind, Map<string, Bucket>> = { eval: new Map(), mgmt: new Map() };
  /** This node's rates: the configured rates divided by the number of live nodes. */
  private rates: Record<BucketKind, number>;

  constructor(
    private readonly configured: Record<BucketKind, number>,
    private readonly now: () => number = () => performance.now(),
    private readonly maxEntries = 100_000,
  ) {
    this.rates = { ...configured };
  }

  /**
   * Cluster share (docs/cluster.md): with `nodes` live nodes each enforces 1/nodes of every key's
   * budget, so together they never admit more than the configured rate (plus one second's burst).
   */
  setNodes(nodes: number): void {
    const n = Math.max(1, Math.floor(nodes));
    this.rates = { eval: this.configured.eval / n, mgmt: this.configured.mgmt / n };
    for (const kind of ['eval', 'mgmt'] as const) {
      for (const b of this.buckets[kind].values()) b.tokens = Math.min(b.tokens, this.capacity(kind));
    }
  }

  /** Burst size: one second's worth, at least one token. */
  private capacity(kind: BucketKind): number {
    return Math.max(1, this.rates[kind]);
  }

  private bucket(kind: BucketKind, keyId: string, nowMs: number): Bucket {
    const map = this.buckets[kind];
    let b = map.get(keyId);
    if (b === undefined) {
      if (map.size >= this.maxEntries) this.evictFull(kind, nowMs);
      b = { tokens: this.capacity(kind), updatedMs: nowMs };
      map.set(keyId, b);
      return b;
    }
    refill(b, nowMs, this.rates[kind], this.capacity(kind));
    return b;
  }

  /**
   * Takes one token. Returns 0 when allowed, otherwise the seconds to wait (for `Retry-After`).
   */
  take(kind: BucketKind, keyId: string): number {
    const nowMs = this.now();
    const b = this.bucket(kind, keyId, nowMs);
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return 0;
    }
    return secondsUntilToken(b.tokens, this.rates[kind]);
  }

  /**
   * Charges `n` tokens without refusing; the bucket may go negative by at most `maxDebt` (GraphQL:
   * every `evaluate` after the first, docs/graphql.md "Rate limiting"). Later requests wait until
   * it refills.
   */
  charge(kind: BucketKind, keyId: string, n: number, maxDebt: number): void {
    if (n <= 0) return;
    const b = this.bucket(kind, keyId, this.now());
    b.tokens = Math.max(-maxDebt, b.tokens - n);
  }

  /** Buckets that are full again carry no information; dropping them bounds memory. */
  private evictFull(kind: BucketKind, nowMs: number): void {
    const rate = this.rates[kind];
    for (const [id, b] of this.buckets[kind]) {
      if (b.tokens + ((nowMs - b.updatedMs) * rate) / 1000 >= this.capacity(kind)) this.buckets[kind].delete(id);
    }
  }
}
