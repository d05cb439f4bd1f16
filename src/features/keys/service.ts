/**
 * Management Keys (CONTRACT.md 4): Admin on an org-wide key manages the keys of its own
 * organization. A key value is shown once, at creation and at each rotation. Disabling, rotating or
 * deleting a key drops it from this node's cache at once and tells the other nodes.
 */
import { randomUUID } from 'node:crypto';
import type { Authenticated } from '../../auth/authenticate.js';
import { generateKeyValue, hashKey } from '../../auth/key-material.js';
import { requireAdmin } from '../../auth/permissions.js';
import { badRequest, notFound } from '../../domain/errors.js';
import { findName } from '../../domain/names.js';
import type { ManagementKey } from '../../domain/types.js';
import { parseCreateKey } from '../../domain/validation.js';
import type { Runtime } from '../../runtime.js';
import { getOrg } from '../organizations/store.js';
import * as store from './store.js';

/** What clients see of a key: never its value or hash. */
export type KeyView = Omit<ManagementKey, 'orgId'>;

export const keyView = ({ orgId: _org, ...rest }: ManagementKey): KeyView => rest;

/** A key just created or rotated: its value, shown this once, and its record. */
export interface IssuedKey {
  id: string;
  key: string;
  record: KeyView;
}

function forget(rt: Runtime, orgId: string, keyId: string): void {
  rt.keys.invalidateKey(keyId);
  rt.bus.publish({ kind: 'key', orgId, keyId });
}

export function listKeys(rt: Runtime, auth: Authenticated): Promise<KeyView[]> {
  requireAdmin(auth.principal);
  return store.listKeys(rt.db, auth.principal.orgId).then((keys) => keys.map(keyView));
}

export async function createKey(rt: Runtime, auth: Authenticated, raw: unknown): Promise<IssuedKey> {
  requireAdmin(auth.principal);
  const input = parseCreateKey(raw);
  if (input.permissions.includes('Admin') && (input.application !== null || input.environment !== null)) {
    throw badRequest('A key with the Admin permission must be organization-wide (no application or environment)');
  }
  const value = generateKeyValue();
  const key = await rt.db.transaction(async (tx) => {
    // Lock the organization so a concurrent removal of an environment or application cannot
    // leave this key scoped to a name that no longer exists.
    await tx.query('select id from organizations where id = $1 for update', [auth.principal.orgId]);
    const org = (await getOrg(tx, auth.principal.orgId))!;
    const application = input.application === null ? null : findName(org.applications, input.application);
    const environment = input.environment === null ? null : findName(org.environments, input.environment);
    if (application === undefined) throw badRequest(`Unknown application '${input.application}'`);
    if (environment === undefined) throw badRequest(`Unknown environment '${input.environment}'`);
    return store.insertKey(
      tx,
      { id: randomUUID(), orgId: org.id, name: input.name, permissions: input.permissions, application, environment },
      hashKey(value),
    );
  });
  return { id: key.id, key: value, record: keyView(key) };
}

const keyNotFound = (id: string) => notFound(`Management key '${id}' not found`);

export async function rotateKey(rt: Runtime, auth: Authenticated, id: string): Promise<IssuedKey> {
  requireAdmin(auth.principal);
  const value = generateKeyValue();
  const key = await store.rotateKeyHash(rt.db, auth.principal.orgId, id, hashKey(value));
  if (key === null) throw keyNotFound(id);
  forget(rt, key.orgId, key.id);
  return { id: key.id, key: value, record: keyView(key) };
}

export async function disableKey(rt: Runtime, auth: Authenticated, id: string): Promise<KeyView> {
  requireAdmin(auth.principal);
  const key = await store.disableKey(rt.db, auth.principal.orgId, id);
  if (key === null) throw keyNotFound(id);
  forget(rt, key.orgId, key.id);
  return keyView(key);
}

export async function deleteKey(rt: Runtime, auth: Authenticated, id: string): Promise<void> {
  requireAdmin(auth.principal);
  if (!(await store.deleteKey(rt.db, auth.principal.orgId, id))) throw keyNotFound(id);
  forget(rt, auth.principal.orgId, id);
}
