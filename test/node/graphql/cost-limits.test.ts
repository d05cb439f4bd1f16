/**
 * Large answers (docs/limits.md, "Large answers") over real HTTP: the GraphQL result estimate (`VEXIL_GRAPHQL_MAX_RESULT`), the
 * mutation cap and its token charging (`VEXIL_GRAPHQL_MAX_MUTATIONS`), and the answer-size bound
 * of every route (`VEXIL_MAX_ANSWER_BYTES`): 400 naming the way to page, never a 500.
 */
import t from 'tap';
import { createFlag, createKey, evaluate, expectProblem, startTestNode, upsertConfig, type Res, type TestNode } from '../../helpers/node.js';
import { expectRequestError, gql } from '../../helpers/graphql.js';

// Three real nodes (PGlite start-up is seconds each) on a shared machine.
t.setTimeout(300_000);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Every flag name, in pages of 4 (ten whole flags are more than this suite's 4096-byte answers). */
const flagNames = async (n: TestNode): Promise<string[]> => {
  const names: string[] = [];
  for (;;) {
    const after = names.length === 0 ? '' : `&after=${names[names.length - 1]}`;
    const r = await n.req('GET', `/api/flags?limit=4${after}`, { key: n.adminKey });
    if (r.status !== 200) throw new Error(`GET /api/flags: ${r.status} ${r.text.slice(0, 200)}`);
    const page = (r.body as { name: string }[]).map((f) => f.name);
    names.push(...page);
    if (r.headers.get('link') === null) return names;
  }
};

const createInput = (name: string, variants = 2) =>
  `{name: "${name}", project: "default", type: "string", variants: [${Array.from({ length: variants }, (_, i) => `{key: "v${i}", value: "${i}", valueType: "string"}`).join(', ')}]}`;

t.test('result estimate at a small VEXIL_GRAPHQL_MAX_RESULT, and answers past VEXIL_MAX_ANSWER_BYTES', async (t) => {
  const n = await startTestNode(t, { env: { VEXIL_GRAPHQL_MAX_RESULT: '10', VEXIL_MAX_ANSWER_BYTES: '4096', VEXIL_GRAPHQL_MAX_MUTATIONS: '3' } });
  for (let i = 0; i < 10; i++) t.equal((await createFlag(n, `f${i}`)).status, 201);

  t.test('right at the limit: answered', async (t) => {
    const r = await gql(n, n.adminKey, '{ flags { name } }');
    t.equal(r.status, 200);
    t.notOk(r.body.errors, 'no error');
    t.equal(r.body.data?.flags.length, 10, '10 flags × 1 field = 10 values');
  });

  t.test('over it: one BAD_REQUEST naming the estimate and the limit', async (t) => {
    const r = await gql(n, n.adminKey, '{ flags { name project } }');
    expectRequestError(t, r, /estimated at up to 20 values.*VEXIL_GRAPHQL_MAX_RESULT allows at most 10.*flagConnection\(first:\) or flags\(first:\)/);
    const aliases = await gql(n, n.adminKey, '{ a: flags { name } b: flags { name } }');
    expectRequestError(t, aliases, /up to 20 values/, 'aliases count');
  });

  t.test('a mutation document over the estimate writes nothing', async (t) => {
    // variants: the longest (2) + 1 mutation + 3 list items = 6, × 2 fields = 12 > 10.
    const r = await gql(n, n.adminKey, `mutation { createFlag(input: ${createInput('never', 3)}) { variants { key valueType } } }`);
    expectRequestError(t, r, /estimated at up to 12 values.*at most 10/);
    t.notOk((await flagNames(n)).includes('never'), 'the flag was not created');
    const small = await gql(n, n.adminKey, `mutation { createFlag(input: ${createInput('small', 3)}) { name } }`);
    t.equal(small.body.data?.createFlag?.name, 'small', 'the same mutation under the estimate runs');
  });

  t.test('one more flag: the same document goes over', async (t) => {
    // 11 flags now ('small' above).
    const r = await gql(n, n.adminKey, '{ flags { name } }');
    expectRequestError(t, r, /estimated at up to 11 values.*at most 10/);
  });

  t.test('the mutation cap setting', async (t) => {
    const four = `mutation { ${[0, 1, 2, 3].map((i) => `m${i}: deleteFlag(name: "f${i}")`).join(' ')} }`;
    expectRequestError(t, await gql(n, n.adminKey, four), /4 mutation fields; VEXIL_GRAPHQL_MAX_MUTATIONS allows at most 3/);
    t.ok((await flagNames(n)).includes('f0'), 'nothing deleted');
  });

  t.test('answers past VEXIL_MAX_ANSWER_BYTES: 400 naming the way to page, never a 500', async (t) => {
    const big = await createFlag(n, 'big', { type: 'string', variants: [{ key: 'on', value: 'x'.repeat(5000), valueType: 'string' }, { key: 'off', value: '', valueType: 'string' }] });
    expectProblem(t, big, 400, 'BAD_REQUEST', /VEXIL_MAX_ANSWER_BYTES \(4096 bytes\) \(the request's change was made: only its answer is refused\)/);
    t.ok((await gql(n, n.adminKey, '{ flag(name: "big") { name } }')).body.data?.flag, 'the write was made (its answer alone was refused)');
    const list = await n.req('GET', '/api/flags', { key: n.adminKey });
    expectProblem(t, list, 400, 'BAD_REQUEST', /VEXIL_MAX_ANSWER_BYTES \(4096 bytes\).*\?limit=.*\?after=/);
    // fetch asks for gzip (the list's gzip body, list-body.ts flagListGzip); a client that asks for
    // no coding gets the list body (flagListBody): refused the same way.
    const identity = await n.req('GET', '/api/flags', { key: n.adminKey, headers: { 'accept-encoding': 'identity' } });
    expectProblem(t, identity, 400, 'BAD_REQUEST', /VEXIL_MAX_ANSWER_BYTES \(4096 bytes\).*\?limit=.*\?after=/);
    const one = await n.req('GET', '/api/flags/big', { key: n.adminKey });
    expectProblem(t, one, 400, 'BAD_REQUEST', /VEXIL_MAX_ANSWER_BYTES \(4096 bytes\)/);
    const small = await n.req('GET', '/api/flags/f5', { key: n.adminKey });
    t.equal(small.status, 200, 'a small answer of the same route is answered');
    const g = await gql(n, n.adminKey, '{ flag(name: "big") { variants { value } } }');
    expectRequestError(t, g, /VEXIL_MAX_ANSWER_BYTES \(4096 bytes\).*flagConnection\(first:\) or flags\(first:\)/);
    const gSmall = await gql(n, n.adminKey, '{ flag(name: "f5") { name variants { key } } }');
    t.same(gSmall.body, { data: { flag: { name: 'f5', variants: [{ key: 'on' }, { key: 'off' }] } } }, 'a small GraphQL answer is answered');
    // Evaluation answers (the hot path) are unaffected.
    t.equal((await upsertConfig(n, 'f5', { defaultVariantKey: 'on' })).status, 200);
    const ev = await createKey(n, { permissions: ['CanEvaluate'], application: 'default' });
    const e = await evaluate(n, ev, 'f5', { userId: 'u', stage: 'production' });
    t.same({ status: e.status, body: e.body }, { status: 200, body: { variant: true, key: 'on' } });
  });
});

t.test('default limits: { flags { name } } answers; the mutation cap; mutations in order', async (t) => {
  const n = await startTestNode(t);
  for (let i = 0; i < 3; i++) t.equal((await createFlag(n, `f${i}`)).status, 201);
  const r = await gql(n, n.adminKey, '{ flags { name } }');
  t.same(r.body, { data: { flags: [{ name: 'f0' }, { name: 'f1' }, { name: 'f2' }] } });

  const before = await flagNames(n);
  const doc21 = `mutation { ${Array.from({ length: 21 }, (_, i) => `c${i}: createFlag(input: ${createInput(`m${i}`)}) { name }`).join(' ')} }`;
  const over = await gql(n, n.adminKey, doc21);
  expectRequestError(t, over, /21 mutation fields; VEXIL_GRAPHQL_MAX_MUTATIONS allows at most 20/);
  t.same(await flagNames(n), before, '21 mutations: nothing written');
  const viaFragment = await gql(n, n.adminKey, `mutation { ...M x: deleteFlag(name: "f0") } fragment M on Mutation { ${Array.from({ length: 20 }, (_, i) => `c${i}: createFlag(input: ${createInput(`m${i}`)}) { name }`).join(' ')} }`);
  expectRequestError(t, viaFragment, /21 mutation fields/, 'fragments expanded');
  t.same(await flagNames(n), before, 'nothing written');

  // 10 × (create, then archive what was just created): only in order can every archive succeed.
  const pairs = Array.from({ length: 10 }, (_, i) => `c${i}: createFlag(input: ${createInput(`o${i}`)}) { name } a${i}: archiveFlag(name: "o${i}") { name isArchived }`);
  const twenty = await gql(n, n.adminKey, `mutation { ${pairs.join(' ')} }`);
  t.equal(twenty.status, 200);
  t.notOk(twenty.body.errors, `20 mutations run: ${JSON.stringify(twenty.body.errors ?? []).slice(0, 300)}`);
  for (let i = 0; i < 10; i++) t.same(twenty.body.data?.[`a${i}`], { name: `o${i}`, isArchived: true }, `o${i} created, then archived`);
  t.same(Object.keys(twenty.body.data ?? {}), Array.from({ length: 10 }, (_, i) => [`c${i}`, `a${i}`]).flat(), 'answered in document order');
});

t.test('each mutation costs a management token', async (t) => {
  // 2 tokens a second, burst 2: a 20-mutation document leaves the bucket at 2 - 20 = -18, which
  // takes 9.5 s to refill far enough to admit one more request: the 20 mutations themselves may
  // take seconds on a loaded machine (3.8 s in one CI run, which a rate of 5 had refilled).
  const RATE = 2;
  const n = await startTestNode(t, { env: { VEXIL_RATE_LIMIT_MGMT: String(RATE) } });
  await sleep(1100);
  const doc = (prefix: string, count: number) =>
    `mutation { ${Array.from({ length: count }, (_, i) => `c${i}: createFlag(input: ${createInput(`${prefix}${i}`)}) { name }`).join(' ')} }`;

  const over = await gql(n, n.adminKey, doc('x', 21));
  expectRequestError(t, over, /21 mutation fields/);
  const after = await gql(n, n.adminKey, '{ __typename }');
  t.equal(after.status, 200, 'a document over the cap cost only its first token');

  await sleep(1100);
  const one = await gql(n, n.adminKey, doc('one', 1));
  t.equal(one.body.data?.c0?.name, 'one0');
  const next = await gql(n, n.adminKey, '{ __typename }');
  t.equal(next.status, 200, 'one mutation: one token');

  await sleep(1100);
  const sentAt = Date.now();
  const twenty = await gql(n, n.adminKey, doc('t', 20));
  t.equal(twenty.status, 200);
  t.equal(Object.keys(twenty.body.data ?? {}).length, 20, 'the 20 mutations ran');
  const limited: Res = await gql(n, n.adminKey, '{ __typename }');
  expectProblem(t, limited, 429, 'RATE_LIMITED', 'the next request');
  const retry = Number(limited.headers.get('retry-after'));
  // The bucket owed 18 tokens (19 to admit one more) when it was charged, and refilled at RATE a
  // second for at most `elapsed` since: a charge of fewer tokens would ask for less.
  const elapsed = (Date.now() - sentAt) / 1000;
  const least = Math.max(1, Math.ceil((20 - RATE + 1 - RATE * elapsed) / RATE));
  t.ok(retry >= least, `Retry-After ${retry} s ≥ ${least} s: the bucket owed ${20 - RATE} tokens at ${RATE} per second, ${elapsed.toFixed(2)} s ago`);
  await sleep(retry * 1000 + 100);
  t.equal((await gql(n, n.adminKey, '{ __typename }')).status, 200, 'answered again once refilled');
});
