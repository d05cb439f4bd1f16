/**
 * Bus trust, membership: heartbeats forged under made-up node
 * ids, published straight onto the bus (real NATS, a subject of the test's own), are not counted
 * (the database confirms node ids, docs/cluster.md "Bus trust"), so they do not divide any key's
 * rate limit between phantom nodes.
 */
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { BusTap, busCluster, nodesSeen, until } from '../helpers/cluster.js';
import { scrape } from '../helpers/metrics.js';
import { createFlag, createKey, evaluate, upsertConfig } from '../helpers/node.js';

const skip = !process.env.DATABASE_URL || !process.env.NATS_URL ? 'DATABASE_URL and NATS_URL are needed: bus trust suite skipped' : false;

t.test('without a secret: forged heartbeats do not divide the rate limit', { skip }, async (t) => {
  const rate = 20;
  const { nodes, subject } = await busCluster(t, 2, { VEXIL_RATE_LIMIT_EVAL: String(rate) });
  const [a] = nodes;
  for (const n of nodes) t.equal(await until(() => nodesSeen(n), (c) => c === 2, 5000, 100), 2, 'two real nodes count each other');
  t.equal((await createFlag(a, 'f')).status, 201);
  t.equal((await upsertConfig(a, 'f', {})).status, 200);
  const ek = await createKey(a, { permissions: ['CanEvaluate'], application: 'default' });
  const tap = await BusTap.open(t, subject);

  // 50 forged peers beating every 300 ms for 2 s (more often than real nodes do).
  const forged = Array.from({ length: 50 }, (_, i) => `forged-node-${i}-${randomBytes(2).toString('hex')}`);
  for (let round = 0; round < 7; round++) {
    for (const id of forged) await tap.publish(BusTap.envelope({ kind: 'heartbeat', node: id }, id));
    await new Promise((r) => setTimeout(r, 300));
  }
  for (const n of nodes) t.equal(await nodesSeen(n), 2, `${n.url} still counts 2 nodes`);
  t.equal((await scrape(a)).value('vexil_cluster_nodes'), 2, 'vexil_cluster_nodes stays 2');

  // A's share of the key's budget is still rate / 2 (a burst of 10), not rate / 52.
  const results = await Promise.all(Array.from({ length: 40 }, (_, i) => evaluate(a, ek, 'f', { userId: `u${i}`, stage: 'production' })));
  const admitted = results.filter((r) => r.status === 200).length;
  t.ok(admitted >= rate / 2 - 1, `A admitted ${admitted} of 40 at once (its share: ${rate / 2})`);
  t.ok(admitted <= rate, 'and no more than the whole budget');
});
