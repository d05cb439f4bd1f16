/** SQL for organizations: their settings, environments, applications and kill switch. */
import type { KillSwitchRule, Organization } from '../../domain/types.js';
import { json, type Queryable } from '../../storage/database.js';

export interface OrgRow {
  id: string;
  name: string;
  subscription_active: boolean;
  environments: string[];
  applications: string[];
  kill_switch: KillSwitchRule[];
  version: number;
}

export const COLUMNS = 'id, name, subscription_active, environments, applications, kill_switch, version';

export const toOrg = (r: OrgRow): Organization => ({
  id: r.id,
  name: r.name,
  subscriptionActive: r.subscription_active,
  environments: r.environments,
  applications: r.applications,
  killSwitch: r.kill_switch,
  version: Number(r.version),
});

export async function insertOrg(q: Queryable, org: Omit<Organization, 'version'>): Promise<Organization> {
  const rows = await q.query<OrgRow>(
    `insert into organizations (id, name, subscription_active, environments, applications, kill_switch)
     values ($1, $2, $3, $4::jsonb, $5::jsonb, $6::jsonb) returning ${COLUMNS}`,
    [org.id, org.name, org.subscriptionActive, json(org.environments), json(org.applications), json(org.killSwitch)],
  );
  return toOrg(rows[0]);
}

export async function getOrg(q: Queryable, id: string): Promise<Organization | null> {
  const rows = await q.query<OrgRow>(`select ${COLUMNS} from organizations where id = $1`, [id]);
  return rows.length === 0 ? null : toOrg(rows[0]);
}

export async function getOrgByName(q: Queryable, name: string): Promise<Organization | null> {
  const rows = await q.query<OrgRow>(`select ${COLUMNS} from organizations where name = $1`, [name]);
  return rows.length === 0 ? null : toOrg(rows[0]);
}

export async function countOrgs(q: Queryable): Promise<number> {
  const rows = await q.query<{ n: number }>('select count(*)::int as n from organizations');
  return Number(rows[0].n);
}

/** Versions of every organization: what a node compares to find what changed. */
export async function orgVersions(q: Queryable): Promise<Map<string, number>> {
  const rows = await q.query<{ id: string; version: number }>('select id, version from organizations');
  return new Map(rows.map((r) => [r.id, Number(r.version)]));
}

/** Versions of each organization kept in `org_changes`; a node further behind reloads it whole. */
export const CHANGE_LOG_KEEP = 1000;

/**
 * Locks the organization's row for the rest of the transaction and bumps its version. Every write
 * starts with this, so writes to one organization are serialised (checks such as name conflicts and
 * dependency cycles see a stable state) and each commit has its own, monotonic version. The same
 * statement records what the new version touches (`org_changes`, read by `orgChangesSince`), so
 * the record commits with the write or not at all; every 100th version prunes the log.
 */
export async function lockAndBumpVersion(q: Queryable, orgId: string, touches: unknown): Promise<Organization | null> {
  const rows = await q.query<OrgRow>(
    `with o as (update organizations set version = version + 1 where id = $1 returning ${COLUMNS}),
       logged as (insert into org_changes (org_id, version, touches) select id, version, $2::jsonb from o)
     select * from o`,
    [orgId, json(touches)],
  );
  if (rows.length === 0) return null;
  const org = toOrg(rows[0]);
  if (org.version % 100 === 0) {
    await q.query('delete from org_changes where org_id = $1 and version <= $2', [orgId, org.version - CHANGE_LOG_KEEP]);
  }
  return org;
}

/** Locks the organization's row for the rest of the transaction, without a new version (key writes). */
export async function lockOrg(q: Queryable, orgId: string): Promise<Organization | null> {
  const rows = await q.query<OrgRow>(`select ${COLUMNS} from organizations where id = $1 for update`, [orgId]);
  return rows.length === 0 ? null : toOrg(rows[0]);
}

export async function updateOrgSettings(
  q: Queryable,
  orgId: string,
  patch: Partial<Pick<Organization, 'subscriptionActive' | 'environments' | 'applications' | 'killSwitch'>>,
): Promise<Organization> {
  const rows = await q.query<OrgRow>(
    `update organizations set
       subscription_active = coalesce($2, subscription_active),
       environments = coalesce($3::jsonb, environments),
       applications = coalesce($4::jsonb, applications),
       kill_switch = coalesce($5::jsonb, kill_switch)
     where id = $1 returning ${COLUMNS}`,
    [
      orgId,
      patch.subscriptionActive ?? null,
      patch.environments === undefined ? null : json(patch.environments),
      patch.applications === undefined ? null : json(patch.applications),
      patch.killSwitch === undefined ? null : json(patch.killSwitch),
    ],
  );
  return toOrg(rows[0]);
}
