/** SQL for Management Keys. Only the SHA-256 of a key value is ever written. */
import type { ManagementKey, Permission } from '../../domain/types.js';
import { iso, json, type Queryable } from '../../storage/database.js';

interface KeyRow {
  id: string;
  org_id: string;
  name: string;
  permissions: Permission[];
  application: string | null;
  environment: string | null;
  disabled: boolean;
  created_at: Date | string;
  rotated_at: Date | string | null;
}

const COLUMNS = 'id, org_id, name, permissions, application, environment, disabled, created_at, rotated_at';

const toKey = (r: KeyRow): ManagementKey => ({
  id: r.id,
  orgId: r.org_id,
  name: r.name,
  permissions: r.permissions,
  application: r.application,
  environment: r.environment,
  disabled: r.disabled,
  createdAt: iso(r.created_at)!,
  rotatedAt: iso(r.rotated_at),
});

type NewKey = Pick<ManagementKey, 'id' | 'orgId' | 'name' | 'permissions' | 'application' | 'environment'>;

export async function insertKey(q: Queryable, key: NewKey, keyHash: string): Promise<ManagementKey> {
  const rows = await q.query<KeyRow>(
    `insert into management_keys (id, org_id, name, key_hash, permissions, application, environment)
     values ($1, $2, $3, $4, $5::jsonb, $6, $7) returning ${COLUMNS}`,
    [key.id, key.orgId, key.name, keyHash, json(key.permissions), key.application, key.environment],
  );
  return toKey(rows[0]);
}

/**
 * Inserts the key unless its organization already has `max` keys (null then), in one statement:
 * the count and the insert are one round trip, which on a saturated core is a tenth of a second of
 * the management actor's share (docs/cluster.md, "Management never starves"). The caller holds the
 * organization's lock (write.ts), so no other key is inserted between the count and the insert.
 */
export async function insertKeyWithin(q: Queryable, key: NewKey, keyHash: string, max: number): Promise<ManagementKey | null> {
  const rows = await q.query<KeyRow>(
    `insert into management_keys (id, org_id, name, key_hash, permissions, application, environment)
     select $1, $2, $3, $4, $5::jsonb, $6, $7
     where (select count(*) from management_keys where org_id = $2) < $8::int
     returning ${COLUMNS}`,
    [key.id, key.orgId, key.name, keyHash, json(key.permissions), key.application, key.environment, max],
  );
  return rows.length === 0 ? null : toKey(rows[0]);
}

export async function findKeyByHash(q: Queryable, keyHash: string): Promise<ManagementKey | null> {
  const rows = await q.query<KeyRow>(`select ${COLUMNS} from management_keys where key_hash = $1`, [keyHash]);
  return rows.length === 0 ? null : toKey(rows[0]);
}

/** A key by id with its stored hash (OFREP stream tokens are signed with it), any organization. */
export async function findKeyWithHash(q: Queryable, id: string): Promise<{ key: ManagementKey; hash: string } | null> {
  const rows = await q.query<KeyRow & { key_hash: string }>(`select ${COLUMNS}, key_hash from management_keys where id = $1`, [id]);
  return rows.length === 0 ? null : { key: toKey(rows[0]), hash: rows[0].key_hash };
}

export async function getKey(q: Queryable, orgId: string, id: string): Promise<ManagementKey | null> {
  const rows = await q.query<KeyRow>(`select ${COLUMNS} from management_keys where org_id = $1 and id = $2`, [orgId, id]);
  return rows.length === 0 ? null : toKey(rows[0]);
}

export async function listKeys(q: Queryable, orgId: string): Promise<ManagementKey[]> {
  const rows = await q.query<KeyRow>(`select ${COLUMNS} from management_keys where org_id = $1 order by created_at, id`, [orgId]);
  return rows.map(toKey);
}

export async function rotateKeyHash(q: Queryable, orgId: string, id: string, keyHash: string): Promise<ManagementKey | null> {
  const rows = await q.query<KeyRow>(
    `update management_keys set key_hash = $3, rotated_at = now() where org_id = $1 and id = $2 returning ${COLUMNS}`,
    [orgId, id, keyHash],
  );
  return rows.length === 0 ? null : toKey(rows[0]);
}

export async function disableKey(q: Queryable, orgId: string, id: string): Promise<ManagementKey | null> {
  const rows = await q.query<KeyRow>(
    `update management_keys set disabled = true where org_id = $1 and id = $2 returning ${COLUMNS}`,
    [orgId, id],
  );
  return rows.length === 0 ? null : toKey(rows[0]);
}

export async function deleteKey(q: Queryable, orgId: string, id: string): Promise<boolean> {
  const rows = await q.query(`delete from management_keys where org_id = $1 and id = $2 returning id`, [orgId, id]);
  return rows.length > 0;
}

/** Environment or application scopes in use (for CONFLICT on removal, and for renames). */
export async function keysScopedTo(q: Queryable, orgId: string, column: 'application' | 'environment', value: string): Promise<number> {
  const rows = await q.query<{ n: number }>(
    `select count(*)::int as n from management_keys where org_id = $1 and lower(${column}) = lower($2)`,
    [orgId, value],
  );
  return Number(rows[0].n);
}

/** Returns the ids of the keys whose scope changed (their cached records are stale). */
export async function renameKeyScope(q: Queryable, orgId: string, column: 'application' | 'environment', from: string, to: string): Promise<string[]> {
  const rows = await q.query<{ id: string }>(
    `update management_keys set ${column} = $3 where org_id = $1 and lower(${column}) = lower($2) returning id`,
    [orgId, from, to],
  );
  return rows.map((r) => r.id);
}

/** Keys of the organization, disabled ones included: the VEXIL_MAX_KEYS_PER_ORG count. */
/** Enabled organization-wide keys with the Admin permission: the keys that can manage keys. */
export async function enabledAdminKeyIds(q: Queryable, orgId: string): Promise<string[]> {
  const rows = await q.query<{ id: string; permissions: Permission[] }>(
    'select id, permissions from management_keys where org_id = $1 and disabled = false and application is null and environment is null',
    [orgId],
  );
  return rows.filter((r) => r.permissions.includes('Admin')).map((r) => r.id);
}
