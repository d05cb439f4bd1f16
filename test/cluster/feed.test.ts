/**
 * The snapshot feed across two nodes on one PostgreSQL and one NATS (docs/feed.md, "The stream"):
 * a change written on node A reaches a stream connected to node B as a `change` event within 1 s,
 * carrying the changed flag, following the version before; both nodes answer the same snapshot
 * ETag for the same data; a key disabled on A ends its stream on B. Runs when DATABASE_URL and
 * NATS_URL are set.
 */
import t from 'tap';
import { upsertConfig, type TestNode } from '../helpers/node.js';
import { twoNodesWithSharedFlag, until } from '../helpers/cluster.js';
import { openSse, within } from '../helpers/sse.js';

const skip = !process.env.DATABASE_URL || !process.env.NATS_URL ? 'DATABASE_URL and NATS_URL are needed: cluster suite skipped' : false;

t.test('the feed on two nodes', { skip }, async (t) => {
  const { a, b, ek } = await twoNodesWithSharedFlag(t);
  const snapshot = (n: TestNode) => n.req('GET', '/sdk/v1/snapshot?stage=production', { key: ek });
  const onA = await snapshot(a);
  t.equal(onA.status, 200);
  const onB = await until(() => snapshot(b), (r) => r.status === 200 && r.headers.get('etag') === onA.headers.get('etag'));
  t.equal(onB.headers.get('etag'), onA.headers.get('etag'), 'the same ETag on both nodes');
  t.same(onB.body, onA.body, 'the same body');

  const s = await openSse(`${b.url}/sdk/v1/stream?stage=production`, { 'x-api-key': ek });
  t.teardown(() => s.close());
  t.equal(s.status, 200, 'stream open on node B');
  const first = await s.nextEvent(1000);
  t.equal(first?.name, 'snapshot');
  let held = JSON.parse(first!.data).version;
  for (let i = 0; i < 3; i++) {
    const started = Date.now();
    t.equal((await upsertConfig(a, 'shared', { defaultVariantKey: i % 2 === 0 ? 'off' : 'on' })).status, 200);
    const ev = await s.nextEvent(1000);
    t.equal(ev?.name, 'change', `change ${i + 1} on A: a change event on B after ${Date.now() - started} ms`);
    const c = JSON.parse(ev!.data);
    t.same(c.flags.map((f: any) => f.flag.name), ['shared'], 'carrying the flag');
    t.equal(c.flags[0].configs[0].defaultVariantKey, i % 2 === 0 ? 'off' : 'on');
    t.equal(c.follows, held, 'following the version before');
    held = c.version;
  }

  const id = (await a.req('GET', '/api/keys', { key: a.adminKey })).body.find((k: { permissions: string[] }) => k.permissions.includes('CanEvaluate')).id;
  t.equal((await a.req('POST', `/api/keys/${id}/disable`, { key: a.adminKey })).status, 200);
  t.ok(await within(s.ended, 1000), 'a key disabled on A ends its stream on B within 1 s');
});
