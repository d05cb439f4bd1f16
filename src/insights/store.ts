/**
 * Reads of the evaluation counts (sql/010_insights_counts.sql) for the insights API and statuses:
 * a flag's series of buckets, and when each stage last evaluated it. Run in the management actor
 * against its database (any `Queryable`).
 */
import type { Queryable } from '../storage/database.js';

/** One bucket of one stage: its start (ISO 8601, UTC), its count, and the count per variant key ('' when none). */
export interface CountBucket {
  stage: string;
  start: string;
  count: number;
  variants: Record<string, number>;
}

/**
 * The flag's buckets of `granularity` starting in [from, to), by start then stage (stages in the
 * spelling they were counted in), every application summed.
 */
export async function flagSeries(db: Queryable, orgId: string, flag: string, granularity: 'hour' | 'day', from: Date, to: Date): Promise<CountBucket[]> {
  const rows = await db.query<{ stage: string; start: Date | string; variant: string; count: string | number }>(
    `select stage, bucket_start as start, variant, sum(count) as count
     from flag_evaluation_counts
     where org_id = $1 and flag_name = $2 and granularity = $3 and bucket_start >= $4 and bucket_start < $5
     group by stage, bucket_start, variant
     order by bucket_start, stage, variant`,
    [orgId, flag, granularity, from.toISOString(), to.toISOString()],
  );
  const out: CountBucket[] = [];
  let last: CountBucket | null = null;
  for (const r of rows) {
    const start = new Date(r.start).toISOString();
    const n = Number(r.count);
    if (last === null || last.stage !== r.stage || last.start !== start) {
      last = { stage: r.stage, start, count: 0, variants: {} };
      out.push(last);
    }
    last.count += n;
    last.variants[r.variant] = (last.variants[r.variant] ?? 0) + n;
  }
  return out;
}

/** When each stage last evaluated the flag (ISO 8601), and first did: from `flag_variant_usage`, every variant. */
export async function flagUsage(db: Queryable, orgId: string, flag: string): Promise<Map<string, { firstAt: string; lastAt: string; variants: string[] }>> {
  const rows = await db.query<{ stage: string; variant: string; first_at: Date | string; last_at: Date | string }>(
    'select stage, variant, first_at, last_at from flag_variant_usage where org_id = $1 and flag_name = $2 order by stage, variant',
    [orgId, flag],
  );
  const out = new Map<string, { firstAt: string; lastAt: string; variants: string[] }>();
  for (const r of rows) {
    const first = new Date(r.first_at).toISOString();
    const lastAt = new Date(r.last_at).toISOString();
    const s = out.get(r.stage);
    if (s === undefined) out.set(r.stage, { firstAt: first, lastAt, variants: [r.variant] });
    else {
      if (first < s.firstAt) s.firstAt = first;
      if (lastAt > s.lastAt) s.lastAt = lastAt;
      s.variants.push(r.variant);
    }
  }
  return out;
}
