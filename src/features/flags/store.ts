/** SQL for flags and their stage configurations. */
import type { Flag, FlagConfig, FlagDependency, FlagPurpose, Rule, ValueType, Variant } from '../../domain/types.js';
import { iso, json, type Queryable } from '../../storage/database.js';

export interface FlagRow {
  name: string;
  project: string;
  type: ValueType;
  description: string | null;
  tags: string[];
  is_archived: boolean;
  variants: Variant[];
  environments: string[];
  dependencies: FlagDependency[];
  purpose: FlagPurpose;
  created_at: Date | string;
  updated_at: Date | string;
}

export interface ConfigRow {
  flag_name: string;
  stage: string;
  client_id: string;
  enabled: boolean;
  default_variant_key: string;
  rollout_percentage: number;
  rules: Rule[];
  active_from: Date | string | null;
  active_until: Date | string | null;
  enrollment_cutoff: number | null;
}

export const FLAG_COLUMNS = 'name, project, type, description, tags, is_archived, variants, environments, dependencies, purpose, created_at, updated_at';
export const CONFIG_COLUMNS = 'flag_name, stage, client_id, enabled, default_variant_key, rollout_percentage, rules, active_from, active_until, enrollment_cutoff';

export const toFlag = (r: FlagRow): Flag => ({
  name: r.name,
  project: r.project,
  type: r.type,
  description: r.description,
  tags: r.tags,
  isArchived: r.is_archived,
  variants: r.variants.map((v) => ({ key: v.key, value: v.value, valueType: v.valueType })),
  environments: r.environments,
  dependencies: r.dependencies,
  // Rows read before migration 011 (none after it) have no purpose.
  purpose: r.purpose ?? 'release',
  createdAt: iso(r.created_at)!,
  updatedAt: iso(r.updated_at)!,
});

/** jsonb does not keep key order; give clients the documented field order back. */
const toRule = (r: Rule): Rule => ({
  id: r.id,
  priority: r.priority,
  conditions: r.conditions.map((c) => ({ field: c.field, operator: c.operator, value: c.value })),
  // Rules stored before segments existed have none.
  segments: r.segments ?? [],
  allocations: r.allocations.map((a) => ({ variantKey: a.variantKey, percentage: a.percentage })),
});

export const toConfig = (r: ConfigRow): FlagConfig => ({
  stage: r.stage,
  clientId: r.client_id === '' ? null : r.client_id,
  enabled: r.enabled,
  defaultVariantKey: r.default_variant_key,
  rolloutPercentage: Number(r.rollout_percentage),
  rules: r.rules.map(toRule),
  activeFrom: iso(r.active_from),
  activeUntil: iso(r.active_until),
  enrollmentCutoff: r.enrollment_cutoff === null ? null : Number(r.enrollment_cutoff),
});

export type NewFlag = Omit<Flag, 'createdAt' | 'updatedAt'>;

export async function insertFlag(q: Queryable, orgId: string, f: NewFlag): Promise<Flag> {
  const rows = await q.query<FlagRow>(
    `insert into flags (org_id, name, project, type, description, tags, is_archived, variants, environments, dependencies, purpose)
     values ($1, $2, $3, $4, $5, $6::jsonb, $7, $8::jsonb, $9::jsonb, $10::jsonb, $11) returning ${FLAG_COLUMNS}`,
    [orgId, f.name, f.project, f.type, f.description, json(f.tags), f.isArchived, json(f.variants), json(f.environments), json(f.dependencies), f.purpose],
  );
  return toFlag(rows[0]);
}

/** Writes every mutable column of an existing flag; returns null when it does not exist. */
export async function saveFlag(q: Queryable, orgId: string, f: NewFlag): Promise<Flag | null> {
  const rows = await q.query<FlagRow>(
    `update flags set project = $3, type = $4, description = $5, tags = $6::jsonb, is_archived = $7,
       variants = $8::jsonb, environments = $9::jsonb, dependencies = $10::jsonb, purpose = $11, updated_at = now()
     where org_id = $1 and name = $2 returning ${FLAG_COLUMNS}`,
    [orgId, f.name, f.project, f.type, f.description, json(f.tags), f.isArchived, json(f.variants), json(f.environments), json(f.dependencies), f.purpose],
  );
  return rows.length === 0 ? null : toFlag(rows[0]);
}

export async function getFlag(q: Queryable, orgId: string, name: string): Promise<Flag | null> {
  const rows = await q.query<FlagRow>(`select ${FLAG_COLUMNS} from flags where org_id = $1 and name = $2`, [orgId, name]);
  return rows.length === 0 ? null : toFlag(rows[0]);
}

/**
 * Every flag of the organization, in the order of their names' UTF-16 code units (`collate "C"`:
 * byte order, which for flag names, ASCII only, is JavaScript's `<`): the flag list's index is then
 * made without a sort, and on the front thread in slices (snapshots/flag-index.ts).
 */
export async function listFlags(q: Queryable, orgId: string): Promise<Flag[]> {
  const rows = await q.query<FlagRow>(`select ${FLAG_COLUMNS} from flags where org_id = $1 order by name collate "C"`, [orgId]);
  return rows.map(toFlag);
}

/** Flags whose dependencies name `parent` (jsonb containment; no scan of the other flags' data). */
export async function flagsDependingOn(q: Queryable, orgId: string, parent: string): Promise<Flag[]> {
  const rows = await q.query<FlagRow>(
    `select ${FLAG_COLUMNS} from flags where org_id = $1 and dependencies @> $2::jsonb order by name`,
    [orgId, json([{ flag: parent }])],
  );
  return rows.map(toFlag);
}

/**
 * What a dependency check needs: the named flags (the parents) and every flag that has
 * dependencies of its own (the edges a cycle could run through). Flags without dependencies that
 * are not named cannot be on a cycle.
 */
export async function dependencyGraph(q: Queryable, orgId: string, names: string[]): Promise<Flag[]> {
  const rows = await q.query<FlagRow>(
    `select ${FLAG_COLUMNS} from flags where org_id = $1
       and (name in (select jsonb_array_elements_text($2::jsonb)) or dependencies <> '[]'::jsonb)`,
    [orgId, json(names)],
  );
  return rows.map(toFlag);
}

export async function deleteFlag(q: Queryable, orgId: string, name: string): Promise<boolean> {
  const rows = await q.query(`delete from flags where org_id = $1 and name = $2 returning name`, [orgId, name]);
  return rows.length > 0;
}

export async function listConfigs(q: Queryable, orgId: string, flagName: string): Promise<FlagConfig[]> {
  const rows = await q.query<ConfigRow>(
    `select ${CONFIG_COLUMNS} from flag_configs where org_id = $1 and flag_name = $2 order by stage, client_id`,
    [orgId, flagName],
  );
  return rows.map(toConfig);
}

/** Every configuration of the organization, grouped by flag name (snapshot builds). */
export async function listOrgConfigs(q: Queryable, orgId: string): Promise<Map<string, FlagConfig[]>> {
  const rows = await q.query<ConfigRow>(
    `select ${CONFIG_COLUMNS} from flag_configs where org_id = $1 order by flag_name, stage, client_id`,
    [orgId],
  );
  const byFlag = new Map<string, FlagConfig[]>();
  for (const r of rows) {
    let list = byFlag.get(r.flag_name);
    if (list === undefined) byFlag.set(r.flag_name, (list = []));
    list.push(toConfig(r));
  }
  return byFlag;
}

export async function upsertConfig(q: Queryable, orgId: string, flagName: string, c: FlagConfig): Promise<FlagConfig> {
  const rows = await q.query<ConfigRow>(
    `insert into flag_configs (org_id, flag_name, stage, client_id, enabled, default_variant_key, rollout_percentage,
       rules, active_from, active_until, enrollment_cutoff)
     values ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9, $10, $11)
     on conflict (org_id, flag_name, stage, client_id) do update set
       enabled = excluded.enabled, default_variant_key = excluded.default_variant_key,
       rollout_percentage = excluded.rollout_percentage, rules = excluded.rules,
       active_from = excluded.active_from, active_until = excluded.active_until,
       enrollment_cutoff = excluded.enrollment_cutoff, updated_at = now()
     returning ${CONFIG_COLUMNS}`,
    [orgId, flagName, c.stage, c.clientId ?? '', c.enabled, c.defaultVariantKey, c.rolloutPercentage, json(c.rules),
      c.activeFrom, c.activeUntil, c.enrollmentCutoff],
  );
  return toConfig(rows[0]);
}

export async function setConfigEnabled(q: Queryable, orgId: string, flagName: string, stage: string, clientId: string | null, enabled: boolean): Promise<FlagConfig | null> {
  const rows = await q.query<ConfigRow>(
    `update flag_configs set enabled = $5, updated_at = now()
     where org_id = $1 and flag_name = $2 and stage = $3 and client_id = $4 returning ${CONFIG_COLUMNS}`,
    [orgId, flagName, stage, clientId ?? '', enabled],
  );
  return rows.length === 0 ? null : toConfig(rows[0]);
}

export async function getConfig(q: Queryable, orgId: string, flagName: string, stage: string, clientId: string | null): Promise<FlagConfig | null> {
  const rows = await q.query<ConfigRow>(
    `select ${CONFIG_COLUMNS} from flag_configs where org_id = $1 and flag_name = $2 and stage = $3 and client_id = $4`,
    [orgId, flagName, stage, clientId ?? ''],
  );
  return rows.length === 0 ? null : toConfig(rows[0]);
}

/** Deletes one configuration; returns it, or null when there was none. */
export async function deleteConfig(q: Queryable, orgId: string, flagName: string, stage: string, clientId: string | null): Promise<FlagConfig | null> {
  const rows = await q.query<ConfigRow>(
    `delete from flag_configs where org_id = $1 and flag_name = $2 and stage = $3 and client_id = $4 returning ${CONFIG_COLUMNS}`,
    [orgId, flagName, stage, clientId ?? ''],
  );
  return rows.length === 0 ? null : toConfig(rows[0]);
}

/** Renames a stage in every configuration of the organization (environment rename cascade). */
export async function renameConfigStage(q: Queryable, orgId: string, from: string, to: string): Promise<void> {
  await q.query(`update flag_configs set stage = $3 where org_id = $1 and stage = $2`, [orgId, from, to]);
}

/** Flags of the organization (archived ones included): the VEXIL_MAX_FLAGS_PER_ORG count. */
export async function countFlags(q: Queryable, orgId: string): Promise<number> {
  const rows = await q.query<{ n: number }>('select count(*)::int as n from flags where org_id = $1', [orgId]);
  return Number(rows[0].n);
}

/** Configurations of one flag (clientId ones included): the VEXIL_MAX_CONFIGS_PER_FLAG count. */
export async function countConfigs(q: Queryable, orgId: string, flagName: string): Promise<number> {
  const rows = await q.query<{ n: number }>('select count(*)::int as n from flag_configs where org_id = $1 and flag_name = $2', [orgId, flagName]);
  return Number(rows[0].n);
}
