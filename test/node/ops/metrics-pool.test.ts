/**
 * GET /metrics with the evaluation worker pool: worker evaluations show in the next scrape and
 * survive a worker's death (the counters live in a SharedArrayBuffer the front thread owns).
 */
import t from 'tap';
import { evaluate, startTestNode } from '../../helpers/node.js';
import { reasonDeltas, scrape, seedReasonFlags as seed, TWO_EVALS } from '../../helpers/metrics.js';
import { gql } from '../../helpers/graphql.js';

t.test('worker pool: worker evaluations show at once and survive a worker being replaced', async (t) => {
  const n = await startTestNode(t, { env: { VEXIL_EVAL_WORKERS: '2', VEXIL_EVAL_HANDOFF: 'always' } });
  const ek = await seed(t, n);
  const pool = n.node.runtime.pool!;
  t.ok(pool !== null, 'the node has a pool');
  const s0 = await scrape(n);
  const sentBefore = pool.itemsSent;

  for (let i = 0; i < 4; i++) t.equal((await evaluate(n, ek, 'checkout-flag', { userId: `w-${i}`, stage: 'production' })).status, 200);
  const g = await gql(n, ek, TWO_EVALS);
  t.equal(g.body.data?.b?.key, 'off');
  t.equal(pool.itemsSent - sentBefore, 5, 'the 4 REST evaluations and the GraphQL document ran in the workers');

  const s1 = await scrape(n);
  t.same(reasonDeltas(s0, s1), { default: 5, config_disabled: 1 }, 'worker counts show in the next scrape');

  // Kill every worker without scraping first: what they counted must not be lost.
  for (let i = 0; i < 3; i++) t.equal((await evaluate(n, ek, 'dark-flag', { userId: `k-${i}`, stage: 'production' })).status, 200);
  const threads = (pool as unknown as { pool: { threads: { terminate(): Promise<number> }[] } }).pool.threads;
  await Promise.all([...threads].map((w) => w.terminate()));
  const s2 = await scrape(n);
  t.same(reasonDeltas(s1, s2), { config_disabled: 3 }, 'counts made by workers that died are kept');

  // Replacement workers count into the same cells.
  let r = await evaluate(n, ek, 'checkout-flag', { userId: 'after', stage: 'production' });
  for (let i = 0; r.status !== 200 && i < 20; i++) {
    await new Promise((res) => setTimeout(res, 100));
    r = await evaluate(n, ek, 'checkout-flag', { userId: 'after', stage: 'production' });
  }
  t.equal(r.status, 200, 'a replacement worker answers');
  const s3 = await scrape(n);
  t.same(reasonDeltas(s2, s3), { default: 1 }, 'the replacement worker counts too');
  t.equal(s3.value('vexil_eval_pool_queue_depth'), 0, 'nothing left in the pool');
});

