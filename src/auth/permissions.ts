/**
 * Who may do what (docs/api.md#keys): pure checks on an authenticated principal. Each throws a
 * FORBIDDEN VexilError; callers decide the order.
 */
import { OrgWideEvaluatorError, VexilError } from '../domain/errors.js';
import { inScope } from '../domain/name-matching.js';
import type { ManagementKey, Permission } from '../domain/types.js';

export interface Principal {
  keyId: string;
  /** The key's display name (the audit log's actor). */
  keyName: string;
  orgId: string;
  permissions: ReadonlySet<Permission>;
  application: string | null;
  environment: string | null;
}

const principals = new WeakMap<ManagementKey, Principal>();

/** The principal of a cached key record, built once per record (not per request). */
export function principalOf(k: ManagementKey): Principal {
  let p = principals.get(k);
  if (p === undefined) {
    p = { keyId: k.id, keyName: k.name, orgId: k.orgId, permissions: new Set(k.permissions), application: k.application, environment: k.environment };
    principals.set(k, p);
  }
  return p;
}

/**
 * CanWrite includes CanRead; Admin grants key management only; CanApprove reviews change requests
 * within the key's scopes (docs/change-requests.md) and allows nothing else by itself: it implies no
 * other permission and no other permission implies it.
 */
export function has(p: Principal, perm: Permission): boolean {
  if (p.permissions.has(perm)) return true;
  return perm === 'CanRead' && p.permissions.has('CanWrite');
}

export function requirePermission(p: Principal, perm: Permission): void {
  if (!has(p, perm)) throw new VexilError('FORBIDDEN', `This key lacks the ${perm} permission`);
}

export function inApplicationScope(p: Principal, project: string): boolean {
  return inScope(p.application, project);
}

export function inEnvironmentScope(p: Principal, stage: string): boolean {
  return inScope(p.environment, stage);
}

export function requireApplication(p: Principal, project: string): void {
  if (!inApplicationScope(p, project)) {
    throw new VexilError('FORBIDDEN', `This key is scoped to application '${p.application}'`);
  }
}

export function requireEnvironment(p: Principal, stage: string): void {
  if (!inEnvironmentScope(p, stage)) {
    throw new VexilError('FORBIDDEN', `This key is scoped to environment '${p.environment}'`);
  }
}

/**
 * Environment scope binds writes (docs/api.md#keys). A key with an environment scope may write
 * configurations of that environment only; flag-level writes (create, update, archive, restore,
 * delete, environments, dependencies) and segment writes need a key without environment scope.
 * `what` names what was refused: 'flags' or 'segments'.
 */
export function requireFlagLevelWriter(p: Principal, what = 'flags'): void {
  if (p.environment !== null) {
    throw new VexilError(
      'FORBIDDEN',
      `This key is scoped to environment '${p.environment}': it may write configurations of that environment only, not ${what}`,
    );
  }
}

/** Organization-level settings (environments, applications, kill switch) need an unscoped key. */
export function requireUnscoped(p: Principal, what: string): void {
  if (p.application !== null || p.environment !== null) {
    throw new VexilError('FORBIDDEN', `${what} needs a key without application or environment scope`);
  }
}

/** Key management: Admin on an organization-wide key. */
export function requireAdmin(p: Principal): void {
  requirePermission(p, 'Admin');
  requireUnscoped(p, 'Key management');
}

/**
 * Reviewing change requests (CONTRACT 17): CanApprove, and the key's scopes must cover every
 * target (`inApplicationScope` / `inEnvironmentScope` per target, checked by the caller).
 */
export function requireApprover(p: Principal): void {
  requirePermission(p, 'CanApprove');
}

/**
 * Evaluation needs CanEvaluate and an application scope (docs/api.md#evaluation; else
 * `OrgWideEvaluatorError`, domain/errors.ts: FORBIDDEN, which GraphQL answers as AUTH_NOT_AUTHORIZED).
 */
export function requireEvaluator(p: Principal): void {
  requirePermission(p, 'CanEvaluate');
  if (p.application === null) throw new OrgWideEvaluatorError();
}
