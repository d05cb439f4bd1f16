/**
 * Shared helpers of the REST flag-management and evaluation suites (test/node/rest/{flags,configs,
 * evaluation,reasons,bad-input,flags-postgres}.test.ts). Everything goes through real HTTP on a
 * real node started by test/helpers/node.ts; the kill switch, which has no REST endpoint, is set
 * through GraphQL.
 */
import tap from 'tap';
import { boolVariants, expectProblem, OPERATOR_TOKEN, startTestNode, type Res, type TestNode, type TestNodeOptions } from './node.js';

export type TapTest = Parameters<Parameters<typeof tap.test>[0]>[0];

export { boolVariants, OPERATOR_TOKEN };

/**
 * One node per top-level test group: operator API on (so a group can create organizations with
 * several applications), management rate limit out of the way (these suites fire hundreds of
 * management requests per second with one key; rate limiting has its own suite).
 */
export function startNode(t: TapTest, opts: TestNodeOptions = {}): Promise<TestNode> {
  return startTestNode(t, {
    ...opts,
    env: { VEXIL_OPERATOR_TOKEN: OPERATOR_TOKEN, VEXIL_RATE_LIMIT_MGMT: '1000000', VEXIL_RATE_LIMIT_EVAL: '1000000', ...opts.env },
  });
}

export interface Org {
  name: string;
  adminKey: string;
}

let orgCounter = 0;

/**
 * A fresh organization through the operator API (docs/api.md, "Operator API"), so that each test gets its own
 * isolated flag namespace and the applications / environments it needs.
 */
export async function createOrg(
  n: TestNode,
  environments: string[] = ['development', 'production'],
  applications: string[] = ['web', 'billing'],
): Promise<Org> {
  const name = `org${process.pid}x${++orgCounter}`;
  const r = await n.req('POST', '/api/operator/organizations', {
    headers: { 'x-operator-token': OPERATOR_TOKEN },
    body: { name, environments, applications },
  });
  if (r.status !== 201) throw new Error(`createOrg failed: ${r.status} ${r.text}`);
  return { name, adminKey: r.body.adminKey as string };
}

/** A Management Key created by `adminKey` (any organization); returns its value. */
export async function makeKey(n: TestNode, adminKey: string, body: Record<string, unknown>): Promise<string> {
  const r = await n.req('POST', '/api/keys', { key: adminKey, body: { name: 'rest-test', ...body } });
  if (r.status !== 201) throw new Error(`makeKey failed: ${r.status} ${r.text}`);
  return r.body.key as string;
}

export const evalKey = (n: TestNode, adminKey: string, application: string, environment: string | null = null) =>
  makeKey(n, adminKey, { permissions: ['CanEvaluate'], application, environment });

/** POST /api/flags with a boolean flag in `project` unless `extra` says otherwise. */
export function postFlag(n: TestNode, key: string, name: string, extra: Record<string, unknown> = {}) {
  return n.req('POST', '/api/flags', { key, body: { name, project: 'web', type: 'boolean', variants: boolVariants, ...extra } });
}

/** POST /api/flags/{name}/configs (production, enabled, default `off`, rollout 100 unless overridden). */
export function postConfig(n: TestNode, key: string, name: string, config: Record<string, unknown> = {}) {
  return n.req('POST', `/api/flags/${encodeURIComponent(name)}/configs`, {
    key,
    body: { stage: 'production', enabled: true, defaultVariantKey: 'off', rolloutPercentage: 100, ...config },
  });
}

export function putFlag(n: TestNode, key: string, name: string, body: unknown) {
  return n.req('PUT', `/api/flags/${encodeURIComponent(name)}`, { key, body });
}

export function getFlag(n: TestNode, key: string, name: string) {
  return n.req('GET', `/api/flags/${encodeURIComponent(name)}`, { key });
}

export function deleteFlag(n: TestNode, key: string, name: string) {
  return n.req('DELETE', `/api/flags/${encodeURIComponent(name)}`, { key });
}

export function evalFlag(n: TestNode, key: string, name: string, body: Record<string, unknown>, explain = false) {
  return n.req('POST', `/flags/${encodeURIComponent(name)}${explain ? '?explain=true' : ''}`, { key, body });
}

/** Asserts a 2xx-or-other status and fails with the body in the message, for setup steps. */
export function must<T extends Res>(t: TapTest, r: T, status: number, what: string): T {
  if (r.status !== status) t.fail(`${what}: expected ${status}, got ${r.status} ${r.text}`);
  return r;
}

/**
 * An RFC 9457 problem (docs/api.md, "Errors"): HTTP status, `application/problem+json`, and the body's
 * `status`, `code`, `type`, `title`, `detail`.
 */
export { expectProblem };

/**
 * Everything the organization's admin can read about its flags: the list and every flag with
 * its configurations. A rejected write must leave this unchanged.
 */
export async function orgState(n: TestNode, adminKey: string): Promise<unknown> {
  const list = await n.req('GET', '/api/flags', { key: adminKey });
  if (list.status !== 200) throw new Error(`list failed: ${list.status} ${list.text}`);
  const flags: unknown[] = [];
  for (const f of list.body as { name: string }[]) {
    const r = await getFlag(n, adminKey, f.name);
    if (r.status !== 200) throw new Error(`get failed: ${r.status} ${r.text}`);
    flags.push(r.body);
  }
  return { list: list.body, flags };
}

/**
 * Runs a write that must be rejected with `status`/`code` and checks that the flag (GET
 * /api/flags/{name}) and the whole organization's flag state read back exactly as before.
 */
export async function expectRejectedUnchanged(
  t: TapTest,
  n: TestNode,
  adminKey: string,
  flagName: string,
  write: () => Promise<Res>,
  status: number,
  code: string,
  detail?: RegExp,
): Promise<void> {
  const beforeFlag = await getFlag(n, adminKey, flagName);
  const before = await orgState(n, adminKey);
  const r = await write();
  expectProblem(t, r, status, code, detail);
  const afterFlag = await getFlag(n, adminKey, flagName);
  t.equal(afterFlag.status, beforeFlag.status, `GET ${flagName} status unchanged`);
  t.same(afterFlag.body, beforeFlag.body, `flag '${flagName}' unchanged after the rejected write`);
  t.same(await orgState(n, adminKey), before, 'organization flag state unchanged');
}

/** Replaces the organization's kill-switch rules through GraphQL `replaceKillSwitch` (no REST endpoint exists). */
export async function setKillSwitch(n: TestNode, adminKey: string, rules: Record<string, string | null>[]): Promise<unknown> {
  const r = await n.req('POST', '/api/graphql', {
    key: adminKey,
    body: {
      query: 'mutation($rules: [KillSwitchRuleInput!]!) { replaceKillSwitch(rules: $rules) { flag application environment } }',
      variables: { rules },
    },
  });
  if (r.status !== 200 || r.body.errors) throw new Error(`replaceKillSwitch failed: ${r.status} ${r.text}`);
  return r.body.data.replaceKillSwitch;
}

export const FLAG_FIELDS = [
  'createdAt',
  'dependencies',
  'description',
  'environments',
  'isArchived',
  'name',
  'project',
  'purpose',
  'tags',
  'type',
  'updatedAt',
  'variants',
];

export const CONFIG_FIELDS = [
  'activeFrom',
  'activeUntil',
  'clientId',
  'defaultVariantKey',
  'enabled',
  'enrollmentCutoff',
  'rolloutPercentage',
  'rules',
  'stage',
];

export const isoDate = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
