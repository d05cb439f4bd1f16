/**
 * The management actor's insights writer (docs/insights.md): merges the counts the front posts
 * (`insights` messages: every thread, the pool, the provider's reports) and the actor's own
 * evaluations into one batch, and writes it every VEXIL_INSIGHTS_FLUSH_MS with ONE statement:
 * additive upserts of the hour and day buckets of `flag_evaluation_counts` and of
 * `flag_variant_usage`'s first and last evaluation, so counts from every node add up exactly. A
 * write that fails puts its counts back (within VEXIL_INSIGHTS_MAX_PENDING) for the next interval.
 * `stop` writes what is left (a graceful stop flushes). Retention runs every hour: hour buckets
 * older than 14 days, day buckets older than 400 days are deleted.
 */
import type { Queryable } from '../storage/database.js';
import type { Logger } from '../util/log.js';
import { DAY_SEC, InsightsBatch, type BatchEntry } from './batch.js';
import type { InsightsCounter, InsightsRows } from './counter.js';

export const HOUR_RETENTION_DAYS = 14;
export const DAY_RETENTION_DAYS = 400;
const RETENTION_EVERY_MS = 3_600_000;

/**
 * The one statement of an interval. `$1` is a JSON array of rows, one per (flag, stage,
 * application, variant, hour): {o, f, s, a, v, h (hour start, epoch s), d (day start), n, fi, la}.
 * Rows are written in key order, so that two nodes writing the same counters lock them in the
 * same order (no deadlock between them).
 */
export const FLUSH_SQL = `
with input as (
  select * from json_to_recordset($1::json) as t(o text, f text, s text, a text, v text, h bigint, d bigint, n bigint, fi bigint, la bigint)
), hours as (
  insert into flag_evaluation_counts (org_id, flag_name, stage, application, variant, granularity, bucket_start, count)
  select o, f, s, a, v, 'hour', to_timestamp(h), n from input
  order by o, f, h, s, a, v
  on conflict (org_id, flag_name, granularity, bucket_start, stage, application, variant)
  do update set count = flag_evaluation_counts.count + excluded.count
  returning 1
), days as (
  insert into flag_evaluation_counts (org_id, flag_name, stage, application, variant, granularity, bucket_start, count)
  select o, f, s, a, v, 'day', to_timestamp(d), sum(n) from input
  group by o, f, s, a, v, d
  order by o, f, d, s, a, v
  on conflict (org_id, flag_name, granularity, bucket_start, stage, application, variant)
  do update set count = flag_evaluation_counts.count + excluded.count
  returning 1
), usage as (
  insert into flag_variant_usage (org_id, flag_name, stage, variant, first_at, last_at)
  select o, f, s, v, to_timestamp(min(fi)), to_timestamp(max(la)) from input
  group by o, f, s, v
  order by o, f, s, v
  on conflict (org_id, flag_name, stage, variant)
  do update set first_at = least(flag_variant_usage.first_at, excluded.first_at), last_at = greatest(flag_variant_usage.last_at, excluded.last_at)
  returning 1
)
select (select count(*) from hours)::int as hours, (select count(*) from days)::int as days, (select count(*) from usage)::int as usage`;

/** The statement's parameter for `entries` (pure). */
export function flushParameter(entries: readonly BatchEntry[]): string {
  return JSON.stringify(
    entries.map((e) => ({
      o: e.orgId,
      f: e.flag,
      s: e.stage,
      a: e.application,
      v: e.variant,
      h: e.hour,
      d: Math.floor(e.hour / DAY_SEC) * DAY_SEC,
      n: e.count,
      fi: e.firstSec,
      la: e.lastSec,
    })),
  );
}

/** Deletes buckets past their retention (hour: 14 days, day: 400 days) as of `nowMs`; returns the rows deleted. */
export async function applyRetention(db: Queryable, nowMs: number): Promise<number> {
  const rows = await db.query<{ n: number }>(
    `with gone as (
       delete from flag_evaluation_counts
       where (granularity = 'hour' and bucket_start < $1) or (granularity = 'day' and bucket_start < $2)
       returning 1)
     select count(*)::int as n from gone`,
    [new Date(nowMs - HOUR_RETENTION_DAYS * DAY_SEC * 1000).toISOString(), new Date(nowMs - DAY_RETENTION_DAYS * DAY_SEC * 1000).toISOString()],
  );
  return rows[0]?.n ?? 0;
}

export interface FlusherOptions {
  flushMs: number;
  maxPending: number;
  /** The actor's own evaluations (a management GraphQL document may evaluate). */
  own: InsightsCounter | null;
  /** After each write that stored counts (the flag statuses follow them at once: features/insights/tracker.ts). */
  onWritten?: () => void;
  now?: () => number;
}

export class InsightsFlusher {
  private readonly batch: InsightsBatch;
  private timer: NodeJS.Timeout | null = null;
  private retentionTimer: NodeJS.Timeout | null = null;
  /** The write under way (writes never overlap). */
  private writing: Promise<void> = Promise.resolve();
  private stopped = false;
  /** Statements run so far (tests: one per interval with counts). */
  statements = 0;
  private readonly now: () => number;

  constructor(
    private readonly db: Queryable,
    private readonly log: Logger,
    private readonly opts: FlusherOptions,
  ) {
    this.batch = new InsightsBatch(opts.maxPending);
    this.now = opts.now ?? Date.now;
  }

  start(): void {
    this.timer = setInterval(() => void this.flush(), this.opts.flushMs);
    this.timer.unref();
    const retention = () =>
      void applyRetention(this.db, this.now()).then(
        (n) => (n > 0 ? this.log.info('insights retention deleted old buckets', { rows: n }) : undefined),
        (err: unknown) => this.log.warn('insights retention failed', { err: err as Error }),
      );
    retention();
    this.retentionTimer = setInterval(retention, RETENTION_EVERY_MS);
    this.retentionTimer.unref();
  }

  /** Counts the front posted. */
  add(rows: InsightsRows): void {
    this.batch.addRows(rows);
  }

  /** Writes what the batch holds now, after any write under way; resolves when written (or put back). */
  flush(): Promise<void> {
    this.writing = this.writing.then(() => this.write());
    return this.writing;
  }

  private async write(): Promise<void> {
    if (this.opts.own !== null) this.batch.addRows(this.opts.own.drain([], Math.floor(this.now() / 1000)));
    if (this.batch.dropped > 0) {
      this.log.warn('insights counts dropped: more distinct counters than VEXIL_INSIGHTS_MAX_PENDING between two writes', { evaluations: this.batch.dropped });
      this.batch.dropped = 0;
    }
    if (this.batch.size === 0) return;
    const entries = this.batch.take();
    try {
      this.statements++;
      await this.db.query(FLUSH_SQL, [flushParameter(entries)]);
      this.opts.onWritten?.();
    } catch (err) {
      this.batch.putBack(entries);
      this.log.warn('insights write failed; kept for the next interval', { err: err as Error, counters: entries.length });
    }
  }

  /** Stops the timers and writes what is left (a graceful stop). */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    if (this.timer !== null) clearInterval(this.timer);
    if (this.retentionTimer !== null) clearInterval(this.retentionTimer);
    await this.flush();
  }
}
