/**
 * Flag insights on a cluster (CONTRACT 18, docs/insights.md): two nodes on one PostgreSQL count
 * evaluations of the same flags at the same time, and write them with additive upserts every
 * interval: the stored counts are exactly the sum of both nodes' evaluations and reports, in the
 * hour and the day buckets.
 */
import t from 'tap';
import { busCluster, until } from '../helpers/cluster.js';
import { createFlag, createKey, evaluate, upsertConfig, type TestNode } from '../helpers/node.js';

const skip = !process.env.DATABASE_URL || !process.env.NATS_URL ? 'DATABASE_URL and NATS_URL are needed: cluster suite skipped' : false;

t.setTimeout(120_000);

async function counts(n: TestNode): Promise<Record<string, number>> {
  const rows = await n.node.db.query<{ k: string; count: number }>(
    `select flag_name || '/' || stage || '/' || application || '/' || variant || '/' || granularity as k, sum(count)::int as count
     from flag_evaluation_counts group by 1 order by 1`,
  );
  return Object.fromEntries(rows.map((r) => [r.k, r.count]));
}

t.test('two nodes: counts add up exactly', { skip }, async (t) => {
  const { nodes: [a, b] } = await busCluster(t, 2, { VEXIL_INSIGHTS_FLUSH_MS: '100', VEXIL_RATE_LIMIT_EVAL: '1000000' });
  t.equal((await createFlag(a, 'c1')).status, 201);
  t.equal((await upsertConfig(a, 'c1', { defaultVariantKey: 'on' })).status, 200);
  t.equal((await createFlag(a, 'c2')).status, 201);
  t.equal((await upsertConfig(a, 'c2', { defaultVariantKey: 'off' })).status, 200);
  const key = await createKey(a, { permissions: ['CanEvaluate'], application: 'default' });
  await until(() => evaluate(b, key, 'c2', { userId: 'w', stage: 'production' }), (r) => r.status === 200, 5000, 20);
  // The warm-up's count is written first (an interval, and the thread's post, later).
  await new Promise((r) => setTimeout(r, 1500));
  const before = await counts(a);
  const startedAt = Date.now();
  // Both nodes at once, over several intervals: their writes of the same rows interleave.
  const run = async (n: TestNode, rounds: number) => {
    for (let i = 0; i < rounds; i++) {
      await Promise.all(Array.from({ length: 10 }, (_, j) => evaluate(n, key, j % 2 === 0 ? 'c1' : 'c2', { userId: `u${i}-${j}`, stage: 'production' })));
    }
  };
  const report = (n: TestNode) =>
    n.req('POST', '/sdk/v1/metrics?stage=production', { key, body: { start: new Date(startedAt).toISOString(), end: new Date().toISOString(), counts: [{ flag: 'c1', variant: 'on', count: 500 }] } });
  await Promise.all([run(a, 30), run(b, 30), report(a), report(b)]);
  const add = (k: string, n: number) => ({ [`${k}/day`]: (before[`${k}/day`] ?? 0) + n, [`${k}/hour`]: (before[`${k}/hour`] ?? 0) + n });
  const expected = { ...add('c1/production/default/on', 2 * 150 + 2 * 500), ...add('c2/production/default/off', 2 * 150) };
  const got = await until(() => counts(a), (c) => c['c2/production/default/off/day'] === expected['c2/production/default/off/day'] && c['c1/production/default/on/day'] === expected['c1/production/default/on/day'], 10_000, 50);
  t.same(got, expected, 'every evaluation of both nodes, counted once');
  await new Promise((r) => setTimeout(r, 400));
  t.same(await counts(b), expected, 'and no more, read from the other node');
});
