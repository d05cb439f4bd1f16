/**
 * When a webhook message is tried again, and when it is given up (docs/webhooks.md, "Delivery").
 * Pure: the clock and the random source are the caller's, so tests run the 3-day schedule with a
 * faked clock.
 *
 * - 2xx: delivered.
 * - 410 Gone: the endpoint is disabled (and the message failed).
 * - Anything else (another status, a timeout, a network error, an address refused): tried again
 *   after an exponential backoff with jitter: attempt n waits base * 2^(n-1), capped at `maxMs`,
 *   times a factor in [0.5, 1] (the first retry within `base`, about 2 s), or what `Retry-After`
 *   asks for (that long, read as at most RETRY_AFTER_MAX_MS: an hour).
 * - Given up once a failure happens `retryForMs` (3 days) or more after the message was recorded:
 *   retries go on for at least that long.
 */

export interface RetryPolicy {
  /** The first retry's gap (before jitter): 2000 ms. */
  baseMs: number;
  /** The largest gap: 1 hour. */
  maxMs: number;
  /** How long after the message was recorded failures are still retried: 3 days. */
  retryForMs: number;
}

/** The longest `Retry-After` honoured as given; a longer one is read as this. */
export const RETRY_AFTER_MAX_MS = 3_600_000;

export const DEFAULT_RETRY: Readonly<RetryPolicy> = Object.freeze({ baseMs: 2000, maxMs: 3_600_000, retryForMs: 3 * 86_400_000 });

/** What an attempt got: an HTTP status, or none (a timeout, a network error, a refused address). */
export interface AttemptOutcome {
  status: number | null;
  /** `Retry-After` in milliseconds, when the answer had a valid one. */
  retryAfterMs: number | null;
}

export type Decision =
  | { kind: 'delivered' }
  | { kind: 'retry'; at: number }
  | { kind: 'give-up' }
  | { kind: 'disable' };

/** The gap before attempt `attempt + 1`, after `attempt` (1-based) failed; `random` in [0, 1). */
export function backoffMs(attempt: number, policy: RetryPolicy, random: number): number {
  const exp = Math.min(attempt - 1, 40);
  const gap = Math.min(policy.baseMs * 2 ** exp, policy.maxMs);
  return Math.max(1, Math.round(gap * (0.5 + random / 2)));
}

/** `Retry-After` (seconds, or an HTTP date) in milliseconds from `now`, or null when absent or invalid. */
export function parseRetryAfter(value: string | undefined | null, now: number): number | null {
  if (value === undefined || value === null) return null;
  const v = value.trim();
  if (/^\d{1,10}$/.test(v)) return Number(v) * 1000;
  const at = Date.parse(v);
  if (Number.isNaN(at) || !/[a-z]/i.test(v)) return null;
  return Math.max(0, at - now);
}

/**
 * The decision after attempt number `attempt` (1-based) of a message recorded at `createdAt`
 * ended with `outcome` at `now`.
 */
export function decide(outcome: AttemptOutcome, attempt: number, createdAt: number, now: number, policy: RetryPolicy, random: number): Decision {
  const s = outcome.status;
  if (s !== null && s >= 200 && s < 300) return { kind: 'delivered' };
  if (s === 410) return { kind: 'disable' };
  if (now - createdAt >= policy.retryForMs) return { kind: 'give-up' };
  const backoff = backoffMs(attempt, policy, random);
  const gap = outcome.retryAfterMs === null ? backoff : Math.min(Math.max(outcome.retryAfterMs, 0), RETRY_AFTER_MAX_MS);
  return { kind: 'retry', at: now + gap };
}
