/** SQL for scheduled changes (sql/006_schedules.sql; docs/api.md#scheduled-changes). */
import type { FlagConfig, Schedule, ScheduleStatus } from '../../domain/types.js';
import { SCHEDULE_FINISHED_KEPT } from '../../domain/validation.js';
import { iso, json, type Queryable } from '../../storage/database.js';

interface ScheduleRow {
  id: string;
  org_id: string;
  flag_name: string;
  at: Date | string;
  stage: string;
  client_id: string;
  enabled: boolean | null;
  config: FlagConfig | null;
  key_id: string;
  created_by: { keyId: string; keyName: string };
  status: ScheduleStatus;
  applied_at: Date | string | null;
  error: string | null;
}

const COLUMNS = 'id, org_id, flag_name, at, stage, client_id, enabled, config, key_id, created_by, status, applied_at, error';

/** A stored schedule with what the runner needs besides what clients see. */
export interface StoredSchedule extends Schedule {
  orgId: string;
  keyId: string;
}

/**
 * The stored configuration (a `json` column: it keeps the FlagConfig's field order and every field
 * it was written with), its stage the row's (renames follow the row).
 */
const configOf = (c: FlagConfig, stage: string): FlagConfig => ({ ...c, stage });

const toStored = (r: ScheduleRow): StoredSchedule => ({
  id: r.id,
  flag: r.flag_name,
  at: iso(r.at)!,
  stage: r.stage,
  clientId: r.client_id === '' ? null : r.client_id,
  enabled: r.enabled,
  config: r.config === null ? null : configOf(r.config, r.stage),
  createdBy: { keyId: r.created_by.keyId, keyName: r.created_by.keyName },
  status: r.status,
  appliedAt: iso(r.applied_at),
  error: r.error,
  orgId: r.org_id,
  keyId: r.key_id,
});

/** What clients see of a schedule. */
export const publicSchedule = (s: StoredSchedule): Schedule => ({
  id: s.id,
  flag: s.flag,
  at: s.at,
  stage: s.stage,
  clientId: s.clientId,
  enabled: s.enabled,
  config: s.config,
  createdBy: s.createdBy,
  status: s.status,
  appliedAt: s.appliedAt,
  error: s.error,
});

export type NewSchedule = Pick<Schedule, 'id' | 'flag' | 'at' | 'stage' | 'clientId' | 'enabled' | 'config' | 'createdBy'>;

export async function insertSchedule(q: Queryable, orgId: string, s: NewSchedule): Promise<StoredSchedule> {
  const rows = await q.query<ScheduleRow>(
    `insert into schedules (id, org_id, flag_name, at, stage, client_id, enabled, config, key_id, created_by)
     values ($1, $2, $3, $4, $5, $6, $7, $8::text::json, $9, $10::text::json) returning ${COLUMNS}`,
    [s.id, orgId, s.flag, s.at, s.stage, s.clientId ?? '', s.enabled, s.config === null ? null : json(s.config), s.createdBy.keyId, json(s.createdBy)],
  );
  return toStored(rows[0]);
}

/** Drops the finished schedules of a flag past the newest SCHEDULE_FINISHED_KEPT (bounds its list). */
export async function pruneFinished(q: Queryable, orgId: string, flag: string): Promise<void> {
  await q.query(
    `delete from schedules where org_id = $1 and flag_name = $2 and status <> 'pending' and id not in (
       select id from schedules where org_id = $1 and flag_name = $2 and status <> 'pending' order by at desc, id desc limit $3)`,
    [orgId, flag, SCHEDULE_FINISHED_KEPT],
  );
}

/** A flag's schedules, soonest first. */
export async function listSchedules(q: Queryable, orgId: string, flag: string): Promise<StoredSchedule[]> {
  const rows = await q.query<ScheduleRow>(`select ${COLUMNS} from schedules where org_id = $1 and flag_name = $2 order by at, id`, [orgId, flag]);
  return rows.map(toStored);
}

export async function getSchedule(q: Queryable, orgId: string, flag: string, id: string): Promise<StoredSchedule | null> {
  const rows = await q.query<ScheduleRow>(`select ${COLUMNS} from schedules where org_id = $1 and flag_name = $2 and id = $3`, [orgId, flag, id]);
  return rows.length === 0 ? null : toStored(rows[0]);
}

/** Pending schedules of one flag, or of the organization: the VEXIL_MAX_PENDING_SCHEDULES_* counts. */
export async function countPending(q: Queryable, orgId: string, flag: string | null): Promise<number> {
  const rows = await q.query<{ n: number }>(
    `select count(*)::int as n from schedules where org_id = $1 and status = 'pending' and ($2::text is null or flag_name = $2)`,
    [orgId, flag],
  );
  return Number(rows[0].n);
}

/** Cancels one pending schedule; returns it cancelled, or null when it was not pending. */
export async function cancelSchedule(q: Queryable, orgId: string, id: string): Promise<StoredSchedule | null> {
  const rows = await q.query<ScheduleRow>(
    `update schedules set status = 'cancelled' where org_id = $1 and id = $2 and status = 'pending' returning ${COLUMNS}`,
    [orgId, id],
  );
  return rows.length === 0 ? null : toStored(rows[0]);
}

/**
 * Deleting a flag, or one of its configurations (`only`), cancels its pending schedules, in the
 * delete's own transaction.
 */
export async function cancelPendingSchedules(q: Queryable, orgId: string, flag: string, only?: { stage: string; clientId: string | null }): Promise<void> {
  if (only === undefined) {
    await q.query(`update schedules set status = 'cancelled' where org_id = $1 and flag_name = $2 and status = 'pending'`, [orgId, flag]);
  } else {
    await q.query(
      `update schedules set status = 'cancelled' where org_id = $1 and flag_name = $2 and stage = $3 and client_id = $4 and status = 'pending'`,
      [orgId, flag, only.stage, only.clientId ?? ''],
    );
  }
}

/** Environment rename cascade: pending and past schedules follow the stage's new name. */
export async function renameScheduleStage(q: Queryable, orgId: string, from: string, to: string): Promise<void> {
  await q.query(`update schedules set stage = $3 where org_id = $1 and stage = $2`, [orgId, from, to]);
}

// ---- the runner (runner.ts) ---------------------------------------------------------------------------

/** Milliseconds from the database's clock to the soonest pending `at` (negative: due), or null when none is pending. */
export async function msToNextPending(q: Queryable): Promise<number | null> {
  const rows = await q.query<{ ms: number | string | null }>(
    `select extract(epoch from (min(at) - clock_timestamp())) * 1000 as ms from schedules where status = 'pending'`,
  );
  return rows[0].ms === null ? null : Number(rows[0].ms);
}

/** Pending schedules whose time has come by the database's clock, soonest first. */
export async function dueSchedules(q: Queryable, limit: number): Promise<StoredSchedule[]> {
  const rows = await q.query<ScheduleRow>(
    `select ${COLUMNS} from schedules where status = 'pending' and at <= clock_timestamp() order by at, id limit $1`,
    [limit],
  );
  return rows.map(toStored);
}

/**
 * Claims a due schedule inside the transaction that applies it: marks it applied, or finds it
 * already taken (applied, cancelled, failed, or locked by another node's transaction) and returns
 * false. The change's transaction commits or rolls back with the claim.
 */
export async function claimApplied(q: Queryable, id: string): Promise<boolean> {
  const rows = await q.query(
    `update schedules set status = 'applied', applied_at = clock_timestamp()
     where id = (select id from schedules where id = $1 and status = 'pending' for update skip locked) returning id`,
    [id],
  );
  return rows.length > 0;
}

/** A schedule whose change was refused when due: failed, with the reason; nothing else changes. */
export async function markFailed(q: Queryable, id: string, error: string): Promise<boolean> {
  const rows = await q.query(`update schedules set status = 'failed', error = $2 where id = $1 and status = 'pending' returning id`, [id, error]);
  return rows.length > 0;
}
