/**
 * Bus trust with VEXIL_CLUSTER_SECRET (docs/cluster.md, "Bus trust"): real nodes sign every
 * message and propagate within a second; unsigned (heartbeats included), wrongly signed, expired
 * and replayed messages published straight onto the bus are dropped and counted in
 * vexil_bus_rejected_total, by reason, on /metrics.
 */
import { createHmac } from 'node:crypto';
import t from 'tap';
import { BusTap, busCluster, nodesSeen, orgRow, propagates, seedShared, until } from '../helpers/cluster.js';
import { scrape } from '../helpers/metrics.js';

const skip = !process.env.DATABASE_URL || !process.env.NATS_URL ? 'DATABASE_URL and NATS_URL are needed: bus trust suite skipped' : false;
const REJECTED = 'vexil_bus_rejected_total';
const SECRET = 'test-cluster-secret-0123456789abcdef-xyz';

t.test('with VEXIL_CLUSTER_SECRET: only signed messages count; real nodes propagate within 1 s', { skip }, async (t) => {
  const { nodes, subject, databaseUrl } = await busCluster(t, 2, { VEXIL_CLUSTER_SECRET: SECRET });
  const [a, b] = nodes;
  for (const n of nodes) t.equal(await until(() => nodesSeen(n), (c) => c === 2, 5000, 100), 2, 'signed heartbeats: two nodes');
  const tap = await BusTap.open(t, subject);
  const ek = await seedShared(t, nodes);
  await propagates(t, a, nodes, ek, 'off', 'signed A → B');
  await propagates(t, b, nodes, ek, 'on', 'signed B → A');
  const real = tap.seen.filter((m) => m.signature !== undefined);
  t.ok(real.length > 0 && tap.seen.every((m) => /^[0-9a-f]{64}$/.test(m.signature ?? '')), 'every message the nodes sent is signed');

  const org = await orgRow(databaseUrl);
  const before = await Promise.all(nodes.map((n) => scrape(n)));
  const sign = (data: string) => createHmac('sha256', SECRET).update(data).digest('hex');
  const forged = BusTap.envelope({ kind: 'change', change: { orgId: org.id, version: org.version + 1, touches: { flag: 'shared' } } });
  await tap.publish(forged); // unsigned
  await tap.publish(forged, createHmac('sha256', 'another-secret-of-enough-length-000000').update(forged).digest('hex')); // wrong secret
  await tap.publish(forged, 'zz'); // not even hex
  const heartbeats = Array.from({ length: 20 }, (_, i) => BusTap.envelope({ kind: 'heartbeat', node: `forged-${i}` }, `forged-${i}`));
  for (const h of heartbeats) await tap.publish(h); // unsigned heartbeats
  const old = BusTap.envelope({ kind: 'key', orgId: org.id, keyId: 'k' }, 'old-node', Date.now() - 120_000);
  await tap.publish(old, sign(old)); // well signed, two minutes old
  const replay = real[real.length - 1];
  await tap.publish(replay.data, replay.signature); // a real signed message, again
  await new Promise((r) => setTimeout(r, 300));
  const after = await Promise.all(nodes.map((n) => scrape(n)));
  for (let i = 0; i < nodes.length; i++) {
    const d = (reason: string) => after[i].value(REJECTED, { reason }) - before[i].value(REJECTED, { reason });
    t.equal(d('unsigned'), 1 + heartbeats.length, `node ${i}: unsigned messages (heartbeats included) counted`);
    t.equal(d('bad_signature'), 2, `node ${i}: wrongly signed ones counted`);
    t.equal(d('expired'), 1, `node ${i}: the old signed one counted as expired`);
    t.ok(d('replayed') >= 1, `node ${i}: the replayed one counted (${d('replayed')})`);
  }
  for (const n of nodes) t.equal(await nodesSeen(n), 2, `${n.url}: unsigned heartbeats are not counted`);
  await propagates(t, a, nodes, ek, 'off', 'signed, after the rejected ones');
});
