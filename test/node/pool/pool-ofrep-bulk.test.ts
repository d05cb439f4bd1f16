/**
 * OFREP bulk is placed like every other evaluation (src/evaluation/placement.ts, docs/evaluation.md):
 * with the pool's hand-off policy at `always`, a bulk request runs in a worker as one item, and
 * answers what a node without a pool answers (flags, order, values, reasons); a matching ETag is
 * answered 304 before anything reaches a worker; and it reads its writes. Counted as CONTRACT 10
 * says: each flag it evaluates in the worker, none for a 304, within 1 s.
 */
import t from 'tap';
import { EVALS, scrape, type Scrape } from '../../helpers/metrics.js';
import { createFlag, createKey, startTestNode, upsertConfig, type TestNode } from '../../helpers/node.js';

const BULK = '/ofrep/v1/evaluate/flags';

async function seed(t: Tap.Test, n: TestNode): Promise<string> {
  const rule = { id: 'pro', priority: 1, conditions: [{ field: 'plan', operator: '==', value: 'pro' }], allocations: [{ variantKey: 'on', percentage: 100 }] };
  const split = { id: 'split', priority: 2, conditions: [], allocations: [{ variantKey: 'on', percentage: 50 }, { variantKey: 'off', percentage: 50 }] };
  for (const name of ['a-rule', 'b-split', 'c-off', 'd-disabled', 'e-client', 'f-none']) t.equal((await createFlag(n, name)).status, 201, `flag ${name}`);
  t.equal((await upsertConfig(n, 'a-rule', { rolloutPercentage: 50, rules: [rule] })).status, 200);
  t.equal((await upsertConfig(n, 'b-split', { rules: [split] })).status, 200);
  t.equal((await upsertConfig(n, 'c-off', {})).status, 200);
  t.equal((await upsertConfig(n, 'd-disabled', { enabled: false })).status, 200);
  t.equal((await upsertConfig(n, 'e-client', { clientId: 'default:ios', defaultVariantKey: 'on' })).status, 200);
  return createKey(n, { permissions: ['CanEvaluate'], application: 'default' });
}

t.test('OFREP bulk runs in a worker as one item and answers what the front thread answers', async (t) => {
  const pooled = await startTestNode(t, { env: { VEXIL_EVAL_WORKERS: '2', VEXIL_EVAL_HANDOFF: 'always' } });
  const inline = await startTestNode(t, { adminKey: pooled.adminKey });
  const keys = [await seed(t, pooled), await seed(t, inline)];
  const pool = pooled.node.runtime.pool!;

  for (const context of [
    { targetingKey: 'user-1', stage: 'production', plan: 'pro' },
    { targetingKey: 'user-2', stage: 'PRODUCTION' },
    { targetingKey: 'user-3', stage: 'production', clientId: 'default:ios' },
  ]) {
    const sentBefore = pool.itemsSent;
    const a = await pooled.req('POST', BULK, { key: keys[0], body: { context } });
    t.equal(pool.itemsSent - sentBefore, 1, `${JSON.stringify(context)}: the bulk request went to the workers as one item`);
    const b = await inline.req('POST', BULK, { key: keys[1], body: { context } });
    t.equal(a.status, 200);
    t.same(a.body.flags, b.body.flags, `${JSON.stringify(context)}: the worker answers exactly what the front thread answers`);
    t.ok(a.body.flags.length >= 4, 'flags were evaluated');
    // The ETag is decided before anything is evaluated, so a match costs the workers nothing.
    const etag = a.headers.get('etag');
    t.ok(etag, 'an ETag');
    const sentAt304 = pool.itemsSent;
    const again = await pooled.req('POST', BULK, { key: keys[0], body: { context }, headers: { 'if-none-match': etag! } });
    t.equal(again.status, 304, 'If-None-Match: 304');
    t.equal(pool.itemsSent, sentAt304, 'nothing went to the workers for it');
  }

  // Read-your-writes: the next bulk request on this node sees the change.
  t.equal((await upsertConfig(pooled, 'c-off', { defaultVariantKey: 'on' })).status, 200);
  const after = await pooled.req('POST', BULK, { key: keys[0], body: { context: { targetingKey: 'x', stage: 'production' } } });
  t.match(after.body.flags.find((f: { key: string }) => f.key === 'c-off'), { key: 'c-off', variant: 'on', value: true });
});

/** Every `vexil_evaluations_total` sample added up. */
const evaluations = (s: Scrape): number => s.families.get(EVALS)?.metrics.reduce((sum, m) => sum + Number(m.value ?? 0), 0) ?? 0;

/** The node's evaluation total once it reaches `want` (worker counts show within 1 s), or after 1 s. */
async function evaluationsWithin1s(n: TestNode, want: number): Promise<number> {
  const end = Date.now() + 1000;
  let got = evaluations(await scrape(n));
  while (got < want && Date.now() < end) {
    await new Promise((r) => setTimeout(r, 50));
    got = evaluations(await scrape(n));
  }
  return got;
}

for (const where of ['worker', 'front thread'] as const) {
  t.test(`a bulk request on the ${where} counts each flag it evaluates, a 304 none (CONTRACT 10)`, async (t) => {
    const env = where === 'worker' ? { VEXIL_EVAL_WORKERS: '2', VEXIL_EVAL_HANDOFF: 'always' } : { VEXIL_EVAL_WORKERS: '0' };
    const n = await startTestNode(t, { env });
    const key = await seed(t, n);
    const pool = n.node.runtime.pool;
    const context = { targetingKey: 'user-1', stage: 'production', plan: 'pro' };
    const before = evaluations(await scrape(n));
    const sent = pool?.itemsSent ?? 0;
    const a = await n.req('POST', BULK, { key, body: { context } });
    t.equal((pool?.itemsSent ?? 0) - sent, where === 'worker' ? 1 : 0, `evaluated on the ${where}`);
    const flags = a.body.flags.length;
    t.ok(flags >= 4, 'flags were evaluated');
    t.equal((await evaluationsWithin1s(n, before + flags)) - before, flags, `counted once per flag (${flags}) within 1 s`);
    const again = await n.req('POST', BULK, { key, body: { context }, headers: { 'if-none-match': a.headers.get('etag')! } });
    t.equal(again.status, 304);
    await new Promise((r) => setTimeout(r, 300));
    t.equal(evaluations(await scrape(n)) - before, flags, 'the 304 counted nothing');
  });
}
