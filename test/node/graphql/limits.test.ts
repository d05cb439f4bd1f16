/**
 * GraphQL limits (docs/graphql.md, "Limits" and "Rate limiting"): nesting depth (fragments expanded, introspection
 * counted), the evaluation cap, the compiled-query cache, and rate-limit charging: the first token
 * by permission, every further `evaluate` to the evaluation bucket, over-limit documents costing
 * only the first token.
 */
import { getIntrospectionQuery, getOperationAST, parse } from 'graphql';
import t, { type Test } from 'tap';
import { GraphQLExecutor } from '../../../src/graphql/execute.js';
import { LruCache } from '../../../src/graphql/cache.js';
import { limitViolation, measureOperation } from '../../../src/graphql/limits.js';
import { createLogger } from '../../../src/util/log.js';
import { createFlag, createKey, evaluate, startTestNode, upsertConfig } from '../../helpers/node.js';
import { expectRequestError, gql } from '../../helpers/graphql.js';

const cost = (q: string, op?: string) => {
  const doc = parse(q);
  return measureOperation(doc, getOperationAST(doc, op)!);
};

/** `__schema { types { fields { type { ofType { ... k times ... { name } } } } } }`: depth 5 + k. */
const introspectionDepth = (k: number) =>
  `{ __schema { types { fields { type { ${'ofType { '.repeat(k)}name${' }'.repeat(k)} } } } } }`;

const evaluates = (count: number, from = 0) =>
  Array.from({ length: count }, (_, i) => `e${from + i}: evaluate(key: "f", userId: "u${from + i}", stage: "production") { key }`).join('\n');

t.test('measureOperation: depth', async (t) => {
  t.equal(cost('{ __typename }').depth, 1);
  t.equal(cost('{ flags { name } }').depth, 2);
  t.equal(cost('{ flag(name: "x") { configs { rules { conditions { field } } } } }').depth, 5);
  t.equal(cost('{ ... on Query { flags { ... F } } } fragment F on Flag { variants { key } }').depth, 3, 'fragments and inline fragments add no level');
  t.equal(cost(introspectionDepth(10)).depth, 15, 'introspection fields count');
  t.equal(cost(getIntrospectionQuery()).depth, 15, "graphql-js's standard introspection query is at the default maximum");
  t.equal(cost(getIntrospectionQuery({ descriptions: true, specifiedByUrl: true, directiveIsRepeatable: true, schemaDescription: true, inputValueDeprecation: true })).depth, 15);
  t.equal(cost('query A { flags { name } } query B { __typename }', 'B').depth, 1, 'only the selected operation');
  // Fan-out: each fragment spreads the next twice; memoised, so this is linear, not 2^40.
  const chain = Array.from({ length: 40 }, (_, i) => `fragment F${i} on __Type { ofType { ...F${i + 1} ...F${i + 1} } }`).join('\n');
  const started = performance.now();
  t.equal(cost(`{ __type(name: "Flag") { ...F0 } } ${chain} fragment F40 on __Type { name }`).depth, 42);
  t.ok(performance.now() - started < 200, 'fragment fan-out is measured in linear time');
  t.equal(cost('{ ...A } fragment A on Query { ...B } fragment B on Query { ...A }').depth, Infinity, 'a cycle counts as infinite (validation rejects it anyway)');
});

t.test('measureOperation: evaluations by response key, fragments expanded', async (t) => {
  t.equal(cost(`{ ${evaluates(3)} flags { name } }`).evaluations, 3);
  t.equal(cost(`{ ...A ... on Query { ${evaluates(2, 10)} } } fragment A on Query { ${evaluates(2)} }`).evaluations, 4);
  t.equal(cost(`{ ...A ...A } fragment A on Query { ${evaluates(2)} }`).evaluations, 2, 'the same fragment twice merges');
  t.equal(cost('{ evaluate(key: "f", userId: "u", stage: "s") { key } evaluate(key: "f", userId: "u", stage: "s") { variant } }').evaluations, 1, 'same response key: one execution');
  t.equal(cost('mutation { deleteFlag(name: "x") }').evaluations, 0);
  t.equal(limitViolation({ depth: 15, evaluations: 100 }, { maxDepth: 15, maxEvaluations: 100 }), null);
  t.match(limitViolation({ depth: 16, evaluations: 0 }, { maxDepth: 15, maxEvaluations: 100 }), /16 levels deep; the maximum depth is 15/);
  t.match(limitViolation({ depth: 2, evaluations: 101 }, { maxDepth: 15, maxEvaluations: 100 }), /101 evaluate fields; at most 100/);
});

t.test('LruCache: bounded by entries and weight, least recently used goes first', async (t) => {
  const c = new LruCache<string, number>(3, 100);
  c.set('a', 1, 10);
  c.set('b', 2, 10);
  c.set('c', 3, 10);
  t.equal(c.get('a'), 1, 'a is now the most recent');
  c.set('d', 4, 10);
  t.equal(c.get('b'), undefined, 'b was the least recently used');
  t.same([c.get('a'), c.get('c'), c.get('d')], [1, 3, 4]);
  c.set('big', 5, 90);
  t.equal(c.size, 2, 'the weight bound evicts the least recently used until it fits');
  t.equal(c.get('a'), undefined);
  c.set('huge', 6, 101);
  t.equal(c.get('huge'), undefined, 'heavier than the whole cache: not kept');
  t.equal(c.get('big'), 5);
});

t.test('compiled-query cache: a repeated document is not parsed, validated or compiled again', async (t) => {
  const ex = new GraphQLExecutor(createLogger('silent'), { maxDepth: 15, maxEvaluations: 100 });
  const q = 'query Q { __typename } query R { __schema { queryType { name } } }';
  const p1 = ex.prepare(q, 'Q');
  const p2 = ex.prepare(q, 'Q');
  t.equal(p1, p2, 'the same prepared entry');
  t.equal(ex.compilations, 1);
  const p3 = ex.prepare(q, 'R');
  t.not(p3, p1, 'operationName is part of the key');
  t.equal(ex.compilations, 2);
  const bad = ex.prepare('{ nope }', null);
  t.equal(ex.prepare('{ nope }', null), bad, 'failures are cached too');
  t.equal(ex.compilations, 3);
  t.match(bad, { ok: false, errors: [{ extensions: { code: 'BAD_REQUEST', status: 400 } }] });
  const deep = ex.prepare(introspectionDepth(11), null);
  t.match(deep, { ok: false, errors: [{ message: /16 levels deep/ }] });
  const fake = { limiter: { charge() {} }, snapshots: { peek: () => undefined } } as any;
  const auth = { principal: { keyId: 'k', orgId: 'o', permissions: new Set(), application: null, environment: null }, snapshot: {} } as any;
  for (let i = 0; i < 3; i++) {
    const r = JSON.parse(await ex.execute(fake, auth, { query: q, variables: null, operationName: 'R' }));
    t.same(r, { data: { __schema: { queryType: { name: 'Query' } } } }, `cached run ${i + 1}`);
  }
  t.equal(ex.compilations, 4, 'running cached documents compiles nothing');
});

t.test('over HTTP with the default limits (depth 15, 100 evaluations)', async (t) => {
  const n = await startTestNode(t);
  t.equal((await createFlag(n, 'f')).status, 201);
  t.equal((await upsertConfig(n, 'f', {})).status, 200);
  const ev = await createKey(n, { permissions: ['CanEvaluate'], application: 'default' });

  t.test("the standard introspection query passes", async (t) => {
    const r = await gql(n, n.adminKey, getIntrospectionQuery());
    t.equal(r.status, 200);
    t.notOk(r.body.errors);
    t.ok(r.body.data?.__schema.types.length > 20);
  });

  t.test('depth 15 passes, 16 fails with one BAD_REQUEST and nothing executed', async (t) => {
    const ok = await gql(n, n.adminKey, introspectionDepth(10));
    t.notOk(ok.body.errors, 'depth 15');
    const deep = await gql(n, n.adminKey, `{ flags { name } ${introspectionDepth(11).slice(1, -1)} }`);
    expectRequestError(t, deep, /16 levels deep; the maximum depth is 15/, 'depth 16');
    t.notOk('data' in deep.body, 'nothing executed: no data');
  });

  t.test('depth through fragments and inline fragments', async (t) => {
    const q = (k: number) => `query Deep { flags { name } __schema { types { ...Fields } } }
      fragment Fields on __Type { fields { type { ... on __Type { ...Wrap } } } }
      fragment Wrap on __Type { ${'ofType { '.repeat(k)}name${' }'.repeat(k)} }`;
    t.notOk((await gql(n, n.adminKey, q(10))).body.errors, 'depth 15 through fragments');
    expectRequestError(t, await gql(n, n.adminKey, q(11)), /16 levels deep/, 'depth 16 through fragments');
  });

  t.test('100 evaluations pass, 101 fail with one BAD_REQUEST and nothing executed', async (t) => {
    const ok = await gql(n, ev, `{ ${evaluates(100)} }`);
    t.notOk(ok.body.errors);
    t.equal(Object.keys(ok.body.data ?? {}).length, 100, '100 answers side by side');
    t.same(ok.body.data?.e99, { key: 'off' });
    const over = await gql(n, ev, `{ ${evaluates(101)} }`);
    expectRequestError(t, over, /101 evaluate fields; at most 100/, '101 evaluations');
    const viaFragments = await gql(n, ev, `{ ...Half ... on Query { ${evaluates(50, 51)} } } fragment Half on Query { ${evaluates(51)} }`);
    expectRequestError(t, viaFragments, /101 evaluate fields/, '101 evaluations through fragments');
  });
});

t.test('a mutation inside an over-deep document does not happen (VEXIL_GRAPHQL_MAX_DEPTH=3)', async (t) => {
  const n = await startTestNode(t, { env: { VEXIL_GRAPHQL_MAX_DEPTH: '3' } });
  const input = `{name: "deep", project: "default", type: "boolean", variants: [{key: "on", value: true, valueType: "boolean"}]}`;
  const r = await gql(n, n.adminKey, `mutation { createFlag(input: ${input}) { configs { rules { id } } } }`);
  expectRequestError(t, r, /4 levels deep; the maximum depth is 3/);
  const check = await gql(n, n.adminKey, '{ flags { name } }');
  t.same(check.body, { data: { flags: [] } }, 'the flag was not created');
  const ok = await gql(n, n.adminKey, `mutation { createFlag(input: ${input}) { configs { stage } } }`);
  t.same(ok.body, { data: { createFlag: { configs: [] } } }, 'depth 3 runs');
});

t.test('rate limit over GraphQL (VEXIL_RATE_LIMIT_EVAL=10, VEXIL_RATE_LIMIT_MGMT=20)', async (t) => {
  const n = await startTestNode(t, { env: { VEXIL_RATE_LIMIT_EVAL: '10', VEXIL_RATE_LIMIT_MGMT: '20' } });
  t.equal((await createFlag(n, 'f')).status, 201);
  t.equal((await upsertConfig(n, 'f', {})).status, 200);
  // Token buckets refill with time (10 tokens/s: one per 100 ms). The documents are compiled and
  // cached first through another key (paying from its management bucket), so that each sequence
  // below runs in a few milliseconds and measures tokens, not compile time.
  const warmer = await createKey(n, { permissions: ['CanEvaluate', 'CanRead'], application: 'default' });
  const DOCS = {
    ten: `{ ${evaluates(10)} }`,
    eleven: `{ ${evaluates(11)} }`,
    hundred: `{ ${evaluates(100)} }`,
    over: `{ ${evaluates(101)} }`,
    invalid: `{ ${evaluates(50)} nope }`,
    eight: `{ ${evaluates(8)} }`,
    typename: '{ __typename }',
  };
  for (const q of Object.values(DOCS)) t.equal((await gql(n, warmer, q)).status, 200, 'warm-up');

  const is429 = (t: Test, r: { status: number; headers: Headers; body: any }, what: string) => {
    t.equal(r.status, 429, `${what}: 429`);
    t.match(r.headers.get('content-type'), /^application\/problem\+json/, `${what}: problem+json`);
    t.equal(r.body?.code, 'RATE_LIMITED', `${what}: RATE_LIMITED`);
    t.match(r.headers.get('retry-after'), /^\d+$/, `${what}: Retry-After`);
    return Number(r.headers.get('retry-after'));
  };

  t.test('a 10-alias request exhausts an evaluation bucket of 10: the next request is 429', async (t) => {
    const ev = await createKey(n, { permissions: ['CanEvaluate'], application: 'default' });
    const r = await gql(n, ev, DOCS.ten);
    t.notOk(r.body.errors);
    t.equal(Object.keys(r.body.data ?? {}).length, 10);
    is429(t, await gql(n, ev, DOCS.typename), 'next GraphQL request');
    is429(t, await evaluate(n, ev, 'f', { userId: 'u', stage: 'production' }), 'REST evaluation shares the bucket');
  });

  /** Fires `count` requests at once; answers the number that passed (the others must be 429). */
  const burst = async (t: Test, key: string, count: number, query: string) => {
    const rs = await Promise.all(Array.from({ length: count }, () => gql(n, key, query)));
    const passed = rs.filter((r) => r.status === 200).length;
    t.ok(rs.every((r) => r.status === 200 || (r.status === 429 && /^\d+$/.test(r.headers.get('retry-after') ?? ''))), 'each answer is 200 or 429 with Retry-After');
    return passed;
  };

  t.test('an evaluation-only key pays its first token from the evaluation bucket', async (t) => {
    const ev = await createKey(n, { permissions: ['CanEvaluate'], application: 'default' });
    const passed = await burst(t, ev, 20, DOCS.typename);
    t.ok(passed >= 10 && passed < 20, `${passed} of 20 simultaneous requests pass: the evaluation bucket (10), not the management one (20)`);
  });

  t.test('any other key pays its first token from the management bucket', async (t) => {
    const reader = await createKey(n, { permissions: ['CanRead'] });
    const passed = await burst(t, reader, 40, '{ environments }');
    t.ok(passed >= 20 && passed < 40, `${passed} of 40 simultaneous requests pass: the management bucket (20)`);

    const mixed = await createKey(n, { permissions: ['CanEvaluate', 'CanRead'], application: 'default' });
    const r = await gql(n, mixed, DOCS.eleven);
    t.equal(Object.keys(r.body.data ?? {}).length, 11, 'first token from management, 10 charged to evaluation');
    is429(t, await evaluate(n, mixed, 'f', { userId: 'u', stage: 'production' }), 'its evaluation bucket is empty');
    t.equal((await gql(n, mixed, '{ environments }')).status, 200, 'its management bucket still has tokens');
  });

  t.test('the evaluation bucket may go negative by at most the evaluation cap', async (t) => {
    const ev = await createKey(n, { permissions: ['CanEvaluate'], application: 'default' });
    const r = await gql(n, ev, DOCS.hundred);
    t.equal(Object.keys(r.body.data ?? {}).length, 100);
    const wait = is429(t, await gql(n, ev, DOCS.typename), 'after 100 evaluations');
    t.ok(wait >= 9 && wait <= 11, `Retry-After ${wait}s covers the debt of about 90 tokens at 10/s`);
  });

  t.test('a document over a limit costs only the first token', async (t) => {
    const ev = await createKey(n, { permissions: ['CanEvaluate'], application: 'default' });
    const over = await gql(n, ev, DOCS.over);
    expectRequestError(t, over, /101 evaluate fields/);
    const invalid = await gql(n, ev, DOCS.invalid);
    expectRequestError(t, invalid, /nope/, 'invalid document');
    // 10 - 1 - 1 = 8 tokens left: an 8-evaluation request uses them up.
    const r = await gql(n, ev, DOCS.eight);
    t.equal(Object.keys(r.body.data ?? {}).length, 8, 'the over-limit and invalid documents cost one token each');
    is429(t, await gql(n, ev, DOCS.typename), 'then the bucket is empty');
  });
});
