/**
 * OFREP across two nodes on one PostgreSQL and one NATS (docs/ofrep.md): a stream on one node gets
 * `refetchEvaluation` within 1 s of a change written on the other; the bulk ETag is the same on
 * both nodes for the same data, key and context; a key disabled on one node ends its stream on
 * the other. Runs when DATABASE_URL and NATS_URL are set.
 */
import t from 'tap';
import { upsertConfig, type TestNode } from '../helpers/node.js';
import { twoNodesWithSharedFlag, until } from '../helpers/cluster.js';
import { openSse, within } from '../helpers/sse.js';

const skip = !process.env.DATABASE_URL || !process.env.NATS_URL ? 'DATABASE_URL and NATS_URL are needed: cluster suite skipped' : false;
const body = { context: { targetingKey: 'u1', stage: 'production' } };

t.test('OFREP on two nodes', { skip }, async (t) => {
  const { a, b, ek } = await twoNodesWithSharedFlag(t);
  const bulk = (n: TestNode) => n.req('POST', '/ofrep/v1/evaluate/flags', { key: ek, body });

  // Both nodes at the same data: the same ETag, and each honours the other's.
  const onA = await bulk(a);
  const onB = await until(() => bulk(b), (r) => r.status === 200 && r.headers.get('etag') === onA.headers.get('etag'));
  t.equal(onB.headers.get('etag'), onA.headers.get('etag'), 'the same ETag on both nodes');
  t.same(onB.body.flags, onA.body.flags, 'the same answers');
  const nm = await b.req('POST', '/ofrep/v1/evaluate/flags', { key: ek, body, headers: { 'if-none-match': onA.headers.get('etag')! } });
  t.equal(nm.status, 304, "node B answers 304 to node A's ETag");

  // A stream on B, a change on A: the event within 1 s.
  const s = await openSse(onB.body.eventStreams[0].url);
  t.teardown(() => s.close());
  t.equal(s.status, 200, 'stream open on node B');
  for (let i = 0; i < 3; i++) {
    const started = Date.now();
    t.equal((await upsertConfig(a, 'shared', { defaultVariantKey: i % 2 === 0 ? 'off' : 'on' })).status, 200);
    const ev = await s.next(1000);
    t.equal(ev, '{"type":"refetchEvaluation"}', `change ${i + 1} on A: event on B after ${Date.now() - started} ms`);
  }
  // The ETag moved on both nodes, identically.
  const a2 = await bulk(a);
  const b2 = await until(() => bulk(b), (r) => r.headers.get('etag') === a2.headers.get('etag'));
  t.not(a2.headers.get('etag'), onA.headers.get('etag'), 'the change moved the ETag');
  t.equal(b2.headers.get('etag'), a2.headers.get('etag'), 'still the same on both nodes');

  // A key disabled on A ends its stream on B; reconnecting to B gets 401.
  const id = (await a.req('GET', '/api/keys', { key: a.adminKey })).body.find((k: { permissions: string[] }) => k.permissions.includes('CanEvaluate')).id;
  t.equal((await a.req('POST', `/api/keys/${id}/disable`, { key: a.adminKey })).status, 200);
  t.ok(await within(s.ended, 1000), 'the stream on B ends within 1 s');
  t.equal((await openSse(onB.body.eventStreams[0].url)).status, 401, 'reconnecting to B: 401');
});
