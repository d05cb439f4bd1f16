/**
 * Tenancy limits and write scopes (docs/limits.md, "Tenancy limits") over real HTTP, REST and GraphQL:
 * - count limits (flags, keys, configurations): at the limit a write succeeds, one over is 409
 *   QUOTA_EXCEEDED naming the setting and its value;
 * - size limits (variants, rules, conditions, value bytes): one over is 400 BAD_REQUEST naming it;
 * - a key with an environment scope writes configurations of that environment only;
 * - a dependency's parent must be a flag the writing key can read;
 * - the organization keeps an enabled Admin key; the operator API issues a new one.
 * Every refused write is checked to change nothing: the organization's rows (flags,
 * configurations, keys, audit events, version) read back the same.
 */
import t from 'tap';
import {
  boolVariants,
  createOrganization,
  expectProblem,
  HEX64,
  operatorRequest,
  OPERATOR_TOKEN,
  startTestNode,
  type TestNode,
} from '../../helpers/node.js';
import { gql, type GqlBody } from '../../helpers/graphql.js';
import type { Res } from '../../helpers/node.js';

t.setTimeout(300_000);

const LIMITS = {
  VEXIL_MAX_FLAGS_PER_ORG: '3',
  VEXIL_MAX_KEYS_PER_ORG: '4',
  VEXIL_MAX_CONFIGS_PER_FLAG: '2',
  VEXIL_MAX_RULES_PER_CONFIG: '2',
  VEXIL_MAX_CONDITIONS_PER_RULE: '2',
  VEXIL_MAX_VARIANTS_PER_FLAG: '3',
  VEXIL_MAX_VALUE_BYTES: '64',
  VEXIL_MAX_SEGMENTS_PER_ORG: '2',
  VEXIL_MAX_SEGMENT_VALUES: '5',
};
const env = { VEXIL_OPERATOR_TOKEN: OPERATOR_TOKEN, VEXIL_RATE_LIMIT_MGMT: '100000', VEXIL_RATE_LIMIT_EVAL: '100000', ...LIMITS };

let node: TestNode;
let orgCount = 0;

t.before(async () => {
  node = await startTestNode(null, { env });
});
t.teardown(() => node.close());

/** A fresh organization (environments development, production; applications web, api). */
async function org(): Promise<TestNode & { name: string }> {
  const name = `org${++orgCount}`;
  const o = await createOrganization(node, name, { environments: ['development', 'production'], applications: ['web', 'api'] });
  return { ...o, name };
}

/** Everything an organization holds, for read-back after a refused write. */
async function state(name: string): Promise<unknown> {
  const db = node.node.db;
  const [o] = await db.query<{ id: string; version: number }>('select id, version from organizations where name = $1', [name]);
  const q = (sql: string) => db.query(sql, [o.id]);
  return {
    version: Number(o.version),
    flags: await q('select name, project, type, variants, environments, dependencies, is_archived, description from flags where org_id = $1 order by name'),
    configs: await q('select flag_name, stage, client_id, enabled, rules from flag_configs where org_id = $1 order by flag_name, stage, client_id'),
    keys: await q('select id, disabled, permissions from management_keys where org_id = $1 order by id'),
    segments: await q('select name, application, description, conditions from segments where org_id = $1 order by name'),
    audit: (await q('select count(*)::int as n from audit_events where org_id = $1'))[0],
  };
}

/** Runs a refused write and asserts the organization reads back unchanged (no audit event either). */
async function unchanged<T>(tt: Test, name: string, write: () => Promise<T>): Promise<T> {
  const before = await state(name);
  const r = await write();
  tt.same(await state(name), before, 'nothing changed, no audit event recorded');
  return r;
}
type Test = typeof t;

const flagBody = (name: string, extra: Record<string, unknown> = {}) => ({ name, project: 'web', type: 'boolean', variants: boolVariants, ...extra });

/** One GraphQL field error with `code` and `status`, its message matching `message`. */
function gqlError(tt: Test, r: Res<GqlBody>, code: string, status: number, message: RegExp, what: string): void {
  tt.equal(r.status, 200, `${what}: HTTP 200`);
  const e = r.body.errors?.[0];
  tt.equal(r.body.errors?.length, 1, `${what}: one error`);
  tt.equal(e?.extensions.code, code, `${what}: extensions.code ${code}`);
  tt.equal(e?.extensions.status, status, `${what}: extensions.status ${status}`);
  tt.match(e?.message, message, `${what}: message names the limit`);
}

const CREATE_FLAG = 'mutation($i: CreateFlagInput!) { createFlag(input: $i) { name } }';
const UPSERT = 'mutation($n: String!, $i: UpsertFlagConfigInput!) { upsertFlagConfig(name: $n, input: $i) { stage clientId } }';
const CREATE_KEY = 'mutation($i: CreateManagementKeyInput!) { createManagementKey(input: $i) { id key } }';

t.test('config: tenancy limits have their documented defaults and are validated', async (tt) => {
  const { loadConfig, ConfigError } = await import('../../../src/config.js');
  tt.same(loadConfig({}).tenancyLimits, {
    maxFlagsPerOrg: 200000,
    maxKeysPerOrg: 1000,
    maxConfigsPerFlag: 100,
    maxRulesPerConfig: 200,
    maxConditionsPerRule: 50,
    maxVariantsPerFlag: 100,
    maxValueBytes: 32768,
    maxSegmentsPerOrg: 1000,
    maxSegmentValues: 20000,
    maxPendingSchedulesPerFlag: 100,
    maxPendingSchedulesPerOrg: 10000,
  });
  tt.equal(loadConfig({ VEXIL_MAX_FLAGS_PER_ORG: '3' }).tenancyLimits.maxFlagsPerOrg, 3);
  for (const k of Object.keys(LIMITS)) {
    tt.throws(() => loadConfig({ [k]: '0' }), new RegExp(`Invalid setting ${k}`), `${k}=0 refused`);
    tt.ok((() => { try { loadConfig({ [k]: '0' }); } catch (e) { return e instanceof ConfigError; } return false; })(), `${k}=0: a ConfigError`);
    tt.throws(() => loadConfig({ [k]: 'lots' }), new RegExp(k), `${k}=lots refused, naming the setting`);
  }
});

t.test('flags per organization (VEXIL_MAX_FLAGS_PER_ORG=3): REST and GraphQL', async (tt) => {
  const o = await org();
  for (const name of ['f1', 'f2']) tt.equal((await o.req('POST', '/api/flags', { key: o.adminKey, body: flagBody(name) })).status, 201);
  // The third reaches the limit: allowed (GraphQL).
  const third = await gql(o, o.adminKey, CREATE_FLAG, { i: flagBody('f3') });
  tt.same(third.body, { data: { createFlag: { name: 'f3' } } }, 'at the limit: created');
  const rest = await unchanged(tt, o.name, () => o.req('POST', '/api/flags', { key: o.adminKey, body: flagBody('f4') }));
  expectProblem(tt, rest, 409, 'QUOTA_EXCEEDED', /VEXIL_MAX_FLAGS_PER_ORG=3/);
  const g = await unchanged(tt, o.name, () => gql(o, o.adminKey, CREATE_FLAG, { i: flagBody('f4') }));
  gqlError(tt, g, 'QUOTA_EXCEEDED', 409, /VEXIL_MAX_FLAGS_PER_ORG=3/, 'GraphQL createFlag');
  tt.equal((await o.req('GET', '/api/flags/f4', { key: o.adminKey })).status, 404, 'f4 does not exist');
  // Archived flags count; deleting one makes room.
  tt.equal((await o.req('PUT', '/api/flags/f1', { key: o.adminKey, body: { isArchived: true } })).status, 200);
  expectProblem(tt, await o.req('POST', '/api/flags', { key: o.adminKey, body: flagBody('f4') }), 409, 'QUOTA_EXCEEDED', 'archived flags count');
  tt.equal((await o.req('DELETE', '/api/flags/f1', { key: o.adminKey })).status, 204);
  tt.equal((await o.req('POST', '/api/flags', { key: o.adminKey, body: flagBody('f4') })).status, 201, 'room again after a delete');
  // Another organization has its own count.
  const other = await org();
  tt.equal((await other.req('POST', '/api/flags', { key: other.adminKey, body: flagBody('f1') })).status, 201, 'limits are per organization');
});

t.test('keys per organization (VEXIL_MAX_KEYS_PER_ORG=4, disabled keys count): REST, GraphQL, operator', async (tt) => {
  const o = await org(); // 1 key: its admin key
  const k2 = await o.req('POST', '/api/keys', { key: o.adminKey, body: { name: 'k2', permissions: ['CanRead'] } });
  tt.equal(k2.status, 201);
  tt.equal((await o.req('POST', `/api/keys/${k2.body.id}/disable`, { key: o.adminKey })).status, 200);
  tt.equal((await o.req('POST', '/api/keys', { key: o.adminKey, body: { name: 'k3', permissions: ['CanRead'] } })).status, 201);
  const g4 = await gql(o, o.adminKey, CREATE_KEY, { i: { name: 'k4', permissions: ['CanRead'] } });
  tt.match(g4.body.data?.createManagementKey, { id: String, key: HEX64 }, 'the fourth key (at the limit) is created');
  const rest = await unchanged(tt, o.name, () => o.req('POST', '/api/keys', { key: o.adminKey, body: { name: 'k5', permissions: ['CanRead'] } }));
  expectProblem(tt, rest, 409, 'QUOTA_EXCEEDED', /VEXIL_MAX_KEYS_PER_ORG=4/);
  tt.notOk(rest.text.match(/[0-9a-f]{64}/), 'no key value in the refusal');
  const g = await unchanged(tt, o.name, () => gql(o, o.adminKey, CREATE_KEY, { i: { name: 'k5', permissions: ['CanRead'] } }));
  gqlError(tt, g, 'QUOTA_EXCEEDED', 409, /VEXIL_MAX_KEYS_PER_ORG=4/, 'GraphQL createManagementKey');
  const op = await unchanged(tt, o.name, () => operatorRequest(o, 'POST', `/organizations/${o.name}/admin-keys`));
  expectProblem(tt, op, 409, 'QUOTA_EXCEEDED', /VEXIL_MAX_KEYS_PER_ORG=4/);
  // Deleting one (here the disabled one) makes room.
  tt.equal((await o.req('DELETE', `/api/keys/${k2.body.id}`, { key: o.adminKey })).status, 204);
  tt.equal((await o.req('POST', '/api/keys', { key: o.adminKey, body: { name: 'k5', permissions: ['CanRead'] } })).status, 201);
});

t.test('configurations per flag (VEXIL_MAX_CONFIGS_PER_FLAG=2, clientId ones included)', async (tt) => {
  const o = await org();
  tt.equal((await o.req('POST', '/api/flags', { key: o.adminKey, body: flagBody('f') })).status, 201);
  const cfg = (extra: Record<string, unknown>) => ({ stage: 'production', enabled: true, defaultVariantKey: 'off', rolloutPercentage: 100, ...extra });
  tt.equal((await o.req('POST', '/api/flags/f/configs', { key: o.adminKey, body: cfg({}) })).status, 200);
  const second = await gql(o, o.adminKey, UPSERT, { n: 'f', i: cfg({ clientId: 'web-ios' }) });
  tt.same(second.body, { data: { upsertFlagConfig: { stage: 'production', clientId: 'web-ios' } } }, 'the second (a clientId one) reaches the limit');
  const rest = await unchanged(tt, o.name, () => o.req('POST', '/api/flags/f/configs', { key: o.adminKey, body: cfg({ stage: 'development' }) }));
  expectProblem(tt, rest, 409, 'QUOTA_EXCEEDED', /VEXIL_MAX_CONFIGS_PER_FLAG=2/);
  const g = await unchanged(tt, o.name, () => gql(o, o.adminKey, UPSERT, { n: 'f', i: cfg({ clientId: 'web-android' }) }));
  gqlError(tt, g, 'QUOTA_EXCEEDED', 409, /VEXIL_MAX_CONFIGS_PER_FLAG=2/, 'GraphQL upsertFlagConfig');
  // Replacing an existing configuration is no new one.
  const replace = await o.req('POST', '/api/flags/f/configs', { key: o.adminKey, body: cfg({ enabled: false }) });
  tt.equal(replace.status, 200, 'replacing an existing configuration at the limit is allowed');
  tt.equal(replace.body.enabled, false);
});

t.test('size limits: variants, rules, conditions, value bytes are 400 naming the limit', async (tt) => {
  const o = await org();
  const v = (n: number) => Array.from({ length: n }, (_, i) => ({ key: `v${i}`, value: `s${i}`, valueType: 'string' }));
  const strFlag = (name: string, variants: unknown[]) => ({ name, project: 'web', type: 'string', variants });
  // Variants: 3 allowed, 4 refused (create and update, REST and GraphQL).
  tt.equal((await o.req('POST', '/api/flags', { key: o.adminKey, body: strFlag('s', v(3)) })).status, 201, '3 variants: at the limit');
  expectProblem(tt, await unchanged(tt, o.name, () => o.req('POST', '/api/flags', { key: o.adminKey, body: strFlag('s4', v(4)) })), 400, 'BAD_REQUEST', /VEXIL_MAX_VARIANTS_PER_FLAG=3/);
  expectProblem(tt, await unchanged(tt, o.name, () => o.req('PUT', '/api/flags/s', { key: o.adminKey, body: { variants: v(4) } })), 400, 'BAD_REQUEST', /VEXIL_MAX_VARIANTS_PER_FLAG=3/);
  gqlError(tt, await unchanged(tt, o.name, () => gql(o, o.adminKey, CREATE_FLAG, { i: strFlag('s4', v(4)) })), 'BAD_REQUEST', 400, /VEXIL_MAX_VARIANTS_PER_FLAG=3/, 'GraphQL createFlag variants');
  gqlError(
    tt,
    await unchanged(tt, o.name, () => gql(o, o.adminKey, 'mutation($i: UpdateFlagInput!) { updateFlag(name: "s", input: $i) { name } }', { i: { variants: v(4) } })),
    'BAD_REQUEST', 400, /VEXIL_MAX_VARIANTS_PER_FLAG=3/, 'GraphQL updateFlag variants',
  );
  // Value bytes: 64 bytes of JSON allowed ("..." with 62 characters), 65 refused; multi-byte characters count as UTF-8.
  const at = 'x'.repeat(62);
  tt.equal((await o.req('POST', '/api/flags', { key: o.adminKey, body: strFlag('b', [{ key: 'a', value: at, valueType: 'string' }]) })).status, 201, '64-byte value: at the limit');
  expectProblem(tt, await unchanged(tt, o.name, () => o.req('POST', '/api/flags', { key: o.adminKey, body: strFlag('b2', [{ key: 'a', value: at + 'x', valueType: 'string' }]) })), 400, 'BAD_REQUEST', /VEXIL_MAX_VALUE_BYTES=64/);
  expectProblem(tt, await unchanged(tt, o.name, () => o.req('POST', '/api/flags', { key: o.adminKey, body: strFlag('b2', [{ key: 'a', value: 'é'.repeat(32), valueType: 'string' }]) })), 400, 'BAD_REQUEST', /VEXIL_MAX_VALUE_BYTES=64/);
  const jsonFlag = { name: 'j', project: 'web', type: 'json', variants: [{ key: 'a', value: { list: Array.from({ length: 30 }, (_, i) => i) }, valueType: 'json' }] };
  gqlError(tt, await unchanged(tt, o.name, () => gql(o, o.adminKey, CREATE_FLAG, { i: jsonFlag })), 'BAD_REQUEST', 400, /VEXIL_MAX_VALUE_BYTES=64/, 'GraphQL json variant value');

  // Rules and conditions of a configuration.
  tt.equal((await o.req('POST', '/api/flags', { key: o.adminKey, body: flagBody('f') })).status, 201);
  const cond = (value: unknown = 'a') => ({ field: 'country', operator: '==', value });
  const rule = (conditions: unknown[]) => ({ priority: 1, conditions, allocations: [{ variantKey: 'on', percentage: 100 }] });
  const cfg = (rules: unknown[]) => ({ stage: 'production', enabled: true, defaultVariantKey: 'off', rolloutPercentage: 100, rules });
  const ok = await o.req('POST', '/api/flags/f/configs', { key: o.adminKey, body: cfg([rule([cond(), cond()]), rule([cond('y'.repeat(62))])]) });
  tt.equal(ok.status, 200, '2 rules, 2 conditions, a 64-byte condition value: at the limits');
  const cases: [string, unknown[], RegExp][] = [
    ['3 rules', [rule([]), rule([]), rule([])], /VEXIL_MAX_RULES_PER_CONFIG=2/],
    ['3 conditions', [rule([cond(), cond(), cond()])], /VEXIL_MAX_CONDITIONS_PER_RULE=2/],
    ['a 65-byte condition value', [rule([cond('y'.repeat(63))])], /VEXIL_MAX_VALUE_BYTES=64/],
    ['a condition list value over 64 bytes', [rule([{ field: 'country', operator: 'in', value: Array.from({ length: 20 }, (_, i) => `c${i}`) }])], /VEXIL_MAX_VALUE_BYTES=64/],
  ];
  for (const [what, rules, re] of cases) {
    expectProblem(tt, await unchanged(tt, o.name, () => o.req('POST', '/api/flags/f/configs', { key: o.adminKey, body: cfg(rules) })), 400, 'BAD_REQUEST', re);
    gqlError(tt, await unchanged(tt, o.name, () => gql(o, o.adminKey, UPSERT, { n: 'f', i: cfg(rules) })), 'BAD_REQUEST', 400, re, `GraphQL ${what}`);
  }
});

t.test('segments (VEXIL_MAX_SEGMENTS_PER_ORG=2, VEXIL_MAX_SEGMENT_VALUES=5): REST and GraphQL', async (tt) => {
  const o = await org();
  const CREATE_SEGMENT = 'mutation($i: CreateSegmentInput!) { createSegment(input: $i) { name } }';
  tt.equal((await o.req('POST', '/api/segments', { key: o.adminKey, body: { name: 's1' } })).status, 201);
  tt.same((await gql(o, o.adminKey, CREATE_SEGMENT, { i: { name: 's2' } })).body, { data: { createSegment: { name: 's2' } } }, 'at the limit: created');
  const rest = await unchanged(tt, o.name, () => o.req('POST', '/api/segments', { key: o.adminKey, body: { name: 's3' } }));
  expectProblem(tt, rest, 409, 'QUOTA_EXCEEDED', /VEXIL_MAX_SEGMENTS_PER_ORG=2/);
  const g = await unchanged(tt, o.name, () => gql(o, o.adminKey, CREATE_SEGMENT, { i: { name: 's3' } }));
  gqlError(tt, g, 'QUOTA_EXCEEDED', 409, /VEXIL_MAX_SEGMENTS_PER_ORG=2/, 'GraphQL createSegment over the limit');
  // Values of one in / not_in list: five allowed, six refused (400) over both.
  const list = (k: number) => ({ conditions: [{ field: 'userId', operator: 'in', value: Array.from({ length: k }, (_, i) => `u${i}`) }] });
  tt.equal((await o.req('PUT', '/api/segments/s1', { key: o.adminKey, body: list(5) })).status, 200, 'five values: allowed');
  expectProblem(tt, await unchanged(tt, o.name, () => o.req('PUT', '/api/segments/s1', { key: o.adminKey, body: list(6) })), 400, 'BAD_REQUEST', /VEXIL_MAX_SEGMENT_VALUES=5/);
  const gv = await unchanged(tt, o.name, () => gql(o, o.adminKey, 'mutation($i: UpdateSegmentInput!) { updateSegment(name: "s2", input: $i) { name } }', { i: list(6) }));
  gqlError(tt, gv, 'BAD_REQUEST', 400, /VEXIL_MAX_SEGMENT_VALUES=5/, 'GraphQL updateSegment over the list limit');
  // Conditions of one segment: VEXIL_MAX_CONDITIONS_PER_RULE=2; each value within VEXIL_MAX_VALUE_BYTES=64.
  const cond = { field: 'plan', operator: '==', value: 'x' };
  expectProblem(tt, await unchanged(tt, o.name, () => o.req('PUT', '/api/segments/s1', { key: o.adminKey, body: { conditions: [cond, cond, cond] } })), 400, 'BAD_REQUEST', /VEXIL_MAX_CONDITIONS_PER_RULE=2/);
  expectProblem(tt, await unchanged(tt, o.name, () => o.req('PUT', '/api/segments/s1', { key: o.adminKey, body: { conditions: [{ ...cond, value: 'v'.repeat(100) }] } })), 400, 'BAD_REQUEST', /VEXIL_MAX_VALUE_BYTES=64/);
  // A rule's segments count like its conditions.
  tt.equal((await o.req('POST', '/api/flags', { key: o.adminKey, body: flagBody('segflag') })).status, 201);
  const rule = { priority: 1, conditions: [], segments: ['s1', 's2', 's3'], allocations: [{ variantKey: 'on', percentage: 100 }] };
  const three = await unchanged(tt, o.name, () => o.req('POST', '/api/flags/segflag/configs', { key: o.adminKey, body: { stage: 'production', enabled: true, defaultVariantKey: 'off', rolloutPercentage: 100, rules: [rule] } }));
  expectProblem(tt, three, 400, 'BAD_REQUEST', /rules\[0\]\.segments \(3\).*VEXIL_MAX_CONDITIONS_PER_RULE=2/);
});

t.test('environment scope binds writes: configurations of its environment only, no flag-level write', async (tt) => {
  const o = await org();
  tt.equal((await o.req('POST', '/api/flags', { key: o.adminKey, body: flagBody('f') })).status, 201);
  tt.equal((await o.req('POST', '/api/flags', { key: o.adminKey, body: flagBody('parent') })).status, 201);
  const mk = async (body: Record<string, unknown>) => {
    const r = await o.req('POST', '/api/keys', { key: o.adminKey, body: { name: 'scoped', permissions: ['CanWrite'], ...body } });
    tt.equal(r.status, 201);
    return r.body.key as string;
  };
  const dev = await mk({ environment: 'development' });
  const devWeb = await mk({ environment: 'development', application: 'web' });
  const cfg = (stage: string, extra: Record<string, unknown> = {}) => ({ stage, enabled: true, defaultVariantKey: 'off', rolloutPercentage: 100, ...extra });
  for (const key of [dev, devWeb]) {
    // Its own environment's configurations: upsert, disable, enable, delete.
    tt.equal((await o.req('POST', '/api/flags/f/configs', { key, body: cfg('development') })).status, 200, 'upsert in its environment');
    const off = await gql(o, key, 'mutation { setFlagConfigEnabled(name: "f", stage: "development", enabled: false) { enabled } }');
    tt.same(off.body, { data: { setFlagConfigEnabled: { enabled: false } } }, 'disable in its environment');
    const on = await gql(o, key, 'mutation { setFlagConfigEnabled(name: "f", stage: "development", enabled: true) { enabled } }');
    tt.same(on.body, { data: { setFlagConfigEnabled: { enabled: true } } }, 'enable in its environment');
    const del = await gql(o, key, 'mutation { deleteFlagConfig(name: "f", stage: "development") }');
    tt.same(del.body, { data: { deleteFlagConfig: true } }, 'delete in its environment');
    // Another environment's configuration: 403.
    expectProblem(tt, await unchanged(tt, o.name, () => o.req('POST', '/api/flags/f/configs', { key, body: cfg('production') })), 403, 'FORBIDDEN', /development/);

    // Every flag-level write: 403, nothing changes (REST).
    const restWrites: [string, () => Promise<Res>][] = [
      ['create', () => o.req('POST', '/api/flags', { key, body: flagBody('new') })],
      ['update', () => o.req('PUT', '/api/flags/f', { key, body: { description: 'x' } })],
      ['archive', () => o.req('PUT', '/api/flags/f', { key, body: { isArchived: true } })],
      ['dependencies', () => o.req('PUT', '/api/flags/f', { key, body: { dependencies: [{ flag: 'parent' }] } })],
      ['delete', () => o.req('DELETE', '/api/flags/f', { key })],
      ['delete (unknown flag)', () => o.req('DELETE', '/api/flags/ghost', { key })],
    ];
    for (const [what, write] of restWrites) {
      expectProblem(tt, await unchanged(tt, o.name, write), 403, 'FORBIDDEN', `REST ${what}`);
    }
    // GraphQL.
    const gqlWrites: [string, string, string][] = [
      ['create', `mutation { createFlag(input: {name: "new", project: "web", type: "boolean", variants: [{key: "on", value: true, valueType: "boolean"}]}) { name } }`, 'createFlag'],
      ['update', 'mutation { updateFlag(name: "f", input: {description: "x"}) { name } }', 'updateFlag'],
      ['dependencies', 'mutation { updateFlag(name: "f", input: {dependencies: [{flag: "parent"}]}) { name } }', 'updateFlag'],
      ['archive', 'mutation { archiveFlag(name: "f") { name } }', 'archiveFlag'],
      ['restore', 'mutation { restoreFlag(name: "f") { name } }', 'restoreFlag'],
      ['delete', 'mutation { deleteFlag(name: "f") }', 'deleteFlag'],
      ['environments', 'mutation { updateFlagEnvironments(name: "f", environments: ["development"]) { name } }', 'updateFlagEnvironments'],
    ];
    for (const [what, q, field] of gqlWrites) {
      const r = await unchanged(tt, o.name, () => gql(o, key, q));
      tt.equal(r.body.errors?.[0]?.extensions.code, 'FORBIDDEN', `GraphQL ${what}: FORBIDDEN`);
      tt.equal(r.body.errors?.[0]?.extensions.status, 403, `GraphQL ${what}: 403`);
      tt.equal(r.body.data?.[field], null, `GraphQL ${what}: null`);
    }
  }
  // Reads still work for it.
  tt.equal((await o.req('GET', '/api/flags/f', { key: dev })).status, 200, 'an environment-scoped key still reads flags');
});

t.test('a dependency parent must be a flag the writing key can read (403 telling nothing about it)', async (tt) => {
  const o = await org();
  tt.equal((await o.req('POST', '/api/flags', { key: o.adminKey, body: { ...flagBody('api-parent'), project: 'api' } })).status, 201);
  tt.equal((await o.req('POST', '/api/flags', { key: o.adminKey, body: flagBody('web-parent') })).status, 201);
  tt.equal((await o.req('POST', '/api/flags', { key: o.adminKey, body: flagBody('child') })).status, 201);
  const r = await o.req('POST', '/api/keys', { key: o.adminKey, body: { name: 'web writer', permissions: ['CanWrite'], application: 'web' } });
  const web = r.body.key as string;
  const detail = (res: Res) => String(res.body?.detail).replace(/'(api-parent|ghost)'/, "'X'");
  // Create with a dependency on another application's flag, and on a flag that does not exist: the same 403.
  const other = await unchanged(tt, o.name, () => o.req('POST', '/api/flags', { key: web, body: flagBody('c2', { dependencies: [{ flag: 'api-parent' }] }) }));
  const ghost = await unchanged(tt, o.name, () => o.req('POST', '/api/flags', { key: web, body: flagBody('c2', { dependencies: [{ flag: 'ghost' }] }) }));
  expectProblem(tt, other, 403, 'FORBIDDEN', 'another application\'s parent');
  expectProblem(tt, ghost, 403, 'FORBIDDEN', 'a missing parent');
  tt.equal(detail(other), detail(ghost), 'the same answer whether the parent exists or not');
  // With variants too: nothing about the parent's variants leaks.
  const withVariants = await unchanged(tt, o.name, () => o.req('PUT', '/api/flags/child', { key: web, body: { dependencies: [{ flag: 'api-parent', variants: ['nope'] }] } }));
  expectProblem(tt, withVariants, 403, 'FORBIDDEN', 'update naming a variant the parent lacks');
  // GraphQL update.
  for (const parent of ['api-parent', 'ghost']) {
    const g = await unchanged(tt, o.name, () => gql(o, web, `mutation { updateFlag(name: "child", input: {dependencies: [{flag: "${parent}"}]}) { name } }`));
    tt.equal(g.body.errors?.[0]?.extensions.code, 'FORBIDDEN', `GraphQL parent ${parent}: FORBIDDEN`);
    tt.equal(g.body.data?.updateFlag, null);
  }
  // A parent in its own application is fine.
  const ok = await o.req('PUT', '/api/flags/child', { key: web, body: { dependencies: [{ flag: 'web-parent' }] } });
  tt.equal(ok.status, 200, 'a readable parent is accepted');
  tt.same(ok.body.dependencies, [{ flag: 'web-parent', variants: null }]);
  // An organization-wide key may depend on any flag.
  tt.equal((await o.req('PUT', '/api/flags/child', { key: o.adminKey, body: { dependencies: [{ flag: 'api-parent' }] } })).status, 200);
});

t.test('the organization keeps an enabled Admin key: the last one cannot be disabled or deleted', async (tt) => {
  const o = await org();
  const keys = await o.req('GET', '/api/keys', { key: o.adminKey });
  const adminId = keys.body[0].id as string;
  // An Admin key with a second, non-Admin key: still the last Admin.
  const reader = await o.req('POST', '/api/keys', { key: o.adminKey, body: { name: 'reader', permissions: ['CanRead', 'CanWrite'] } });
  tt.equal(reader.status, 201);
  expectProblem(tt, await unchanged(tt, o.name, () => o.req('POST', `/api/keys/${adminId}/disable`, { key: o.adminKey })), 409, 'CONFLICT', /last enabled Admin key/);
  expectProblem(tt, await unchanged(tt, o.name, () => o.req('DELETE', `/api/keys/${adminId}`, { key: o.adminKey })), 409, 'CONFLICT', /last enabled Admin key/);
  const gd = await unchanged(tt, o.name, () => gql(o, o.adminKey, `mutation { disableManagementKey(id: "${adminId}") { id } }`));
  tt.equal(gd.body.errors?.[0]?.extensions.code, 'CONFLICT', 'GraphQL disable: CONFLICT');
  tt.equal(gd.body.errors?.[0]?.extensions.status, 409);
  const gx = await unchanged(tt, o.name, () => gql(o, o.adminKey, `mutation { deleteManagementKey(id: "${adminId}") }`));
  tt.equal(gx.body.errors?.[0]?.extensions.code, 'CONFLICT', 'GraphQL delete: CONFLICT');
  tt.equal((await o.req('GET', '/api/keys', { key: o.adminKey })).status, 200, 'the admin key still works');
  // Non-Admin keys can go.
  tt.equal((await o.req('POST', `/api/keys/${reader.body.id}/disable`, { key: o.adminKey })).status, 200);
  // With two enabled Admin keys, one can go; then the other is the last.
  const second = await o.req('POST', '/api/keys', { key: o.adminKey, body: { name: 'admin2', permissions: ['Admin'] } });
  tt.equal(second.status, 201);
  tt.equal((await o.req('POST', `/api/keys/${adminId}/disable`, { key: second.body.key })).status, 200, 'with two, one can be disabled');
  expectProblem(tt, await o.req('DELETE', `/api/keys/${second.body.id}`, { key: second.body.key }), 409, 'CONFLICT', 'now the second is the last');
  // A disabled Admin key does not count: re-enabling is not possible, but deleting it is.
  tt.equal((await o.req('DELETE', `/api/keys/${adminId}`, { key: second.body.key })).status, 204, 'a disabled Admin key can be deleted');
  const third = await o.req('POST', '/api/keys', { key: second.body.key, body: { name: 'admin3', permissions: ['Admin', 'CanRead'] } });
  tt.equal((await o.req('DELETE', `/api/keys/${second.body.id}`, { key: third.body.key })).status, 204, 'with two, one can be deleted');
});

t.test('operator API: POST /api/operator/organizations/{name}/admin-keys', async (tt) => {
  const o = await org();
  // Wrong or missing token: 401, before existence; nothing changes.
  for (const token of [null, 'not-the-operator-token-at-all']) {
    expectProblem(tt, await unchanged(tt, o.name, () => operatorRequest(o, 'POST', `/organizations/${o.name}/admin-keys`, undefined, token)), 401, 'UNAUTHENTICATED', `token ${token}`);
    expectProblem(tt, await operatorRequest(o, 'POST', '/organizations/no-such-org/admin-keys', undefined, token), 401, 'UNAUTHENTICATED', `unknown org, token ${token}`);
  }
  expectProblem(tt, await operatorRequest(o, 'POST', '/organizations/no-such-org/admin-keys'), 404, 'NOT_FOUND', 'unknown organization');
  expectProblem(tt, await o.req('POST', `/api/operator/organizations/${o.name}/admin-keys`, { key: o.adminKey }), 401, 'UNAUTHENTICATED', 'an admin key is no operator token');

  const oldId = (await o.req('GET', '/api/keys', { key: o.adminKey })).body[0].id as string;
  const r = await operatorRequest(o, 'POST', `/organizations/${o.name}/admin-keys`);
  tt.equal(r.status, 201);
  tt.same(Object.keys(r.body), ['adminKey']);
  tt.match(r.body.adminKey, HEX64);
  const fresh = r.body.adminKey as string;
  // The new key is an org-wide Admin key of that organization.
  const list = await o.req('GET', '/api/keys', { key: fresh });
  tt.equal(list.status, 200, 'the new key manages keys');
  tt.equal(list.body.length, 2);
  const rec = list.body.find((k: { id: string }) => k.id !== oldId);
  tt.match(rec, { permissions: ['Admin', 'CanRead', 'CanWrite'], application: null, environment: null, disabled: false });
  tt.equal((await o.req('POST', '/api/flags', { key: fresh, body: flagBody('made-by-new-admin') })).status, 201, 'and writes flags');
  // Audited in that organization's log, by the operator, never with the key value.
  const audit = await o.req('GET', '/api/audit?type=key', { key: fresh });
  tt.equal(audit.status, 200);
  const ev = audit.body.find((e: { action: string; after: { id: string } | null }) => e.action === 'key.create' && e.after?.id === rec.id);
  tt.match(ev, { actor: { operator: true }, action: 'key.create', target: { type: 'key', name: rec.id }, before: null, after: { id: rec.id, permissions: ['Admin', 'CanRead', 'CanWrite'] } });
  tt.notOk(audit.text.includes(fresh), 'the key value is not in the audit log');
  // Recovery: with the new key, the old Admin key can be deleted (and not the new one after).
  tt.equal((await o.req('DELETE', `/api/keys/${oldId}`, { key: fresh })).status, 204);
  tt.equal((await o.req('GET', '/api/keys', { key: o.adminKey })).status, 401, 'the old key is gone');
  expectProblem(tt, await o.req('DELETE', `/api/keys/${rec.id}`, { key: fresh }), 409, 'CONFLICT', 'the new key is now the last Admin key');
});
