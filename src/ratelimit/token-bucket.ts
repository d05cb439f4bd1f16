/**
 * Per-key token buckets (docs/api.md#order-of-checks): `rate` tokens per second, burst = one
 * second's worth, but never less than one token: below 1/s (a low setting, or a cluster share of
 * it) a bucket capped at less than one token could never admit a request. Each Management Key has
 * an evaluation bucket and a management bucket.
 *
 * This module holds the arithmetic (shared with the failed-authentication budget,
 * auth/auth-failures.ts) and the `Limiter` interface the front admits through; the buckets
 * themselves live in shared memory (shared-limiter.ts), so every front thread sees the same ones.
 */

export interface Bucket {
  tokens: number;
  updatedMs: number;
}

export type BucketKind = 'eval' | 'mgmt';

/** What admission needs of the per-key limits (runtime.ts FrontRuntime.limiter). */
export interface Limiter {
  /** Takes one token. Returns 0 when allowed, otherwise the seconds to wait (for `Retry-After`). */
  take(kind: BucketKind, keyId: string): number;
  /** Charges `n` tokens without refusing; the bucket may go negative by at most `maxDebt`. */
  charge(kind: BucketKind, keyId: string, n: number, maxDebt: number): void;
  /** Cluster share: with `nodes` live nodes each enforces 1/nodes of every key's budget. */
  setNodes(nodes: number): void;
}

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

/** Burst size at `rate` tokens per second: one second's worth, at least one token. */
export const burst = (rate: number): number => Math.max(1, rate);
