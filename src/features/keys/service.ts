/**
 * Management Keys (docs/api.md#key-management): Admin on an org-wide key manages the keys of its
 * own organization. A key value is shown once, at creation and at each rotation. Disabling,
 * rotating or deleting a key drops it from this node's cache at once and tells the other nodes.
 * Every change goes through `writeOrgKeys` with its audit event (the key record, never its value or
 * hash).
 */
import { randomUUID } from 'node:crypto';
import type { Authenticated } from '../../auth/authenticate.js';
import { generateKeyValue, hashKey } from '../../auth/key-material.js';
import { requireAdmin } from '../../auth/permissions.js';
import { badRequest, conflict, notFound, VexilError } from '../../domain/errors.js';
import { findName } from '../../domain/name-matching.js';
import type { KeyView, ManagementKey } from '../../domain/types.js';
import { parseCreateKey, quotaError } from '../../domain/validation.js';
import type { ActorRuntime } from '../../runtime.js';
import type { Queryable } from '../../storage/database.js';
import { keyChange } from '../audit/events.js';
import { actorOf, writeOrgKeys, type Audited } from '../write.js';
import * as store from './store.js';

export const keyView = ({ orgId: _org, ...rest }: ManagementKey): KeyView => rest;

/** A key just created or rotated: its value, shown this once, and its record. */
export interface IssuedKey {
  id: string;
  key: string;
  record: KeyView;
}

/**
 * A changed key: every front's cache drops it, this node's first (the front applies the event
 * before it writes the answer), then the other nodes'.
 */
export function forgetKey(rt: ActorRuntime, orgId: string, keyId: string): void {
  rt.bus.publish({ kind: 'key', orgId, keyId });
}

/**
 * `GET /api/keys/self` and GraphQL `viewer`: the calling key's own record (never its value), for
 * any valid key whatever its permissions, so that a client can show only what the key may do.
 */
export async function selfKey(rt: ActorRuntime, auth: Authenticated): Promise<KeyView> {
  const key = await store.getKey(rt.db, auth.principal.orgId, auth.principal.keyId);
  // Deleted between authentication and this read: the key is no longer valid.
  if (key === null || key.disabled) throw new VexilError('UNAUTHENTICATED', 'Invalid management key');
  return keyView(key);
}

export function listKeys(rt: ActorRuntime, auth: Authenticated): Promise<KeyView[]> {
  requireAdmin(auth.principal);
  return store.listKeys(rt.db, auth.principal.orgId).then((keys) => keys.map(keyView));
}

export async function createKey(rt: ActorRuntime, auth: Authenticated, raw: unknown): Promise<IssuedKey> {
  requireAdmin(auth.principal);
  const input = parseCreateKey(raw);
  const limits = rt.config.tenancyLimits;
  if (input.permissions.includes('Admin') && (input.application !== null || input.environment !== null)) {
    throw badRequest('A key with the Admin permission must be organization-wide (no application or environment)');
  }
  const value = generateKeyValue();
  const hash = hashKey(value);
  let inserted: ManagementKey | undefined;
  // The organization is locked: a concurrent removal of an environment or application cannot
  // leave this key scoped to a name that no longer exists.
  const issued = await writeOrgKeys(rt, actorOf(auth.principal), auth.principal.orgId, async (tx, org) => {
    const application = input.application === null ? null : findName(org.applications, input.application);
    const environment = input.environment === null ? null : findName(org.environments, input.environment);
    if (application === undefined) throw badRequest(`Unknown application '${input.application}'`);
    if (environment === undefined) throw badRequest(`Unknown environment '${input.environment}'`);
    const made = await store.insertKeyWithin(
      tx,
      { id: randomUUID(), orgId: org.id, name: input.name, permissions: input.permissions, application, environment },
      hash,
      limits.maxKeysPerOrg,
    );
    if (made === null) throw quotaError(limits, 'maxKeysPerOrg');
    inserted = made;
    const key = keyView(made);
    return { result: { id: key.id, key: value, record: key }, audit: keyChange('key.create', null, key) };
  });
  // Committed: this node's front knows the key before the answer shows its value.
  rt.keyIssued?.(hash, inserted!);
  return issued;
}

const keyNotFound = (id: string) => notFound(`Management key '${id.slice(0, 64)}' not found`);

/** Key ids are UUIDs: anything else (a NUL byte, which PostgreSQL text refuses, included) is not found. */
const KEY_ID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * A change to an existing key: `change` gets the key's record (404 when the organization has no
 * such key) and returns the result and the record after the change (null: deleted). After commit
 * the old key state is dropped from the caches.
 */
async function changeKey<T>(
  rt: ActorRuntime,
  auth: Authenticated,
  id: string,
  action: 'key.rotate' | 'key.disable' | 'key.delete',
  change: (tx: Queryable, before: KeyView) => Promise<{ result: T; after: KeyView | null }>,
): Promise<T> {
  const p = auth.principal;
  requireAdmin(p);
  if (!KEY_ID_RE.test(id)) throw keyNotFound(id);
  const result = await writeOrgKeys(rt, actorOf(p), p.orgId, async (tx): Promise<Audited<T>> => {
    const before = await store.getKey(tx, p.orgId, id);
    if (before === null) throw keyNotFound(id);
    const { result, after } = await change(tx, keyView(before));
    return { result, audit: keyChange(action, keyView(before), after) };
  });
  forgetKey(rt, p.orgId, id);
  return result;
}

export async function rotateKey(rt: ActorRuntime, auth: Authenticated, id: string): Promise<IssuedKey> {
  const value = generateKeyValue();
  const hash = hashKey(value);
  let rotated: ManagementKey | undefined;
  const issued = await changeKey(rt, auth, id, 'key.rotate', async (tx) => {
    rotated = (await store.rotateKeyHash(tx, auth.principal.orgId, id, hash))!;
    const key = keyView(rotated);
    return { result: { id: key.id, key: value, record: key }, after: key };
  });
  // After the old value was forgotten (changeKey): the new one is known before the answer shows it.
  rt.keyIssued?.(hash, rotated!);
  return issued;
}

/**
 * The organization always keeps an enabled Admin key. Disabling or deleting the last one is 409
 * CONFLICT (the operator API can issue a new one). Runs inside the write, where the organization is
 * locked, so two concurrent removals cannot both pass.
 */
async function keepAnAdmin(tx: Queryable, orgId: string, key: KeyView): Promise<void> {
  const admins = await store.enabledAdminKeyIds(tx, orgId);
  if (admins.includes(key.id) && admins.length === 1) {
    throw conflict(`Management key '${key.id}' is the organization's last enabled Admin key; create another Admin key first`);
  }
}

export function disableKey(rt: ActorRuntime, auth: Authenticated, id: string): Promise<KeyView> {
  return changeKey(rt, auth, id, 'key.disable', async (tx, before) => {
    await keepAnAdmin(tx, auth.principal.orgId, before);
    const key = keyView((await store.disableKey(tx, auth.principal.orgId, id))!);
    return { result: key, after: key };
  });
}

export function deleteKey(rt: ActorRuntime, auth: Authenticated, id: string): Promise<void> {
  return changeKey(rt, auth, id, 'key.delete', async (tx, before) => {
    await keepAnAdmin(tx, auth.principal.orgId, before);
    await store.deleteKey(tx, auth.principal.orgId, id);
    return { result: undefined, after: null };
  });
}
