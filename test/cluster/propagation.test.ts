/**
 * Two nodes on one PostgreSQL and one NATS (docs/cluster.md): writes on one node reach the other's
 * evaluations and key cache without a restart; a segment change reaches them as a flag change
 * does, evaluation workers included. Runs when DATABASE_URL and NATS_URL are set.
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

t.test('a segment change reaches the other node like a flag change, its evaluation workers too', { skip }, async (t) => {
  // Both nodes evaluate REST requests in their worker pool (the shared store) as well as on the front.
  const { a, b, ek } = await twoNodesWithSharedFlag(t, { VEXIL_EVAL_WORKERS: '1', VEXIL_EVAL_HANDOFF: 'always' });
  const segment = (body: unknown) => a.req('POST', '/api/segments', { key: a.adminKey, body });
  t.equal((await segment({ name: 'beta', conditions: [{ field: 'plan', operator: '==', value: 'beta' }] })).status, 201);
  const rule = { id: 'r1', priority: 1, conditions: [], segments: ['beta'], allocations: [{ variantKey: 'on', percentage: 100 }] };
  t.equal((await upsertConfig(a, 'shared', { defaultVariantKey: 'off', rules: [rule] })).status, 200);
  const asFree = () => evaluate(b, ek, 'shared', { userId: 'u', stage: 'production', context: { plan: 'free' } });
  const asBeta = () => evaluate(b, ek, 'shared', { userId: 'u', stage: 'production', context: { plan: 'beta' } });
  t.equal((await until(asBeta, (r) => r.body.key === 'on')).body.key, 'on', 'node B evaluates the rule naming the segment');
  t.equal((await asFree()).body.key, 'off', 'outside the segment: default');

  // A change of the segment alone (no flag written) reaches B's evaluations within the flag bound.
  let started = Date.now();
  const put = await a.req('PUT', '/api/segments/beta', { key: a.adminKey, body: { conditions: [{ field: 'plan', operator: 'in', value: ['beta', 'free'] }] } });
  t.equal(put.status, 200);
  const seen = await until(asFree, (r) => r.body.key === 'on');
  t.equal(seen.body.key, 'on', `node B evaluates with the updated segment after ${Date.now() - started} ms`);
  const onB = await until(() => b.req('GET', '/api/segments/beta', { key: a.adminKey }), (r) => r.body?.conditions?.[0]?.operator === 'in');
  t.same(onB.body, put.body, "node B's management API reads the updated segment");

  // A deletion too (once no rule names it).
  t.equal((await upsertConfig(a, 'shared', { defaultVariantKey: 'off', rules: [] })).status, 200);
  started = Date.now();
  t.equal((await a.req('DELETE', '/api/segments/beta', { key: a.adminKey })).status, 204);
  const gone = await until(() => b.req('GET', '/api/segments/beta', { key: a.adminKey }), (r) => r.status === 404);
  t.equal(gone.status, 404, `node B no longer has the segment after ${Date.now() - started} ms`);
});
