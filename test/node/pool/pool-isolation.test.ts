/**
 * The evaluation pool under hostile or unlucky input (docs/cluster.md, "Worker pool"): one request never
 * changes another's answer, one organization's stale snapshot never holds up another's, and a full
 * pool refuses with 503 + Retry-After instead of queueing without bound. Every check goes through
 * real HTTP to a real node whose pool is forced on (VEXIL_EVAL_HANDOFF=always).
 */
import t from 'tap';
import { performance } from 'node:perf_hooks';
import {
  createFlag,
  createKey,
  createOrganization,
  evaluate,
  OPERATOR_TOKEN,
  startTestNode,
  upsertConfig,
  type Res,
  type TestNode,
} from '../../helpers/node.js';

t.setTimeout(300_000); // four real nodes with worker pools; slow on a busy machine

const POOLED = { VEXIL_EVAL_WORKERS: '2', VEXIL_EVAL_HANDOFF: 'always', VEXIL_OPERATOR_TOKEN: OPERATOR_TOKEN, VEXIL_RATE_LIMIT_EVAL: '1000000', VEXIL_RATE_LIMIT_MGMT: '1000000' };

/** Two organizations, each with flag `f` answering `on` in production, and an evaluation key each. */
function must(r: Res, status: number, what: string): void {
  if (r.status !== status) throw new Error(`${what}: ${r.status} ${r.text}`);
}

async function twoOrgs(n: TestNode) {
  const other = await createOrganization(n, `other${process.pid}`);
  const keys: string[] = [];
  for (const org of [n, other]) {
    must(await createFlag(org, 'f'), 201, 'create flag');
    must(await upsertConfig(org, 'f', { defaultVariantKey: 'on' }), 200, 'configure flag');
    keys.push(await createKey(org, { permissions: ['CanEvaluate'], application: 'default' }));
  }
  // The workers are up and hold both organizations.
  for (const [i, org] of [n, other].entries()) must(await evaluate(org, keys[i], 'f', { userId: 'warm', stage: 'production' }), 200, 'warm-up');
  return { other, keys };
}

/** A REST body whose context is `depth` arrays deep (2 bytes per level). */
const deepBody = (depth: number) =>
  `{"userId":"u","stage":"production","context":{"a":${'['.repeat(depth)}${']'.repeat(depth)}}}`;

const evalQuery = (n: number, ctx = '') =>
  `query${ctx ? '($ctx: Any)' : ''} { ${Array.from({ length: n }, (_, i) => `e${i}: evaluate(key: "f", userId: "u${i}", stage: "production"${ctx ? ', context: $ctx' : ''}) { key }`).join(' ')} }`;

const n = await startTestNode(t, { env: POOLED });
const { other, keys } = await twoOrgs(n);

t.test('an input that fails to reach a worker fails only its own request', async (t) => {
  const deep = 200_000;
  const nestedText = `{"a":${'['.repeat(deep)}${']'.repeat(deep)}}`;
  const normal = (i: number) => evaluate(i % 2 === 0 ? n : other, keys[i % 2], 'f', { userId: `user-${i}`, stage: 'production' });
  // Hostile requests in the middle of a burst of ordinary ones from both organizations, so they
  // share batches with them.
  const results = await Promise.all([
    ...Array.from({ length: 40 }, (_, i) => normal(i)),
    n.req('POST', '/flags/f', { key: keys[0], raw: deepBody(deep), headers: { 'content-type': 'application/json' } }),
    n.req('POST', '/api/graphql', { key: keys[0], raw: `{"query":${JSON.stringify(evalQuery(3, 'ctx'))},"variables":{"ctx":${nestedText}}}`, headers: { 'content-type': 'application/json' } }),
    ...Array.from({ length: 40 }, (_, i) => normal(40 + i)),
  ]);
  const ordinary = [...results.slice(0, 40), ...results.slice(42)];
  t.equal(ordinary.filter((r) => r.status === 200 && r.body.key === 'on').length, 80, 'every ordinary request of either organization answers 200 "on"');
  const [restDeep, gqlDeep] = [results[40], results[41]];
  t.equal(restDeep.status, 400, 'the deep REST context is the client\'s fault');
  t.equal(restDeep.body.code, 'BAD_REQUEST');
  t.match(restDeep.headers.get('content-type'), /application\/problem\+json/);
  const gqlCode = gqlDeep.status === 200 ? gqlDeep.body.errors?.[0]?.extensions?.code : gqlDeep.body.code;
  t.equal(gqlCode, 'BAD_REQUEST', `deep GraphQL variables: BAD_REQUEST (HTTP ${gqlDeep.status})`);
  t.notOk(gqlDeep.body.data, 'nothing executed for it');
  // The node is unharmed.
  t.equal((await normal(0)).body.key, 'on');
  t.equal((await normal(1)).body.key, 'on');
});

t.test('a stale organization does not hold up the others in its batch', async (t) => {
  // Delay every snapshot update of the other organization on its way to the workers by 1.5 s,
  // as a slow or congested channel would.
  // What the shared store's writer posts to the workers (snapshots/publisher.ts: their channel).
  const writer = n.node.runtime.pool!.store as unknown as { post(m: unknown): void };
  const post = writer.post.bind(writer);
  const defaultOrg = n.node.runtime.snapshots.loadedOrgIds();
  writer.post = (m: unknown) => {
    const orgId = (m as { org?: { id: string }; orgId?: string }).org?.id ?? (m as { orgId?: string }).orgId;
    if (orgId !== undefined && orgId !== defaultOrg[0]) setTimeout(() => post(m), 1500);
    else post(m);
  };
  t.equal((await upsertConfig(other, 'f', { defaultVariantKey: 'off' })).status, 200, 'a write in the other organization');
  const timed = async (p: Promise<Res>) => {
    const t0 = performance.now();
    const r = await p;
    return { r, ms: performance.now() - t0 };
  };
  const [stale, ...fresh] = await Promise.all([
    timed(evaluate(other, keys[1], 'f', { userId: 'x', stage: 'production' })),
    ...Array.from({ length: 30 }, (_, i) => timed(evaluate(n, keys[0], 'f', { userId: `u${i}`, stage: 'production' }))),
  ]);
  t.equal(stale.r.status, 200);
  t.equal(stale.r.body.key, 'off', 'the stale organization answers with its write (read-your-writes)');
  t.ok(stale.ms >= 500, `it waited for its snapshot (${Math.round(stale.ms)} ms)`);
  t.equal(fresh.filter((f) => f.r.status === 200 && f.r.body.key === 'on').length, 30, 'the other organization answers');
  const slowest = Math.max(...fresh.map((f) => f.ms));
  t.ok(slowest < 1000, `without waiting for the stale one (slowest ${Math.round(slowest)} ms)`);
  writer.post = post;
});

t.test('past VEXIL_EVAL_QUEUE_MAX evaluations the node answers 503 with Retry-After: 1', async (t) => {
  const tight = await startTestNode(t, { env: { ...POOLED, VEXIL_EVAL_QUEUE_MAX: '50' } });
  const k = (await twoOrgs(tight)).keys[0];
  const gql = (count: number) => tight.req('POST', '/api/graphql', { key: k, body: { query: evalQuery(count) } });
  // One document of 100 aliases counts 100 evaluations: more than the queue may hold.
  const over = await gql(100);
  t.equal(over.status, 503, 'a 100-alias document over a 50-evaluation queue');
  t.equal(over.body.code, 'UNAVAILABLE');
  t.match(over.headers.get('content-type'), /application\/problem\+json/);
  t.equal(over.headers.get('retry-after'), '1');
  const under = await gql(40);
  t.equal(under.status, 200, 'a 40-alias document fits');
  t.equal(Object.values(under.body.data).filter((e) => (e as { key: string }).key === 'on').length, 40);

  // REST: a burst larger than the queue gets some 503s and never a wrong answer.
  const burst = await Promise.all(Array.from({ length: 300 }, (_, i) => evaluate(tight, k, 'f', { userId: `u${i}`, stage: 'production' })));
  const refused = burst.filter((r) => r.status === 503);
  t.ok(refused.length > 0, `some of the burst is refused (${refused.length}/300)`);
  t.ok(refused.every((r) => r.headers.get('retry-after') === '1' && r.body.code === 'UNAVAILABLE'), 'each with Retry-After: 1 and UNAVAILABLE');
  t.equal(burst.filter((r) => r.status === 200 && r.body.key === 'on').length + refused.length, 300, 'the rest answer "on"');
  t.equal(tight.node.runtime.pool!.queued, 0, 'nothing stays counted once answered');
  t.equal((await evaluate(tight, k, 'f', { userId: 'later', stage: 'production' })).status, 200, 'a later request is served');
});
