/** Permission and scope helpers (docs/api.md, "Keys"): pure checks, FORBIDDEN on failure. */
import t, { type Test } from 'tap';
import {
  has,
  inApplicationScope,
  principalOf,
  requireAdmin,
  requireApprover,
  requireApplication,
  requireEnvironment,
  requireEvaluator,
  requirePermission,
  requireUnscoped,
  type Principal,
} from '../../../src/auth/permissions.js';
import { OrgWideEvaluatorError, VexilError } from '../../../src/domain/errors.js';
import type { ManagementKey, Permission } from '../../../src/domain/types.js';

const key = (permissions: Permission[], application: string | null = null, environment: string | null = null): ManagementKey => ({
  id: 'k', orgId: 'o', name: 'n', permissions, application, environment, disabled: false, createdAt: '2026-01-01T00:00:00.000Z', rotatedAt: null,
});
const p = (...args: Parameters<typeof key>): Principal => principalOf(key(...args));

function forbids(t: Test, fn: () => void, pattern: RegExp, what: string, code = 'FORBIDDEN') {
  try {
    fn();
    t.fail(`${what}: should throw`);
  } catch (err) {
    t.ok(err instanceof VexilError, `${what}: a VexilError`);
    t.match(err, { code, status: 403, message: pattern }, what);
  }
}

t.test('has: CanWrite includes CanRead and nothing else; Admin grants nothing by itself', async (t) => {
  const w = p(['CanWrite']);
  t.ok(has(w, 'CanWrite'));
  t.ok(has(w, 'CanRead'), 'CanWrite includes read');
  t.notOk(has(w, 'CanEvaluate'), 'but not evaluate');
  t.notOk(has(w, 'Admin'));
  const a = p(['Admin']);
  t.ok(has(a, 'Admin'));
  for (const perm of ['CanRead', 'CanWrite', 'CanEvaluate'] as const) t.notOk(has(a, perm), `Admin alone has no ${perm}`);
  const r = p(['CanRead']);
  t.notOk(has(r, 'CanWrite'), 'read does not include write');
  const e = p(['CanEvaluate']);
  t.notOk(has(e, 'CanRead'), 'evaluate does not include read');
  const all = p(['CanEvaluate', 'CanRead', 'CanWrite', 'Admin']);
  for (const perm of ['CanRead', 'CanWrite', 'CanEvaluate', 'Admin'] as const) t.ok(has(all, perm));
});

t.test('requirePermission throws FORBIDDEN naming the permission', async (t) => {
  t.doesNotThrow(() => requirePermission(p(['CanWrite']), 'CanRead'));
  forbids(t, () => requirePermission(p(['CanRead']), 'CanWrite'), /CanWrite/, 'read key writing');
  forbids(t, () => requirePermission(p(['Admin']), 'CanRead'), /CanRead/, 'admin-only key reading');
});

t.test('application and environment scopes compare names case-insensitively', async (t) => {
  const scoped = p(['CanRead'], 'Web', 'Production');
  t.ok(inApplicationScope(scoped, 'web'));
  t.ok(inApplicationScope(scoped, 'WEB'));
  t.notOk(inApplicationScope(scoped, 'api'));
  t.notOk(inApplicationScope(scoped, 'web2'), 'no prefix match');
  t.ok(inApplicationScope(p(['CanRead']), 'anything'), 'no scope: every application');
  t.doesNotThrow(() => requireApplication(scoped, 'wEb'));
  forbids(t, () => requireApplication(scoped, 'api'), /Web/, 'other application');
  t.doesNotThrow(() => requireEnvironment(scoped, 'production'));
  forbids(t, () => requireEnvironment(scoped, 'development'), /Production/, 'other environment');
  t.doesNotThrow(() => requireEnvironment(p(['CanRead'], 'Web'), 'anything'), 'no environment scope: every environment');
});

t.test('requireUnscoped and requireAdmin: key management needs Admin on an org-wide key', async (t) => {
  t.doesNotThrow(() => requireUnscoped(p(['CanWrite']), 'x'));
  forbids(t, () => requireUnscoped(p(['CanWrite'], 'web'), 'Kill switch'), /Kill switch/, 'application-scoped');
  forbids(t, () => requireUnscoped(p(['CanWrite'], null, 'production'), 'x'), /scope/, 'environment-scoped');
  t.doesNotThrow(() => requireAdmin(p(['Admin'])));
  t.doesNotThrow(() => requireAdmin(p(['Admin', 'CanRead', 'CanWrite'])));
  forbids(t, () => requireAdmin(p(['CanRead', 'CanWrite', 'CanEvaluate'])), /Admin/, 'no Admin');
  forbids(t, () => requireAdmin(p(['Admin'], 'web')), /scope/, 'Admin with an application scope');
  forbids(t, () => requireAdmin(p(['Admin'], null, 'production')), /scope/, 'Admin with an environment scope');
});

t.test('requireEvaluator: CanEvaluate and an application scope', async (t) => {
  t.doesNotThrow(() => requireEvaluator(p(['CanEvaluate'], 'web')));
  t.doesNotThrow(() => requireEvaluator(p(['CanEvaluate'], 'web', 'production')));
  forbids(t, () => requireEvaluator(p(['CanRead', 'CanWrite'], 'web')), /CanEvaluate/, 'no CanEvaluate');
  forbids(t, () => requireEvaluator(p(['CanEvaluate'])), /organization-wide/, 'org-wide key');
  // GraphQL answers this one as AUTH_NOT_AUTHORIZED (test/node/graphql/fields.test.ts); a missing permission stays FORBIDDEN there.
  const thrown = (fn: () => void): unknown => {
    try {
      fn();
    } catch (err) {
      return err;
    }
    return undefined;
  };
  t.ok(thrown(() => requireEvaluator(p(['CanEvaluate']))) instanceof OrgWideEvaluatorError, 'org-wide key: the error GraphQL maps');
  t.notOk(thrown(() => requireEvaluator(p(['CanRead']))) instanceof OrgWideEvaluatorError, 'a missing permission is not the org-wide error');
});

t.test('principalOf is built once per cached key record', async (t) => {
  const k = key(['CanRead', 'CanRead'], 'web');
  const a = principalOf(k);
  t.equal(principalOf(k), a, 'same object for the same record');
  t.match(a, { keyId: 'k', orgId: 'o', application: 'web', environment: null });
  t.equal(a.permissions.size, 1, 'a set of permissions');
  t.not(principalOf({ ...k }), a, 'a new record (after invalidation) gets a new principal');
});

t.test('CanApprove implies nothing else, and nothing else implies it (docs/change-requests.md)', async (t) => {
  const approver = p(['CanApprove']);
  for (const perm of ['CanEvaluate', 'CanRead', 'CanWrite', 'Admin'] as const) t.notOk(has(approver, perm), `CanApprove does not give ${perm}`);
  t.ok(has(approver, 'CanApprove'));
  requireApprover(approver);
  forbids(t, () => requirePermission(approver, 'CanRead'), /CanRead/, 'no read');
  forbids(t, () => requireAdmin(approver), /Admin/, 'no key management');
  for (const perms of [['CanRead', 'CanWrite', 'Admin'], ['CanEvaluate'], ['CanWrite']] as Permission[][]) {
    forbids(t, () => requireApprover(p(perms)), /CanApprove/, `${perms.join('+')} cannot approve`);
  }
});
