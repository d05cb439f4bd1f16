/**
 * The failed-authentication budget (`VEXIL_RATE_LIMIT_AUTH_FAILURES`; docs/limits.md, "Failed
 * authentications"): each client address may fail authentication `rate` times per second (burst:
 * one second's worth, at least one). Every 401 spends one unit; an address with less than one unit
 * left is refused with 429 before its key is looked up, so strangers guessing keys cannot reach the
 * database. Keys this node has already authenticated are still served (authenticate.ts asks the key
 * cache first).
 *
 * A lookup is asynchronous, so its unit is taken before it starts (`reserve`) and given back when
 * the key turns out valid (`refund`): checking before and spending after would let any number of
 * parallel guesses through while the first ones are still being looked up (issue 28). A failure
 * known without a lookup (a missing or malformed key) is a `reserve` that is never refunded; a key
 * this node already holds is looked up without a reservation and `spend`s when it fails, which may
 * run into debt of at most one burst.
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

  /**
   * Takes one unit for an attempt whose outcome is not known yet: 0 when it was taken, else the
   * whole seconds until `address` has one (Retry-After), and nothing is taken. Never runs into debt.
   */
  reserve(address: string): number {
    const b = this.bucket(address);
    if (b.tokens < 1) return secondsUntilToken(b.tokens, this.rate);
    b.tokens -= 1;
    return 0;
  }

  /** Gives back a unit `reserve` took, when the attempt authenticated after all. */
  refund(address: string): void {
    const b = this.buckets.get(address);
    if (b === undefined) return; // evicted meanwhile: a new bucket starts full anyway
    refill(b, this.now(), this.rate, this.capacity);
    b.tokens = Math.min(this.capacity, b.tokens + 1);
  }

  /** One failed authentication from `address` that was not reserved (a key this node holds). */
  spend(address: string): void {
    const b = this.bucket(address);
    // Lookups of held keys that were under way when the budget ran out may still fail: at most one burst of debt.
    b.tokens = Math.max(-this.capacity, b.tokens - 1);
  }

  /** The address's bucket, refilled to now; created full (evicting past `maxEntries`) when new. */
  private bucket(address: string): Bucket {
    const nowMs = this.now();
    let b = this.buckets.get(address);
    if (b === undefined) {
      if (this.buckets.size >= this.maxEntries) this.evict(nowMs);
      b = { tokens: this.capacity, updatedMs: nowMs };
      this.buckets.set(address, b);
    } else {
      refill(b, nowMs, this.rate, this.capacity);
    }
    return b;
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
