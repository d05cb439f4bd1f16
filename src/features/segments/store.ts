/** SQL for segments (sql/005_segments.sql). */
import type { Condition, Segment } from '../../domain/types.js';
import { iso, json, type Queryable } from '../../storage/database.js';

export interface SegmentRow {
  name: string;
  description: string | null;
  application: string | null;
  conditions: Condition[];
  created_at: Date | string;
  updated_at: Date | string;
}

export const SEGMENT_COLUMNS = 'name, description, application, conditions, created_at, updated_at';

/** jsonb does not keep key order; give clients the documented field order back. */
export const toSegment = (r: SegmentRow): Segment => ({
  name: r.name,
  description: r.description,
  application: r.application,
  conditions: r.conditions.map((c) => ({ field: c.field, operator: c.operator, value: c.value })),
  createdAt: iso(r.created_at)!,
  updatedAt: iso(r.updated_at)!,
});

export type NewSegment = Omit<Segment, 'createdAt' | 'updatedAt'>;

export async function insertSegment(q: Queryable, orgId: string, s: NewSegment): Promise<Segment> {
  const rows = await q.query<SegmentRow>(
    `insert into segments (org_id, name, description, application, conditions)
     values ($1, $2, $3, $4, $5::jsonb) returning ${SEGMENT_COLUMNS}`,
    [orgId, s.name, s.description, s.application, json(s.conditions)],
  );
  return toSegment(rows[0]);
}

export async function saveSegment(q: Queryable, orgId: string, s: NewSegment): Promise<Segment> {
  const rows = await q.query<SegmentRow>(
    `update segments set description = $3, application = $4, conditions = $5::jsonb, updated_at = now()
     where org_id = $1 and name = $2 returning ${SEGMENT_COLUMNS}`,
    [orgId, s.name, s.description, s.application, json(s.conditions)],
  );
  return toSegment(rows[0]);
}

export async function getSegment(q: Queryable, orgId: string, name: string): Promise<Segment | null> {
  const rows = await q.query<SegmentRow>(`select ${SEGMENT_COLUMNS} from segments where org_id = $1 and name = $2`, [orgId, name]);
  return rows.length === 0 ? null : toSegment(rows[0]);
}

/** The named segments that exist (a rule's check at write time). */
export async function getSegments(q: Queryable, orgId: string, names: readonly string[]): Promise<Segment[]> {
  if (names.length === 0) return [];
  const rows = await q.query<SegmentRow>(
    `select ${SEGMENT_COLUMNS} from segments where org_id = $1 and name in (select jsonb_array_elements_text($2::jsonb))`,
    [orgId, json(names)],
  );
  return rows.map(toSegment);
}

export async function listSegments(q: Queryable, orgId: string): Promise<Segment[]> {
  const rows = await q.query<SegmentRow>(`select ${SEGMENT_COLUMNS} from segments where org_id = $1 order by name`, [orgId]);
  return rows.map(toSegment);
}

export async function deleteSegment(q: Queryable, orgId: string, name: string): Promise<void> {
  await q.query('delete from segments where org_id = $1 and name = $2', [orgId, name]);
}

/** Segments of the organization: the VEXIL_MAX_SEGMENTS_PER_ORG count. */
export async function countSegments(q: Queryable, orgId: string): Promise<number> {
  const rows = await q.query<{ n: number }>('select count(*)::int as n from segments where org_id = $1', [orgId]);
  return Number(rows[0].n);
}

/** Names of the flags whose configurations have a rule naming `segment` (jsonb containment), sorted. */
export async function flagsUsingSegment(q: Queryable, orgId: string, segment: string): Promise<string[]> {
  const rows = await q.query<{ flag_name: string }>(
    `select distinct flag_name from flag_configs where org_id = $1 and rules @> $2::jsonb order by flag_name`,
    [orgId, json([{ segments: [segment] }])],
  );
  return rows.map((r) => r.flag_name);
}

/** Segments of an application, for the application's removal (CONFLICT while any exists). */
export async function segmentsOfApplication(q: Queryable, orgId: string, application: string): Promise<string[]> {
  const rows = await q.query<{ name: string }>(
    'select name from segments where org_id = $1 and lower(application) = lower($2) order by name',
    [orgId, application],
  );
  return rows.map((r) => r.name);
}

/** Application rename cascade: the segments of `from` now belong to `to`. */
export async function renameSegmentApplication(q: Queryable, orgId: string, from: string, to: string): Promise<void> {
  await q.query('update segments set application = $3 where org_id = $1 and application = $2', [orgId, from, to]);
}
