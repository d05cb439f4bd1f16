/**
 * Webhooks on a cluster (CONTRACT.md 19, docs/webhooks.md): two nodes on one PostgreSQL, both
 * dispatching, writes made on both. Every message is delivered, each endpoint gets its messages in
 * commit order, and no attempt is made twice at once: the receiver never sees one webhook-id
 * twice in flight, and the deliveries log numbers each message's attempts 1, 2, ... once each.
 */
import t from 'tap';
import { setTimeout as sleep } from 'node:timers/promises';
import { busCluster, until } from '../helpers/cluster.js';
import { createFlag } from '../helpers/node.js';
import { scrape } from '../helpers/metrics.js';
import { deliveries, Receiver, verify, WEBHOOK_ENV, type Received } from '../helpers/webhooks.js';

const skip = !process.env.DATABASE_URL || !process.env.NATS_URL ? 'DATABASE_URL and NATS_URL are needed: cluster suite skipped' : false;

t.setTimeout(120_000);

t.test('two nodes racing: every message delivered, in commit order per endpoint, no attempt twice at once', { skip }, async (t) => {
  const { nodes: [a, b] } = await busCluster(t, 2, { ...WEBHOOK_ENV, VEXIL_METRICS: '1' });
  const rx = await new Receiver().start();
  t.teardown(() => rx.close());
  const inFlight = new Set<string>();
  let overlaps = 0;
  const acked: Record<string, Received[]> = { '/a': [], '/b': [] };
  let n = 0;
  for (const path of ['/a', '/b']) {
    rx.on(path, (req, res, r) => {
      const id = `${path} ${r.headers['webhook-id']}`;
      if (inFlight.has(id)) overlaps++;
      inFlight.add(id);
      // Every fourth request fails: retries race too.
      const fail = ++n % 4 === 0;
      setTimeout(() => {
        inFlight.delete(id);
        if (fail) res.writeHead(500).end();
        else {
          acked[path].push(r);
          res.writeHead(200).end();
        }
      }, 20);
    });
  }
  const ea = await a.req('POST', '/api/webhooks', { key: a.adminKey, body: { url: `${rx.url}/a`, events: ['flag.*'] } });
  const eb = await b.req('POST', '/api/webhooks', { key: a.adminKey, body: { url: `${rx.url}/b`, events: ['flag.create'] } });
  t.equal(ea.status, 201);
  t.equal(eb.status, 201);
  const names: string[] = [];
  // Writes on both nodes, two at a time.
  for (let i = 0; i < 30; i += 2) {
    const pair = [`c${i}`, `c${i + 1}`];
    const rs = await Promise.all([createFlag(a, pair[0]), createFlag(b, pair[1])]);
    for (const r of rs) t.equal(r.status, 201);
    names.push(...pair);
  }
  await until(async () => acked['/a'].length + acked['/b'].length, (c) => c >= 60, 30_000, 50);
  await sleep(500);
  t.equal(overlaps, 0, 'no webhook-id was ever in flight twice');
  for (const [path, e] of [['/a', ea.body], ['/b', eb.body]] as const) {
    const bodies = acked[path].map((r) => verify(e.secret, r));
    const eventIds = bodies.map((m: any) => Number(m.data.id));
    t.equal(new Set(eventIds).size, 30, `${path}: all 30 messages acknowledged, none twice`);
    t.same(eventIds, [...eventIds].sort((x, y) => x - y), `${path}: in commit order`);
    t.same(new Set(bodies.map((m: any) => m.data.target.name)), new Set(names));
    const log = await deliveries(a, e.id, 'limit=1000');
    const byMessage = new Map<string, number[]>();
    for (const d of log) byMessage.set(d.messageId, [...(byMessage.get(d.messageId) ?? []), d.attempt]);
    t.ok([...byMessage.values()].every((at) => at.every((x, i) => x === i + 1)), `${path}: each attempt made once (${log.length} attempts of ${byMessage.size} messages)`);
    t.ok(log.some((d) => d.status === 500), `${path}: some attempts failed and were retried`);
  }
  const [sa, sb] = await Promise.all([scrape(a), scrape(b)]);
  const ok = sa.value('vexil_webhook_deliveries_total', { result: 'success' }) + sb.value('vexil_webhook_deliveries_total', { result: 'success' });
  t.equal(ok, 60, `60 successes counted across the nodes (A ${sa.value('vexil_webhook_deliveries_total', { result: 'success' })}, B ${sb.value('vexil_webhook_deliveries_total', { result: 'success' })})`);
});
