/**
 * What changed in an organization since a version a node holds, read in ONE statement, so the
 * organization's row (its version included), the change log (`org_changes`) and the data of the
 * flags that log names all come from the same database snapshot (PostgreSQL gives every statement
 * one snapshot, subqueries included); likewise the segments it names. A node applies this and claims the version read here: never
 * one a bus message claimed (docs/cluster.md, "Bus trust").
 */
import type { Flag, FlagConfig, Segment } from '../domain/types.js';
import type { OrgDelta, Touches } from '../snapshots/registry.js';
import type { Queryable } from '../storage/database.js';
import { CONFIG_COLUMNS, FLAG_COLUMNS, toConfig, toFlag, type ConfigRow, type FlagRow } from './flags/store.js';
import { COLUMNS as ORG_COLUMNS, toOrg, type OrgRow } from './organizations/store.js';
import { SEGMENT_COLUMNS, toSegment, type SegmentRow } from './segments/store.js';

interface DeltaRow extends OrgRow {
  changes: { version: number; touches: Touches }[];
  flags: FlagRow[];
  configs: ConfigRow[];
  segments: SegmentRow[];
}

const ORG_SELECT = ORG_COLUMNS.split(', ').map((c) => `o.${c}`).join(', ');

/**
 * The organization's delta since `held`; null when the organization does not exist. `changes` is
 * empty when the range is wider than `maxChanges`, and shorter than the range when the log no
 * longer covers it (pruned, or versions written before the log existed): the registry then reloads
 * the organization. A flag (segment) the changes name but `flags` (`segments`) lacks was deleted.
 */
export async function orgChangesSince(q: Queryable, orgId: string, held: number, maxChanges: number): Promise<OrgDelta | null> {
  const rows = await q.query<DeltaRow>(
    `with o as (select ${ORG_COLUMNS} from organizations where id = $1),
       ch as (select c.version, c.touches from org_changes c, o
              where c.org_id = $1 and c.version > $2 and c.version <= o.version and o.version - $2 <= $3),
       names as (select distinct touches->>'flag' as name from ch where jsonb_typeof(touches) = 'object'),
       segnames as (select distinct touches->>'segment' as name from ch where jsonb_typeof(touches) = 'object')
     select ${ORG_SELECT},
       (select coalesce(json_agg(json_build_object('version', ch.version, 'touches', ch.touches) order by ch.version), '[]'::json) from ch) as changes,
       (select coalesce(json_agg(row_to_json(f)), '[]'::json)
          from (select ${FLAG_COLUMNS} from flags where org_id = $1 and name in (select name from names)) f) as flags,
       (select coalesce(json_agg(row_to_json(c) order by c.flag_name, c.stage, c.client_id), '[]'::json)
          from (select ${CONFIG_COLUMNS} from flag_configs where org_id = $1 and flag_name in (select name from names)) c) as configs,
       (select coalesce(json_agg(row_to_json(s)), '[]'::json)
          from (select ${SEGMENT_COLUMNS} from segments where org_id = $1 and name in (select name from segnames)) s) as segments
     from o`,
    [orgId, held, maxChanges],
  );
  if (rows.length === 0) return null;
  const r = rows[0];
  const parse = <T>(v: T | string): T => (typeof v === 'string' ? (JSON.parse(v) as T) : v);
  const flags = new Map<string, { flag: Flag; configs: FlagConfig[] }>();
  for (const f of parse(r.flags)) flags.set(f.name, { flag: toFlag(f), configs: [] });
  for (const c of parse(r.configs)) flags.get(c.flag_name)?.configs.push(toConfig(c));
  const changes = parse(r.changes).map((c) => ({ version: Number(c.version), touches: c.touches }));
  const segments = new Map<string, Segment>();
  for (const row of parse(r.segments)) segments.set(row.name, toSegment(row));
  return { org: toOrg(r), changes, flags, segments };
}
