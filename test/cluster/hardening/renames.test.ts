/**
 * Renames (docs/limits.md, "Renames"): renaming an application or environment rewrites key scopes, and every node's key
 * cache follows at once: a scoped key that was cached under the old name works with the new name
 * right away, on the node that renamed and on another node (PostgreSQL + a private NATS).
 */
import t from 'tap';
import { createFlag, createKey, evaluate, freshPostgresDatabase, startTestNode, upsertConfig, type TestNode } from '../../helpers/node.js';
import { NATS_BIN, PrivateNats, until } from '../../helpers/cluster.js';
import { gql } from '../../helpers/graphql.js';

async function setup(n: TestNode) {
  t.equal((await createFlag(n, 'f')).status, 201);
  t.equal((await upsertConfig(n, 'f', { defaultVariantKey: 'on' })).status, 200);
  return createKey(n, { permissions: ['CanEvaluate', 'CanRead'], application: 'default', environment: 'production' });
}

async function rename(t: import('tap').Test, n: TestNode, field: 'renameApplication' | 'renameEnvironment', from: string, to: string) {
  const r = await gql(n, n.adminKey, `mutation { ${field}(from: "${from}", to: "${to}") }`);
  t.same(r.body.errors, undefined, `${field} ${from} -> ${to}`);
}

t.test('one node: the cached key follows renames at once', async (t) => {
  const n = await startTestNode(t);
  const key = await setup(n);
  t.equal((await evaluate(n, key, 'f', { userId: 'u', stage: 'production' })).body.key, 'on', 'cached under the old names');
  await rename(t, n, 'renameApplication', 'default', 'shop');
  const app = await evaluate(n, key, 'f', { userId: 'u', stage: 'production' });
  t.equal(app.status, 200, `after the application rename: ${app.status} ${app.text}`);
  await rename(t, n, 'renameEnvironment', 'production', 'prod');
  const env = await evaluate(n, key, 'f', { userId: 'u', stage: 'prod' });
  t.equal(env.status, 200, `after the environment rename, the new stage: ${env.status} ${env.text}`);
  t.equal(env.body.key, 'on');
  const self = await n.req('GET', '/api/flags/f', { key });
  t.equal(self.status, 200, 'reads in the renamed application too');
});

const skip = !process.env.DATABASE_URL ? 'DATABASE_URL is not set: two-node rename suite skipped' : !NATS_BIN ? 'nats-server not installed' : false;

t.test('two nodes: the other node follows at once', { skip }, async (t) => {
  const nats = await PrivateNats.start();
  t.teardown(() => nats.stop());
  const db = await freshPostgresDatabase();
  t.teardown(db.drop);
  const env = { NATS_URL: nats.url, VEXIL_SYNC_SAFETY_POLL_MS: '600000' };
  const a = await startTestNode(t, { databaseUrl: db.url, env });
  const b = await startTestNode(t, { databaseUrl: db.url, adminKey: a.adminKey, env });
  const key = await setup(a);
  const first = await until(() => evaluate(b, key, 'f', { userId: 'u', stage: 'production' }), (r) => r.body?.key === 'on');
  t.equal(first.body.key, 'on', 'B has cached the key under the old names');
  await rename(t, a, 'renameApplication', 'default', 'shop');
  await rename(t, a, 'renameEnvironment', 'production', 'prod');
  const started = Date.now();
  const after = await until(() => evaluate(b, key, 'f', { userId: 'u', stage: 'prod' }), (r) => r.status === 200, 2000);
  t.equal(after.status, 200, `B serves the key under the new names after ${Date.now() - started} ms (${after.text})`);
  t.ok(Date.now() - started < 2000, 'well inside the 60 s key cache');
});
