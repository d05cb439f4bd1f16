/**
 * The evaluation worker pool (docs/cluster.md, "Worker pool"): evaluations through Piscina workers answer exactly
 * what the front thread answers, see a write in the very next request (read-your-writes), and
 * survive a worker crash.
 */
import t from 'tap';
import { createFlag, createKey, evaluate, startTestNode, upsertConfig } from '../../helpers/node.js';

t.test('pool evaluations match front-thread evaluations and read their writes', async (t) => {
  const pooled = await startTestNode(t, { env: { VEXIL_EVAL_WORKERS: '2', VEXIL_EVAL_HANDOFF: 'always' } });
  t.ok(pooled.node.runtime.pool, 'node runs a worker pool');
  t.equal((await createFlag(pooled, 'p')).status, 201);
  const ek = await createKey(pooled, { permissions: ['CanEvaluate'], application: 'default' });
  const rule = { priority: 1, conditions: [{ field: 'plan', operator: '==', value: 'pro' }], allocations: [{ variantKey: 'on', percentage: 100 }] };
  t.equal((await upsertConfig(pooled, 'p', { rolloutPercentage: 50, rules: [rule] })).status, 200);

  // Many concurrent requests travel in batches; each answer matches the inline engine.
  const users = Array.from({ length: 200 }, (_, i) => `user-${i}`);
  const sentBefore = pooled.node.runtime.pool!.itemsSent;
  const answers = await Promise.all(users.map((u) => evaluate(pooled, ek, 'p', { userId: u, stage: 'production', context: { plan: 'pro' } }, true)));
  t.equal(pooled.node.runtime.pool!.itemsSent - sentBefore, users.length, 'every evaluation went through the workers');
  const { evaluateHere: evaluateForKey } = await import('../../../src/evaluation/evaluate.js');
  const { authenticate } = await import('../../../src/auth/authenticate.js');
  const auth = await authenticate(pooled.node.runtime, ek, () => 'eval');
  let same = 0;
  for (let i = 0; i < users.length; i++) {
    const inline = evaluateForKey(auth, 'p', { userId: users[i], stage: 'production', clientId: null, context: { plan: 'pro' } }, Date.now());
    if (answers[i].status === 200 && answers[i].body.key === inline.key && answers[i].body.reason.code === inline.reason.code) same++;
  }
  t.equal(same, users.length, 'every pooled answer equals the front-thread answer');
  const codes = new Set(answers.map((a) => a.body.reason.code));
  t.ok(codes.has('rule_matched') && codes.has('rollout_excluded'), 'both outcomes occur at 50% rollout');

  // Read-your-writes: each change is visible to the next request on this node.
  for (const key of ['on', 'off', 'on', 'off']) {
    t.equal((await upsertConfig(pooled, 'p', { defaultVariantKey: key, rules: [] })).status, 200);
    const r = await evaluate(pooled, ek, 'p', { userId: 'user-1', stage: 'production' });
    t.equal(r.body.key, key, `next request sees defaultVariantKey ${key}`);
  }
});

t.test('a crashed worker is replaced and requests get answers, not hangs', async (t) => {
  const n = await startTestNode(t, { env: { VEXIL_EVAL_WORKERS: '1', VEXIL_EVAL_HANDOFF: 'always' } });
  t.equal((await createFlag(n, 'c')).status, 201);
  t.equal((await upsertConfig(n, 'c', { defaultVariantKey: 'on' })).status, 200);
  const ek = await createKey(n, { permissions: ['CanEvaluate'], application: 'default' });
  t.equal((await evaluate(n, ek, 'c', { userId: 'u', stage: 'production' })).body.key, 'on');
  const pool = n.node.runtime.pool!;
  // Terminate the worker thread from outside, as a crash would.
  const threads = (pool as unknown as { pool: { threads: { terminate(): Promise<number> }[] } }).pool.threads;
  await Promise.all(threads.map((w) => w.terminate()));
  const after = await Promise.all(Array.from({ length: 20 }, () => evaluate(n, ek, 'c', { userId: 'u', stage: 'production' })));
  for (const r of after) t.ok(r.status === 200 || r.status === 503, `answered ${r.status}`);
  t.ok(after.filter((r) => r.status === 200).length > 0, 'the replacement worker answers');
  const later = await evaluate(n, ek, 'c', { userId: 'u', stage: 'production' });
  t.equal(later.status, 200);
  t.equal(later.body.key, 'on');
});

t.test('evaluation-only GraphQL documents run in the workers and answer as the front thread does', async (t) => {
  const pooled = await startTestNode(t, { env: { VEXIL_EVAL_WORKERS: '2', VEXIL_EVAL_HANDOFF: 'always' } });
  const inline = await startTestNode(t, { adminKey: pooled.adminKey });
  const rule = { id: 'pro', priority: 1, conditions: [{ field: 'plan', operator: '==', value: 'pro' }], allocations: [{ variantKey: 'on', percentage: 100 }] };
  const keys: string[] = [];
  for (const n of [pooled, inline]) {
    t.equal((await createFlag(n, 'g')).status, 201);
    t.equal((await upsertConfig(n, 'g', { rolloutPercentage: 50, rules: [rule] })).status, 200);
    keys.push(await createKey(n, { permissions: ['CanEvaluate'], application: 'default' }));
  }
  const fields = Array.from({ length: 100 }, (_, i) =>
    `e${i}: evaluate(key: "g", userId: "user-${i}", stage: "production", context: $ctx) { key variant reason { code ruleId } }`);
  const query = `query Batch($ctx: Any) { ${fields.join(' ')} }`;
  const ask = (n: typeof pooled, key: string) =>
    n.req('POST', '/api/graphql', { key, body: { query, variables: { ctx: { plan: 'pro' } } } });
  const sentBefore = pooled.node.runtime.pool!.itemsSent;
  const [a, b] = await Promise.all([ask(pooled, keys[0]), ask(inline, keys[1])]);
  t.equal(pooled.node.runtime.pool!.itemsSent - sentBefore, 1, 'the document ran in a worker, as one item');
  t.equal(a.status, 200);
  t.notOk(a.body.errors, 'no errors');
  t.same(a.body.data, b.body.data, 'the worker answers exactly what the front thread answers');
  const codes = new Set(Object.values(a.body.data as Record<string, { reason: { code: string } }>).map((e) => e.reason.code));
  t.ok(codes.has('rule_matched') && codes.has('rollout_excluded'), 'both outcomes among the 100 users');

  // Read-your-writes: the next GraphQL request sees the change.
  t.equal((await upsertConfig(pooled, 'g', { rolloutPercentage: 100, defaultVariantKey: 'on', rules: [] })).status, 200);
  const after = await pooled.req('POST', '/api/graphql', { key: keys[0], body: { query: '{ evaluate(key: "g", userId: "x", stage: "production") { key reason { code } } }' } });
  t.same(after.body.data, { evaluate: { key: 'on', reason: { code: 'default' } } });

  // Errors keep their shape when produced in a worker.
  const missing = await pooled.req('POST', '/api/graphql', { key: keys[0], body: { query: '{ a: evaluate(key: "nope", userId: "x", stage: "production") { key } b: evaluate(key: "g", userId: "x", stage: "production") { key } }' } });
  t.equal(missing.status, 200);
  t.equal(missing.body.data.a, null);
  t.same(missing.body.data.b, { key: 'on' });
  t.match(missing.body.errors, [{ path: ['a'], extensions: { code: 'NOT_FOUND', status: 404 } }]);
});
