/**
 * CONTRACT.md 8 `VEXIL_GRAPHQL_MAX_FIELDS`: field selections counted as executed (fragments at every
 * spread, aliases, __typename, introspection), checked before validation; over it one BAD_REQUEST
 * and nothing runs. The standard introspection query and 100 full `evaluate` aliases stay under.
 */
import { getIntrospectionQuery, getOperationAST, parse } from 'graphql';
import t from 'tap';
import { GraphQLExecutor } from '../../src/graphql/execute.js';
import { measureOperation } from '../../src/graphql/limits.js';
import { createLogger } from '../../src/util/log.js';
import { createFlag, createKey, startTestNode, upsertConfig } from '../helpers/node.js';
import { expectRequestError, gql } from '../graphql/helpers.js';

const fields = (q: string) => {
  const doc = parse(q);
  return measureOperation(doc, getOperationAST(doc)!).fields;
};
const fullEvaluate = (i: number) => `e${i}: evaluate(key: "f", userId: "u${i}", stage: "production") { key variant reason { code message ruleId } }`;

t.test('counting', async (t) => {
  t.equal(fields('{ __typename }'), 1);
  t.equal(fields('{ a: flags { name } b: flags { name __typename } }'), 5, 'aliases and __typename count');
  t.equal(fields('{ ...F ...F } fragment F on Query { flags { name } }'), 4, 'a fragment counts at every spread');
  t.equal(fields('{ flags { ... on Flag { name project } } }'), 3, 'inline fragments add their fields');
  const chain = Array.from({ length: 40 }, (_, i) => `fragment F${i} on Query { ...F${i + 1} ...F${i + 1} }`).join('\n');
  t.equal(fields(`{ ...F0 } ${chain} fragment F40 on Query { __typename }`), 2 ** 40, 'fan-out is counted (memoised), not walked');
  t.ok(fields(getIntrospectionQuery()) <= 1000, `the standard introspection query: ${fields(getIntrospectionQuery())} fields`);
  const hundred = `{ ${Array.from({ length: 100 }, (_, i) => fullEvaluate(i)).join(' ')} }`;
  t.equal(fields(hundred), 700, '100 evaluate aliases selecting every Evaluation field: 700');
});

t.test('checked before validation: 5,000 same-named fields are refused without the quadratic rule', async (t) => {
  const ex = new GraphQLExecutor(createLogger('silent'), { maxDepth: 15, maxEvaluations: 100, maxFields: 1000 });
  const q = `{ ${'flags { name } '.repeat(5000)} }`;
  const p = ex.prepare(q, null);
  t.equal(p.ok, false);
  if (!p.ok) t.match(p.errors[0].message, /10000 fields.*VEXIL_GRAPHQL_MAX_FIELDS allows at most 1000/);
  const twoOps = `query A { ${'flags { name } '.repeat(3000)} } query B { __typename }`;
  const p2 = ex.prepare(twoOps, null);
  t.equal(p2.ok, false, 'no operation selected: every operation is held to the limit');
  if (!p2.ok) t.match(p2.errors[0].message, /VEXIL_GRAPHQL_MAX_FIELDS/);
});

t.test('over HTTP', async (t) => {
  const n = await startTestNode(t);
  await createFlag(n, 'f');
  await upsertConfig(n, 'f', {});
  const evalKey = await createKey(n, { permissions: ['CanEvaluate'], application: 'default' });
  const aliases = (k: number) => `{ ${Array.from({ length: k }, (_, i) => `a${i}:flags{name}`).join(" ")} }`;
  const over = await gql(n, n.adminKey, aliases(5000));
  expectRequestError(t, over, /VEXIL_GRAPHQL_MAX_FIELDS allows at most 1000/, '5,000 aliases of flags { name }');
  const under = await gql(n, n.adminKey, aliases(500));
  t.equal(under.body.data?.a499?.[0]?.name, 'f', '500 aliases (1,000 fields) run');
  const intro = await gql(n, n.adminKey, getIntrospectionQuery());
  t.ok(intro.body.data?.__schema, 'the standard introspection query runs');
  const hundred = await gql(n, evalKey, `{ ${Array.from({ length: 100 }, (_, i) => fullEvaluate(i)).join(' ')} }`);
  t.equal(hundred.body.errors, undefined, '100 full evaluate aliases run');
  t.equal(hundred.body.data?.e99?.key, 'off');
  const viaFragments = await gql(n, n.adminKey, `{ ...F ...F ...F } fragment F on Query { ${Array.from({ length: 200 }, (_, i) => `b${i}: flags { name }`).join(' ')} }`);
  expectRequestError(t, viaFragments, /1200 fields/, 'fragments expanded at every spread');

  const small = await startTestNode(t, { env: { VEXIL_GRAPHQL_MAX_FIELDS: '3' } });
  expectRequestError(t, await gql(small, small.adminKey, '{ flags { name project } __typename }'), /4 fields/, 'the setting applies');
  t.ok((await gql(small, small.adminKey, '{ flags { name project } }')).body.data?.flags, 'at the setting: runs');
});
