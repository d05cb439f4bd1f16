/**
 * SQL of flag insights' lifecycle half (sql/011_insights_lifecycle.sql), and its reads of the
 * count tables the counting half writes (sql/010_insights_counts.sql: `flag_evaluation_counts`,
 * `flag_variant_usage`).
 */
import type { FlagStatus, StatusReason } from '../../domain/types.js';
import { json, type Queryable } from '../../storage/database.js';

const ms = (v: Date | string): number => (v instanceof Date ? v.getTime() : Date.parse(v));

// ---- settings -------------------------------------------------------------------------------------

export async function readSettings(q: Queryable, orgId: string): Promise<unknown> {
  const rows = await q.query<{ settings: unknown }>('select settings from insights_settings where org_id = $1', [orgId]);
  return rows.length === 0 ? null : rows[0].settings;
}

/** Every organization's stored settings (the status job reads them each round: one short row each). */
export async function readAllSettings(q: Queryable): Promise<Map<string, unknown>> {
  const rows = await q.query<{ org_id: string; settings: unknown }>('select org_id, settings from insights_settings');
  return new Map(rows.map((r) => [r.org_id, r.settings]));
}

export async function writeSettings(q: Queryable, orgId: string, settings: unknown): Promise<void> {
  await q.query(
    `insert into insights_settings (org_id, settings) values ($1, $2::text::json)
     on conflict (org_id) do update set settings = excluded.settings, updated_at = now()`,
    [orgId, json(settings)],
  );
}

// ---- usage (flag_variant_usage) -----------------------------------------------------------------------

export interface UsageRow {
  orgId: string;
  flag: string;
  stage: string;
  variant: string;
  firstAt: number;
  lastAt: number;
}

interface UsageDbRow {
  org_id: string;
  flag_name: string;
  stage: string;
  variant: string;
  first_at: Date | string;
  last_at: Date | string;
}

const toUsage = (r: UsageDbRow): UsageRow => ({
  orgId: r.org_id,
  flag: r.flag_name,
  stage: r.stage,
  variant: r.variant,
  firstAt: ms(r.first_at),
  lastAt: ms(r.last_at),
});

/** Usage rows of every organization; with `since`, only those evaluated at or after it. */
export async function readUsage(q: Queryable, since: number | null): Promise<UsageRow[]> {
  const rows = since === null
    ? await q.query<UsageDbRow>('select org_id, flag_name, stage, variant, first_at, last_at from flag_variant_usage')
    : await q.query<UsageDbRow>('select org_id, flag_name, stage, variant, first_at, last_at from flag_variant_usage where last_at >= $1', [new Date(since)]);
  return rows.map(toUsage);
}

/** One flag's usage rows (its insights, and a transition decided under its lock). */
export async function readFlagUsage(q: Queryable, orgId: string, flag: string): Promise<UsageRow[]> {
  const rows = await q.query<UsageDbRow>(
    'select org_id, flag_name, stage, variant, first_at, last_at from flag_variant_usage where org_id = $1 and flag_name = $2',
    [orgId, flag],
  );
  return rows.map(toUsage);
}

// ---- series (flag_evaluation_counts) ------------------------------------------------------------------

export interface SeriesRow {
  stage: string;
  start: number;
  variant: string;
  count: number;
}

/** One flag's counts in [from, to) by stage, bucket and variant, summed over applications. */
export async function readSeries(q: Queryable, orgId: string, flag: string, granularity: 'hour' | 'day', from: number, to: number): Promise<SeriesRow[]> {
  const rows = await q.query<{ stage: string; bucket_start: Date | string; variant: string; n: string | number }>(
    `select stage, bucket_start, variant, sum(count)::text as n from flag_evaluation_counts
     where org_id = $1 and flag_name = $2 and granularity = $3 and bucket_start >= $4 and bucket_start < $5
     group by stage, bucket_start, variant order by bucket_start, stage, variant`,
    [orgId, flag, granularity, new Date(from), new Date(to)],
  );
  return rows.map((r) => ({ stage: r.stage, start: ms(r.bucket_start), variant: r.variant, count: Number(r.n) }));
}

// ---- recorded statuses (flag_lifecycle) -----------------------------------------------------------------

export interface RecordedStatus {
  status: FlagStatus;
  reasons: StatusReason[];
}

/** Every recorded status: organization id → flag name → status. A flag without a row is `new`. */
export async function readRecorded(q: Queryable): Promise<Map<string, Map<string, FlagStatus>>> {
  const rows = await q.query<{ org_id: string; flag_name: string; status: FlagStatus }>('select org_id, flag_name, status from flag_lifecycle');
  const out = new Map<string, Map<string, FlagStatus>>();
  for (const r of rows) {
    let m = out.get(r.org_id);
    if (m === undefined) out.set(r.org_id, (m = new Map()));
    m.set(r.flag_name, r.status);
  }
  return out;
}

/**
 * Locks the flag's row (made first, as `new`, when it has none) and returns what it records; null
 * when the flag no longer exists. Only inside a transaction.
 */
export async function lockRecorded(tx: Queryable, orgId: string, flag: string): Promise<RecordedStatus | null> {
  await tx.query(
    `insert into flag_lifecycle (org_id, flag_name, status)
     select org_id, name, 'new' from flags where org_id = $1 and name = $2
     on conflict (org_id, flag_name) do nothing`,
    [orgId, flag],
  );
  const rows = await tx.query<{ status: FlagStatus; reasons: StatusReason[] }>(
    'select status, reasons from flag_lifecycle where org_id = $1 and flag_name = $2 for update',
    [orgId, flag],
  );
  return rows.length === 0 ? null : { status: rows[0].status, reasons: rows[0].reasons };
}

/** Records a status the caller holds the row lock of; true when it was another one. */
export async function recordStatus(tx: Queryable, orgId: string, flag: string, s: RecordedStatus): Promise<boolean> {
  const rows = await tx.query(
    `update flag_lifecycle set status = $3, reasons = $4::jsonb, changed_at = now()
     where org_id = $1 and flag_name = $2 and status <> $3 returning flag_name`,
    [orgId, flag, s.status, json(s.reasons)],
  );
  return rows.length > 0;
}
