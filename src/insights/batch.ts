/**
 * Counts waiting to be written (the management actor's, insights/flush.ts): rows from every thread
 * of the node, the provider's reports and the actor's own evaluations, merged by flag, stage,
 * application, variant and hour. Pure. Bounded: at most `maxEntries` distinct counters (each about
 * 300 bytes with its key); a row that would need more is dropped and its count added to `dropped`.
 */
import { ROW_STRIDE, type InsightsRows } from './counter.js';

export interface BatchEntry {
  orgId: string;
  flag: string;
  stage: string;
  application: string;
  variant: string;
  /** The hour bucket's start, epoch seconds. */
  hour: number;
  count: number;
  firstSec: number;
  lastSec: number;
}

export const HOUR_SEC = 3600;
export const DAY_SEC = 86_400;

export class InsightsBatch {
  private entries = new Map<string, BatchEntry>();
  /** Evaluations dropped because the batch was full, since this batch was made. */
  dropped = 0;

  constructor(private readonly maxEntries: number) {}

  get size(): number {
    return this.entries.size;
  }

  /** Adds flat rows (counter.ts `InsightsRows`). */
  addRows(rows: InsightsRows): void {
    for (let i = 0; i + ROW_STRIDE <= rows.length; i += ROW_STRIDE) {
      this.add(rows[i] as string, rows[i + 1] as string, rows[i + 2] as string, rows[i + 3] as string, rows[i + 4] as string, rows[i + 5] as number, rows[i + 6] as number, rows[i + 7] as number);
    }
  }

  add(orgId: string, flag: string, stage: string, application: string, variant: string, count: number, firstSec: number, lastSec: number): void {
    if (!(count > 0)) return;
    const hour = Math.floor(lastSec / HOUR_SEC) * HOUR_SEC;
    const key = `${orgId}\u0000${flag}\u0000${stage}\u0000${application}\u0000${variant}\u0000${hour}`;
    const e = this.entries.get(key);
    if (e !== undefined) {
      e.count += count;
      if (firstSec < e.firstSec) e.firstSec = firstSec;
      if (lastSec > e.lastSec) e.lastSec = lastSec;
      return;
    }
    if (this.entries.size >= this.maxEntries) {
      this.dropped += count;
      return;
    }
    this.entries.set(key, { orgId, flag, stage, application, variant, hour, count, firstSec, lastSec });
  }

  /** Takes every entry (the batch is empty afterwards); `dropped` is left to the caller. */
  take(): BatchEntry[] {
    const out = [...this.entries.values()];
    this.entries = new Map();
    return out;
  }

  /** Puts back entries a failed write did not store (within the bound). */
  putBack(entries: readonly BatchEntry[]): void {
    for (const e of entries) this.add(e.orgId, e.flag, e.stage, e.application, e.variant, e.count, e.firstSec, e.lastSec);
  }
}
