/**
 * PostgreSQL storage (DATABASE_URL): migrations on a fresh database, the persistence scenario
 * across a restart, and several nodes on one database (migration and bootstrap locks). Skipped
 * with a printed reason when DATABASE_URL is not set.
 */
import t from 'tap';
import postgres from 'postgres';
import { loadMigrations } from '../../../src/storage/migrate.js';
import { createFlag, createKey, evaluate, freshPostgresDatabase, randomKey, skipWithoutPostgres, startTestNode, upsertConfig } from '../../helpers/node.js';
import { checkFailedWritesChangeNothing, checkKeyStates, checkObservation, observe, writeScenario } from '../../helpers/storage-scenario.js';

// Several real nodes per file (PGlite start-up is seconds each): more than tap's default 120 s on a busy machine.
t.setTimeout(300_000);

const skip = skipWithoutPostgres();
const env = { VEXIL_RATE_LIMIT_MGMT: '100000', VEXIL_RATE_LIMIT_EVAL: '100000' };

async function fresh(t: { teardown(fn: () => unknown): void }): Promise<string> {
  const db = await freshPostgresDatabase();
  t.teardown(db.drop);
  return db.url;
}

t.test('migrations apply on a fresh database', { skip }, async (t) => {
  const url = await fresh(t);
  const n = await startTestNode(t, { databaseUrl: url, env });
  t.equal(n.node.db.kind, 'postgres', 'the node runs on PostgreSQL, not PGlite');
  const db = n.node.db;
  const applied = await db.query<{ version: number }>('select version from schema_migrations order by version');
  t.same(applied.map((r) => Number(r.version)), loadMigrations().map((m) => m.version), 'every migration recorded once');
  const tables = (await db.query<{ table_name: string }>(`select table_name from information_schema.tables where table_schema = 'public' order by table_name`)).map((r) => r.table_name);
  for (const name of ['flag_configs', 'flags', 'management_keys', 'organizations', 'schema_migrations']) t.ok(tables.includes(name), `table ${name}`);
  t.same(await db.query('select name from organizations'), [{ name: 'default' }], 'bootstrapped');
  t.equal((await n.req('GET', '/api/keys', { key: n.adminKey })).status, 200);
  // A second start finds everything applied and applies nothing.
  await n.close();
  const again = await startTestNode(t, { databaseUrl: url, adminKey: n.adminKey, env });
  t.same((await again.node.db.query('select version from schema_migrations')).length, applied.length, 'nothing applied twice');
});

t.test('flags, configurations and keys survive a restart on PostgreSQL', { skip }, async (t) => {
  const url = await fresh(t);
  const first = await startTestNode(t, { databaseUrl: url, env });
  const scenario = await writeScenario(first);
  const before = await observe(first, scenario);
  checkObservation(t, before);
  await first.close();

  const second = await startTestNode(t, { databaseUrl: url, adminKey: scenario.adminKey, env });
  const after = await observe(second, scenario);
  t.same(after.list, before.list, 'flag list identical');
  t.same(after.flags, before.flags, 'every flag with its configurations identical');
  t.same(after.keys, before.keys, 'key records identical');
  t.same(after.evaluations, before.evaluations, 'every evaluation identical');
  await checkKeyStates(t, second, scenario);

  // Key values are stored as hashes here too.
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const dump = JSON.stringify(await sql`select * from management_keys`);
    for (const v of Object.values(scenario)) t.notOk(dump.includes(v), 'no plaintext key value in PostgreSQL');
  } finally {
    await sql.end();
  }
});

t.test('a failing request changes nothing (PostgreSQL)', { skip }, async (t) => {
  const n = await startTestNode(t, { databaseUrl: await fresh(t), env });
  await checkFailedWritesChangeNothing(t, n);
});

t.test('nodes started together on one database all come up; writes are shared', { skip }, async (t) => {
  const url = await fresh(t);
  const adminKey = randomKey();
  const nodes = await Promise.all([1, 2, 3].map(() => startTestNode(t, { databaseUrl: url, adminKey, env })));
  t.equal(nodes.length, 3, 'every node started (migration and bootstrap locks, no unique violations)');
  const db = nodes[0].node.db;
  t.same((await db.query<{ version: number }>('select version from schema_migrations order by version')).map((r) => Number(r.version)), loadMigrations().map((m) => m.version), 'migrations recorded once');
  t.equal((await db.query('select id from organizations')).length, 1, 'one organization');
  t.equal((await db.query('select id from management_keys')).length, 1, 'one bootstrap key');
  for (const n of nodes) t.equal((await n.req('GET', '/api/keys', { key: adminKey })).status, 200, 'each node serves the admin key');

  const [a, b] = nodes;
  // A key created on A authenticates on B at once (keys are read from the database).
  const ek = await createKey(a, { permissions: ['CanEvaluate', 'CanRead'], application: 'default' });
  t.equal((await b.req('GET', '/api/flags', { key: ek })).status, 200, 'key made on A works on B');
  // A flag written on A is served by a node that starts afterwards, and by B after a restart.
  t.equal((await createFlag(a, 'shared', { description: 'from A' })).status, 201);
  t.equal((await upsertConfig(a, 'shared', { defaultVariantKey: 'on' })).status, 200);
  const c = await startTestNode(t, { databaseUrl: url, adminKey, env });
  const got = await c.req('GET', '/api/flags/shared', { key: ek });
  t.equal(got.status, 200, 'a later node reads the flag written on A');
  t.equal(got.body.description, 'from A');
  const e = await evaluate(c, ek, 'shared', { userId: 'u', stage: 'production' });
  t.equal(e.body.key, 'on', 'and evaluates it');
  await b.close();
  const b2 = await startTestNode(t, { databaseUrl: url, adminKey, env });
  t.equal((await b2.req('GET', '/api/flags/shared', { key: ek })).body.description, 'from A', 'B after a restart reads it too');
  // And the other way round: a write on the restarted B is seen by a fresh node.
  t.equal((await b2.req('PUT', '/api/flags/shared', { key: adminKey, body: { description: 'from B' } })).status, 200);
  const d = await startTestNode(t, { databaseUrl: url, adminKey, env });
  t.equal((await d.req('GET', '/api/flags/shared', { key: ek })).body.description, 'from B');
});
