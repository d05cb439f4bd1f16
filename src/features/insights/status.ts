/**
 * A flag's lifecycle status (CONTRACT 18, docs/insights.md "Lifecycle"): pure, no I/O, no clock
 * (`now` is an argument), so every edge is unit tested with durations of seconds.
 *
 * The status is the first of these that applies:
 * - `new`: never evaluated (no usage at all);
 * - `unused`: no evaluation in any environment for `unusedAfter`;
 * - `stale`: older than its purpose's lifetime (age from `createdAt`), or serving a single
 *   variant to every evaluation in every environment for `unusedAfter`;
 * - `active`.
 *
 * `reasons` lists every condition that holds, in this order:
 * - `age`: `now - createdAt >= lifetime` (a null lifetime never holds);
 * - `unused`: evaluated once, and `now - lastAt >= unusedAfter`;
 * - `singleVariant`: the variants evaluated within the window `(now - unusedAfter, now]`, over
 *   every stage, are exactly one, and the evaluation history covers the whole window (the first
 *   evaluation is at or before `now - unusedAfter`).
 */
import type { FlagStatus, StatusReason } from '../../domain/types.js';

/** A flag's evaluation history, over every stage and application (times in ms). */
export interface Usage {
  /** The first evaluation recorded; null: never evaluated. */
  firstAt: number | null;
  /** The last evaluation recorded; null: never evaluated. */
  lastAt: number | null;
  /** The last evaluation of each variant key, over every stage. */
  variantsLastAt: ReadonlyMap<string, number>;
}

export interface StatusInput {
  /** The flag's creation (ms). */
  createdAt: number;
  /** Its purpose's lifetime in ms; null: it never grows old. */
  lifetimeMs: number | null;
  unusedAfterMs: number;
  usage: Usage;
  now: number;
}

export interface FlagStatusResult {
  status: FlagStatus;
  reasons: StatusReason[];
  /**
   * When the answer can next change with no new evaluation (ms; Infinity: never): the tracker
   * recomputes the flag then, or when its usage changes, and not before.
   */
  validUntil: number;
}

export const NO_USAGE: Usage = Object.freeze({ firstAt: null, lastAt: null, variantsLastAt: new Map<string, number>() });

export function flagStatus(input: StatusInput): FlagStatusResult {
  const { createdAt, lifetimeMs, unusedAfterMs, usage, now } = input;
  const reasons: StatusReason[] = [];
  let validUntil = Number.POSITIVE_INFINITY;
  const until = (t: number) => {
    if (t > now && t < validUntil) validUntil = t;
  };

  if (lifetimeMs !== null) {
    const oldAt = createdAt + lifetimeMs;
    if (now >= oldAt) reasons.push('age');
    else until(oldAt);
  }
  const windowStart = now - unusedAfterMs;
  if (usage.lastAt !== null) {
    const unusedAt = usage.lastAt + unusedAfterMs;
    if (now >= unusedAt) reasons.push('unused');
    else until(unusedAt);
  }
  if (usage.firstAt !== null) {
    let inWindow = 0;
    for (const last of usage.variantsLastAt.values()) {
      if (last > windowStart) {
        inWindow++;
        // This variant leaves the window then: the count can fall to one.
        until(last + unusedAfterMs);
      }
    }
    const covered = usage.firstAt <= windowStart;
    if (!covered) until(usage.firstAt + unusedAfterMs);
    if (inWindow === 1 && covered) reasons.push('singleVariant');
  }

  let status: FlagStatus;
  if (usage.lastAt === null) status = 'new';
  else if (reasons.includes('unused')) status = 'unused';
  else if (reasons.includes('age') || reasons.includes('singleVariant')) status = 'stale';
  else status = 'active';
  return { status, reasons, validUntil };
}

/** Folds usage rows (one per stage and variant) into a flag's `Usage`. */
export function usageOf(rows: Iterable<{ variant: string; firstAt: number; lastAt: number }>): Usage {
  let firstAt: number | null = null;
  let lastAt: number | null = null;
  const variantsLastAt = new Map<string, number>();
  for (const r of rows) {
    if (firstAt === null || r.firstAt < firstAt) firstAt = r.firstAt;
    if (lastAt === null || r.lastAt > lastAt) lastAt = r.lastAt;
    const v = variantsLastAt.get(r.variant);
    if (v === undefined || r.lastAt > v) variantsLastAt.set(r.variant, r.lastAt);
  }
  return { firstAt, lastAt, variantsLastAt };
}
