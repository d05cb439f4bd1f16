/**
 * Two nodes on one PostgreSQL and one NATS (docs/cluster.md): writes on one node reach the other's
 * evaluations and key cache without a restart. Runs when DATABASE_URL and NATS_URL are set.
 */
import t from 'tap';
import { evaluate, upsertConfig } from '../helpers/node.js';
import { twoNodesWithSharedFlag, until } from '../helpers/cluster.js';

const skip = !process.env.DATABASE_URL || !process.env.NATS_URL ? 'DATABASE_URL and NATS_URL are needed: cluster suite skipped' : false;

t.test('two nodes share changes through NATS', { skip }, async (t) => {
  const { a, b, ek } = await twoNodesWithSharedFlag(t);

  const seen = await until(() => evaluate(b, ek, 'shared', { userId: 'u', stage: 'production' }), (r) => r.status === 200 && r.body.key === 'on');
  t.equal(seen.status, 200, 'node B sees the flag written on node A');
  t.equal(seen.body.key, 'on');

  // A change on B reaches A.
  t.equal((await upsertConfig(b, 'shared', { defaultVariantKey: 'off' })).status, 200);
  const back = await until(() => evaluate(a, ek, 'shared', { userId: 'u', stage: 'production' }), (r) => r.body.key === 'off');
  t.equal(back.body.key, 'off', 'node A sees the change written on node B');

  // A key disabled on A stops working on B within a second, well inside the 60 s cache.
  const list = await a.req('GET', '/api/keys', { key: a.adminKey });
  const id = list.body.find((k: { permissions: string[] }) => k.permissions.includes('CanEvaluate')).id;
  t.equal((await b.req('POST', `/flags/shared`, { key: ek, body: { userId: 'u', stage: 'production' } })).status, 200, 'key cached on B');
  t.equal((await a.req('POST', `/api/keys/${id}/disable`, { key: a.adminKey })).status, 200);
  const started = Date.now();
  const denied = await until(() => evaluate(b, ek, 'shared', { userId: 'u', stage: 'production' }), (r) => r.status === 401, 1000);
  t.equal(denied.status, 401, `disabled key refused on B after ${Date.now() - started} ms`);
});
