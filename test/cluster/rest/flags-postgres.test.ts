/**
 * The core flag scenario (create, configure, evaluate, update, archive, delete) and concurrent
 * writes, run on PGlite and, when DATABASE_URL is set, on PostgreSQL (a fresh database per run,
 * created and dropped by the harness). Without DATABASE_URL the PostgreSQL group is skipped with
 * the reason printed.
 */
import t from 'tap';
import { freshPostgresDatabase, skipWithoutPostgres, type TestNode } from '../../helpers/node.js';
import {
  FLAG_FIELDS,
  createOrg,
  deleteFlag,
  evalFlag,
  evalKey,
  expectProblem,
  getFlag,
  must,
  postConfig,
  postFlag,
  putFlag,
  startNode,
  type TapTest,
} from '../../helpers/flags.js';

async function coreScenario(t: TapTest, n: TestNode): Promise<void> {
  const org = await createOrg(n);
  const A = org.adminKey;
  const ek = await evalKey(n, A, 'web');

  const c = await postFlag(n, A, 'core', {
    type: 'json',
    description: 'core scenario',
    tags: ['core'],
    variants: [
      { key: 'small', value: { limit: 10, label: 'Grüße' }, valueType: 'json' },
      { key: 'large', value: { limit: 1000, nested: [1.5, null, true] }, valueType: 'json' },
    ],
  });
  t.equal(c.status, 201, 'create');
  t.same(Object.keys(c.body).sort(), FLAG_FIELDS);
  t.same(c.body.environments, ['development', 'production']);

  const cfg = await postConfig(n, A, 'core', {
    defaultVariantKey: 'small',
    rolloutPercentage: 100,
    activeFrom: '2020-01-01T00:00:00+01:00',
    rules: [{ id: 'pro', priority: 1, conditions: [{ field: 'account.plan', operator: '==', value: 'pro' }], allocations: [{ variantKey: 'large', percentage: 100 }] }],
  });
  t.equal(cfg.status, 200, 'configure');
  t.equal(cfg.body.activeFrom, '2019-12-31T23:00:00.000Z');
  const g = await getFlag(n, A, 'core');
  t.same(g.body.configs, [cfg.body], 'configuration read back as written');
  t.same(g.body.variants[1].value, { limit: 1000, nested: [1.5, null, true] }, 'json values read back as written');

  const pro = await evalFlag(n, ek, 'core', { userId: 'u1', stage: 'production', context: { account: { plan: 'pro' } } }, true);
  t.same(pro.body, { variant: { limit: 1000, nested: [1.5, null, true] }, key: 'large', reason: { code: 'rule_matched', message: pro.body.reason?.message, ruleId: 'pro' } });
  const free = await evalFlag(n, ek, 'core', { userId: 'u1', stage: 'production' });
  t.same(free.body, { variant: { limit: 10, label: 'Grüße' }, key: 'small' });

  const u = await putFlag(n, A, 'core', { description: 'updated', isArchived: true });
  t.equal(u.status, 200, 'update');
  t.equal(u.body.description, 'updated');
  t.same(u.body.tags, ['core'], 'absent fields kept');
  t.equal(u.body.isArchived, true);
  const archived = await evalFlag(n, ek, 'core', { userId: 'u1', stage: 'production', context: { account: { plan: 'pro' } } }, true);
  t.equal(archived.body.reason?.code, 'archived');
  t.equal(archived.body.key, 'small');

  t.equal((await deleteFlag(n, A, 'core')).status, 204, 'delete');
  expectProblem(t, await getFlag(n, A, 'core'), 404, 'NOT_FOUND');
  expectProblem(t, await evalFlag(n, ek, 'core', { userId: 'u1', stage: 'production' }), 404, 'NOT_FOUND');
}

async function concurrentWrites(t: TapTest, n: TestNode): Promise<void> {
  const org = await createOrg(n);
  const A = org.adminKey;

  // The same name created 12 times at once: exactly one 201, every other answer 409.
  const same = await Promise.all(Array.from({ length: 12 }, (_, i) => postFlag(n, A, 'race', { description: `attempt ${i}` })));
  const statuses = same.map((r) => r.status).sort();
  t.same(statuses, [201, ...Array(11).fill(409)], 'one winner, the rest conflict');
  for (const r of same.filter((x) => x.status === 409)) t.equal(r.body?.code, 'CONFLICT');
  const winner = same.find((r) => r.status === 201)!;
  t.equal((await getFlag(n, A, 'race')).body.description, winner.body.description, 'the stored flag is the winner');

  // Distinct names at once: all created.
  const distinct = await Promise.all(Array.from({ length: 12 }, (_, i) => postFlag(n, A, `many-${i}`)));
  t.same(distinct.map((r) => r.status), Array(12).fill(201));
  t.equal((await n.req('GET', '/api/flags', { key: A })).body.length, 13);

  // Concurrent upserts of one stage: all 200, one configuration, equal to one of the answers.
  const ups = await Promise.all(Array.from({ length: 10 }, (_, i) => postConfig(n, A, 'race', { rolloutPercentage: i * 10 })));
  t.same(ups.map((r) => r.status), Array(10).fill(200));
  const configs = (await getFlag(n, A, 'race')).body.configs;
  t.equal(configs.length, 1, 'one configuration per stage');
  t.ok(ups.some((r) => r.body.rolloutPercentage === configs[0].rolloutPercentage), 'the last write wins whole');

  // Two dependency updates that together would form a cycle: never both.
  must(t, await postFlag(n, A, 'x'), 201, 'x');
  must(t, await postFlag(n, A, 'y'), 201, 'y');
  const [xy, yx] = await Promise.all([putFlag(n, A, 'x', { dependencies: [{ flag: 'y' }] }), putFlag(n, A, 'y', { dependencies: [{ flag: 'x' }] })]);
  t.same([xy.status, yx.status].sort(), [200, 409], 'one dependency succeeds, the other is a cycle');
  const x = (await getFlag(n, A, 'x')).body;
  const y = (await getFlag(n, A, 'y')).body;
  t.equal(x.dependencies.length + y.dependencies.length, 1, 'exactly one edge stored');

  // Deleting a parent while a child gains the dependency: never a child of a deleted parent.
  must(t, await postFlag(n, A, 'p'), 201, 'p');
  must(t, await postFlag(n, A, 'q'), 201, 'q');
  const [del, dep] = await Promise.all([deleteFlag(n, A, 'p'), putFlag(n, A, 'q', { dependencies: [{ flag: 'p' }] })]);
  const pExists = (await getFlag(n, A, 'p')).status === 200;
  const qDeps = (await getFlag(n, A, 'q')).body.dependencies;
  if (del.status === 204) {
    t.notOk(pExists);
    t.same(qDeps, [], 'the dependency was refused after the delete');
    t.equal(dep.status, 400, 'dependency on a missing flag');
  } else {
    t.equal(del.status, 409, 'delete refused: the flag is now a parent');
    t.ok(pExists);
    t.same(qDeps, [{ flag: 'p', variants: null }]);
  }
}

t.test('core scenario and concurrent writes on PGlite', async (t) => {
  const n = await startNode(t);
  t.test('create, configure, evaluate, update, delete', (t) => coreScenario(t, n));
  t.test('concurrent writes', (t) => concurrentWrites(t, n));
});

t.test('core scenario and concurrent writes on PostgreSQL', { skip: skipWithoutPostgres() }, async (t) => {
  const db = await freshPostgresDatabase();
  const n = await startNode(t, { databaseUrl: db.url });
  t.test('create, configure, evaluate, update, delete', (t) => coreScenario(t, n));
  t.test('concurrent writes', (t) => concurrentWrites(t, n));
  t.test('a second node on the same database reads what the first wrote', async (t) => {
    const org = await createOrg(n);
    must(t, await postFlag(n, org.adminKey, 'shared', { description: 'from node 1' }), 201, 'create');
    const cfg = must(t, await postConfig(n, org.adminKey, 'shared', { defaultVariantKey: 'on' }), 200, 'config').body;
    const ek = await evalKey(n, org.adminKey, 'web');
    const n2 = await startNode(t, { databaseUrl: db.url, adminKey: n.adminKey });
    const g = await getFlag(n2, org.adminKey, 'shared');
    t.equal(g.status, 200);
    t.equal(g.body.description, 'from node 1');
    t.same(g.body.configs, [cfg]);
    const ev = await evalFlag(n2, ek, 'shared', { userId: 'u', stage: 'production' }, true);
    t.same(ev.body, { variant: true, key: 'on', reason: { code: 'default', message: ev.body.reason?.message } });
  });
  // Registered after the nodes, so it runs after they have closed.
  t.teardown(db.drop);
});
