/**
 * A write scenario shared by the persistence suites (PGlite on disk, PostgreSQL): flags of every
 * value type, configurations with rules, a client configuration, time windows, a dependency, an
 * archived and a deleted flag, and keys in every state (plain, scoped, rotated, disabled,
 * deleted). `observe` reads everything back over HTTP, including a grid of evaluations, so two
 * observations can be compared whole.
 */
import type { Test } from 'tap';
import { createFlag, evaluate, expectProblem, upsertConfig, type Res, type TestNode } from './node.js';

export interface Scenario {
  adminKey: string;
  evalKey: string;
  evalDevKey: string;
  readKey: string;
  rotatedOld: string;
  rotatedNew: string;
  disabled: string;
  deleted: string;
}

const FLAGS = ['banner', 'checkout', 'child', 'layout', 'limit', 'old', 'windowed'];

function must(r: Res, status: number, what: string): Res {
  if (r.status !== status) throw new Error(`${what}: expected ${status}, got ${r.status} ${r.text}`);
  return r;
}

async function key(n: TestNode, body: Record<string, unknown>): Promise<{ id: string; key: string }> {
  return must(await n.req('POST', '/api/keys', { key: n.adminKey, body: { name: 'k', ...body } }), 201, 'create key').body;
}

export async function writeScenario(n: TestNode): Promise<Scenario> {
  must(await createFlag(n, 'checkout', { description: 'New checkout', tags: ['payments', 'q3'] }), 201, 'checkout');
  must(
    await upsertConfig(n, 'checkout', {
      rules: [
        { id: 'nl', priority: 1, conditions: [{ field: 'country', operator: '==', value: 'NL' }], allocations: [{ variantKey: 'on', percentage: 50 }, { variantKey: 'off', percentage: 50 }] },
        { id: 'beta', priority: 2, conditions: [{ field: 'user.beta', operator: '==', value: true }], allocations: [{ variantKey: 'on', percentage: 100 }] },
      ],
    }),
    200,
    'checkout production',
  );
  must(await upsertConfig(n, 'checkout', { stage: 'development', enabled: false, defaultVariantKey: 'on' }), 200, 'checkout development');

  must(
    await n.req('POST', '/api/flags', {
      key: n.adminKey,
      body: { name: 'banner', project: 'default', type: 'string', variants: [{ key: 'blue', value: 'Blue', valueType: 'string' }, { key: 'green', value: 'Green', valueType: 'string' }] },
    }),
    201,
    'banner',
  );
  must(
    await upsertConfig(n, 'banner', {
      defaultVariantKey: 'blue',
      rolloutPercentage: 60,
      rules: [{ id: 'all', priority: 5, conditions: [], allocations: [{ variantKey: 'blue', percentage: 30 }, { variantKey: 'green', percentage: 70 }] }],
    }),
    200,
    'banner production',
  );

  must(
    await n.req('POST', '/api/flags', {
      key: n.adminKey,
      body: { name: 'limit', project: 'default', type: 'number', environments: ['production'], variants: [{ key: 'low', value: 10, valueType: 'number' }, { key: 'high', value: 1000.5, valueType: 'number' }] },
    }),
    201,
    'limit',
  );
  must(await upsertConfig(n, 'limit', { defaultVariantKey: 'high', enrollmentCutoff: 40, rolloutPercentage: 80 }), 200, 'limit production');

  must(
    await n.req('POST', '/api/flags', {
      key: n.adminKey,
      body: {
        name: 'layout',
        project: 'default',
        type: 'json',
        variants: [{ key: 'grid', value: { columns: 3, dense: true, tags: ['a', null] }, valueType: 'json' }, { key: 'list', value: [1, 'two', { three: 3 }], valueType: 'json' }],
      },
    }),
    201,
    'layout',
  );
  must(await upsertConfig(n, 'layout', { defaultVariantKey: 'grid' }), 200, 'layout production');
  must(await upsertConfig(n, 'layout', { clientId: 'ios', defaultVariantKey: 'list' }), 200, 'layout ios');

  must(await createFlag(n, 'child', { dependencies: [{ flag: 'checkout', variants: ['on'] }] }), 201, 'child');
  must(await upsertConfig(n, 'child', { defaultVariantKey: 'on' }), 200, 'child production');

  must(await createFlag(n, 'windowed'), 201, 'windowed');
  must(await upsertConfig(n, 'windowed', { defaultVariantKey: 'on', activeFrom: '2020-01-01T00:00:00Z', activeUntil: '2999-01-01T00:00:00.000+02:00' }), 200, 'windowed production');

  must(await createFlag(n, 'old'), 201, 'old');
  must(await upsertConfig(n, 'old', { defaultVariantKey: 'on' }), 200, 'old production');
  must(await n.req('PUT', '/api/flags/old', { key: n.adminKey, body: { isArchived: true, description: 'retired' } }), 200, 'archive old');

  must(await createFlag(n, 'gone'), 201, 'gone');
  must(await upsertConfig(n, 'gone', { defaultVariantKey: 'on' }), 200, 'gone production');
  must(await n.req('DELETE', '/api/flags/gone', { key: n.adminKey }), 204, 'delete gone');

  const evalKey = await key(n, { permissions: ['CanEvaluate'], application: 'default' });
  const evalDevKey = await key(n, { permissions: ['CanEvaluate', 'CanRead'], application: 'default', environment: 'development' });
  const readKey = await key(n, { permissions: ['CanRead'] });
  const rotated = await key(n, { permissions: ['CanWrite'], application: 'default' });
  const rotatedNew = must(await n.req('POST', `/api/keys/${rotated.id}/rotate`, { key: n.adminKey }), 200, 'rotate').body.key as string;
  const disabled = await key(n, { permissions: ['CanRead'] });
  must(await n.req('POST', `/api/keys/${disabled.id}/disable`, { key: n.adminKey }), 200, 'disable');
  const deleted = await key(n, { permissions: ['CanRead'] });
  must(await n.req('DELETE', `/api/keys/${deleted.id}`, { key: n.adminKey }), 204, 'delete');

  return {
    adminKey: n.adminKey,
    evalKey: evalKey.key,
    evalDevKey: evalDevKey.key,
    readKey: readKey.key,
    rotatedOld: rotated.key,
    rotatedNew,
    disabled: disabled.key,
    deleted: deleted.key,
  };
}

/** Everything the scenario wrote, as the HTTP surface shows it. */
export async function observe(n: TestNode, s: Scenario) {
  const list = must(await n.req('GET', '/api/flags', { key: s.adminKey }), 200, 'list');
  const flags: Record<string, unknown> = {};
  for (const name of FLAGS) flags[name] = must(await n.req('GET', `/api/flags/${name}`, { key: s.readKey }), 200, name).body;
  const keys = must(await n.req('GET', '/api/keys', { key: s.adminKey }), 200, 'keys').body;
  const evaluations: unknown[] = [];
  for (const name of FLAGS) {
    for (let u = 0; u < 24; u++) {
      const context = { country: u % 3 === 0 ? 'NL' : 'DE', user: { beta: u % 5 === 0 } };
      const body = { userId: `user-${u}`, stage: 'production', context, ...(u % 4 === 0 ? { clientId: 'ios' } : {}) };
      const r = await evaluate(n, s.evalKey, name, body, true);
      evaluations.push({ name, u, status: r.status, body: r.body });
    }
    const dev = await evaluate(n, s.evalDevKey, name, { userId: 'dev-user', stage: 'development' }, true);
    evaluations.push({ name, dev: true, status: dev.status, body: dev.body });
  }
  return { list: list.body, flags, keys, evaluations };
}

/** Keys in each state behave as they did before (to be run on a node that restarted). */
export async function checkKeyStates(t: Test, n: TestNode, s: Scenario): Promise<void> {
  t.equal((await n.req('GET', '/api/keys', { key: s.adminKey })).status, 200, 'admin key works');
  t.equal((await n.req('GET', '/api/flags', { key: s.readKey })).status, 200, 'read key works');
  t.equal((await evaluate(n, s.evalKey, 'checkout', { userId: 'u', stage: 'production' })).status, 200, 'evaluation key works');
  t.equal((await n.req('GET', '/api/flags/checkout', { key: s.rotatedNew })).status, 200, 'rotated key: new value works');
  expectProblem(t, await n.req('GET', '/api/flags/checkout', { key: s.rotatedOld }), 401, 'UNAUTHENTICATED', 'rotated key: old value');
  expectProblem(t, await n.req('GET', '/api/flags', { key: s.disabled }), 401, 'UNAUTHENTICATED', 'disabled key');
  expectProblem(t, await n.req('GET', '/api/flags', { key: s.deleted }), 401, 'UNAUTHENTICATED', 'deleted key');
  expectProblem(t, await n.req('GET', '/api/flags/gone', { key: s.adminKey }), 404, 'NOT_FOUND', 'deleted flag');
}

/** Sanity checks on one observation, so that comparing two is comparing something. */
export function checkObservation(t: Test, o: Awaited<ReturnType<typeof observe>>): void {
  t.same((o.list as { name: string }[]).map((f) => f.name), FLAGS, 'every flag listed, the deleted one absent');
  const flags = o.flags as Record<string, { configs: unknown[]; isArchived: boolean; dependencies: unknown[] }>;
  t.equal(flags.checkout.configs.length, 2, 'checkout has two configurations');
  t.equal(flags.layout.configs.length, 2, 'layout has a client configuration');
  t.equal(flags.old.isArchived, true);
  t.same(flags.child.dependencies, [{ flag: 'checkout', variants: ['on'] }]);
  const codes = new Set((o.evaluations as { body: { reason?: { code: string } } }[]).map((e) => e.body?.reason?.code));
  for (const code of ['rule_matched', 'default', 'archived', 'config_disabled', 'rollout_excluded', 'enrollment_closed', 'disabled_dependency', 'project_or_env_mismatch']) {
    t.ok(codes.has(code), `the evaluation grid reaches ${code}`);
  }
  t.equal((o.keys as unknown[]).length, 6, 'six keys (bootstrap, evaluation, development, read, rotated, disabled)');
}

/** The stored rows of every table, in a stable order. */
export async function dumpTables(n: TestNode) {
  const db = n.node.db;
  return {
    organizations: await db.query('select * from organizations order by id'),
    keys: await db.query('select * from management_keys order by id'),
    flags: await db.query('select * from flags order by org_id, name'),
    configs: await db.query('select * from flag_configs order by org_id, flag_name, stage, client_id'),
  };
}

/**
 * Requests that fail part-way (validation that needs stored state, conflicts, cycles) must leave
 * every table exactly as it was, including the organization's version that each write bumps first.
 */
export async function checkFailedWritesChangeNothing(t: Test, n: TestNode): Promise<void> {
  must(await createFlag(n, 'a'), 201, 'a');
  must(await createFlag(n, 'b', { dependencies: [{ flag: 'a' }] }), 201, 'b');
  must(await upsertConfig(n, 'a', { defaultVariantKey: 'on', rules: [{ id: 'r1', priority: 1, conditions: [], allocations: [{ variantKey: 'on', percentage: 100 }] }] }), 200, 'a config');
  must(await n.req('POST', '/api/flags', { key: n.adminKey, body: { name: 'dev-only', project: 'default', type: 'boolean', environments: ['development'], variants: [{ key: 'on', value: true, valueType: 'boolean' }] } }), 201, 'dev-only');
  const ek = must(await n.req('POST', '/api/keys', { key: n.adminKey, body: { name: 'e', permissions: ['CanEvaluate'], application: 'default' } }), 201, 'key').body.key as string;
  const before = await dumpTables(n);
  const seenBefore = (await n.req('GET', '/api/flags', { key: n.adminKey })).body;
  const evalBefore = (await evaluate(n, ek, 'b', { userId: 'u', stage: 'production' }, true)).body;

  const failing: [string, () => Promise<Res>, number, string][] = [
    ['dependency cycle a -> b -> a', () => n.req('PUT', '/api/flags/a', { key: n.adminKey, body: { description: 'changed', dependencies: [{ flag: 'b' }] } }), 409, 'CONFLICT'],
    ['dependency on a missing flag', () => createFlag(n, 'c', { dependencies: [{ flag: 'missing' }] }), 400, 'BAD_REQUEST'],
    ['dependency parent lacks an environment', () => createFlag(n, 'c', { dependencies: [{ flag: 'dev-only' }] }), 409, 'CONFLICT'],
    ['dependency on an unknown parent variant', () => createFlag(n, 'c', { dependencies: [{ flag: 'a', variants: ['maybe'] }] }), 400, 'BAD_REQUEST'],
    ['duplicate flag name', () => createFlag(n, 'a', { description: 'second' }), 409, 'CONFLICT'],
    ['unknown application', () => createFlag(n, 'c', { project: 'nope' }), 400, 'BAD_REQUEST'],
    ['unknown environment', () => createFlag(n, 'c', { environments: ['staging'] }), 400, 'BAD_REQUEST'],
    ['config with an unknown default variant', () => upsertConfig(n, 'a', { defaultVariantKey: 'maybe' }), 400, 'BAD_REQUEST'],
    ['config with an unknown allocation variant', () => upsertConfig(n, 'a', { rules: [{ priority: 1, conditions: [], allocations: [{ variantKey: 'x', percentage: 100 }] }] }), 400, 'BAD_REQUEST'],
    ['config for an environment the flag does not use', () => upsertConfig(n, 'dev-only', { stage: 'production', defaultVariantKey: 'on' }), 409, 'CONFLICT'],
    ['config of a missing flag', () => upsertConfig(n, 'missing', {}), 404, 'NOT_FOUND'],
    ['removing a variant a config uses', () => n.req('PUT', '/api/flags/a', { key: n.adminKey, body: { description: 'x', variants: [{ key: 'off', value: false, valueType: 'boolean' }] } }), 409, 'CONFLICT'],
    ['deleting a parent flag', () => n.req('DELETE', '/api/flags/a', { key: n.adminKey }), 409, 'CONFLICT'],
    ['key with an unknown environment', () => n.req('POST', '/api/keys', { key: n.adminKey, body: { name: 'x', permissions: ['CanEvaluate'], application: 'default', environment: 'staging' } }), 400, 'BAD_REQUEST'],
    ['rotating a missing key', () => n.req('POST', '/api/keys/missing/rotate', { key: n.adminKey }), 404, 'NOT_FOUND'],
  ];
  for (const [what, call, status, code] of failing) expectProblem(t, await call(), status, code, what);
  // Refused as invalid input or as a conflict (the flag suites pin which); here only "refused".
  const self = await n.req('PUT', '/api/flags/a', { key: n.adminKey, body: { description: 'changed', dependencies: [{ flag: 'a' }] } });
  t.ok([400, 409].includes(self.status), `self dependency refused (${self.status})`);
  t.match(self.headers.get('content-type'), /^application\/problem\+json/);

  t.same(await dumpTables(n), before, 'every table, row for row, including organization versions');
  t.same((await n.req('GET', '/api/flags', { key: n.adminKey })).body, seenBefore, 'the flags as served');
  t.same((await evaluate(n, ek, 'b', { userId: 'u', stage: 'production' }, true)).body, evalBefore, 'evaluation unchanged');
}
