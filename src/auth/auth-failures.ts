/**
 * The failed-authentication budget (`VEXIL_RATE_LIMIT_AUTH_FAILURES`; docs/limits.md, "Failed
 * authentications"): each client address may fail authentication `rate` times per second (burst:
 * one second's worth, at least one). Every 401 spends one unit; an address with less than one unit
 * left is refused with 429 before its key is looked up, so strangers guessing keys cannot reach the
 * database. Keys this node has already authenticated are still served (authenticate.ts asks the key
 * cache first).
 *
 * Per node, like the key cache: failures are not shared over the cluster bus. Memory is bounded:
 * past `maxEntries` addresses, buckets that have refilled are dropped, then the oldest.
 * Pure apart from the injected clock.
 */
import { refill, secondsUntilToken, type Bucket } from '../ratelimit/token-bucket.js';

export class AuthFailureBudget {
  private readonly buckets = new Map<string, Bucket>();
  private readonly capacity: number;

  constructor(
    private readonly rate: number,
    private readonly now: () => number = () => performance.now(),
    private readonly maxEntries = 100_000,
  ) {
    this.capacity = Math.max(1, rate);
  }

  /** 0 when `address` may still try a key, else the whole seconds until it may (Retry-After). */
  blocked(address: string): number {
    const b = this.buckets.get(address);
    if (b === undefined) return 0;
    refill(b, this.now(), this.rate, this.capacity);
    return b.tokens >= 1 ? 0 : secondsUntilToken(b.tokens, this.rate);
  }

  /** One failed authentication from `address`. */
  spend(address: string): void {
    const nowMs = this.now();
    let b = this.buckets.get(address);
    if (b === undefined) {
      if (this.buckets.size >= this.maxEntries) this.evict(nowMs);
      b = { tokens: this.capacity, updatedMs: nowMs };
      this.buckets.set(address, b);
    } else {
      refill(b, nowMs, this.rate, this.capacity);
    }
    // Lookups already under way when the budget ran out may still fail: at most one burst of debt.
    b.tokens = Math.max(-this.capacity, b.tokens - 1);
  }

  get size(): number {
    return this.buckets.size;
  }

  private evict(nowMs: number): void {
    for (const [a, b] of this.buckets) {
      refill(b, nowMs, this.rate, this.capacity);
      if (b.tokens >= this.capacity) this.buckets.delete(a);
    }
    // Every address is still in debt: forget the oldest rather than grow without bound.
    if (this.buckets.size >= this.maxEntries) this.buckets.delete(this.buckets.keys().next().value as string);
  }
}
