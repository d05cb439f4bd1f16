/**
 * The front thread validates and costs a management document but never compiles it: the
 * management actor runs it, and compiling a large document with graphql-jit cost the front tens of
 * ms the first time (docs/benchmarks.md, "After, fifth"). The actor's side compiles on first run.
 */
import t from 'tap';
import { GraphQLExecutor, type GraphQLRequest } from '../../../src/graphql/execute.js';
import { resolvers } from '../../../src/graphql/resolvers.js';
import type { Authenticated } from '../../../src/auth/authenticate.js';
import type { Runtime } from '../../../src/runtime.js';
import { createLogger } from '../../../src/util/log.js';

const PAGE =
  'query Page($after: String) { flagConnection(first: 1000, after: $after) { nodes { name configs { stage enabled rules { id conditions { field operator value } allocations { variantKey percentage } } } } pageInfo { endCursor hasNextPage } totalCount } }';
const MUTATION = 'mutation { a: deleteSegment(name: "gone") b: deleteSegment(name: "gone-too") c: deleteSegment(name: "and-this") }';

const charged: [string, number][] = [];
// What answerOnFront reads of a node and a key: no snapshot (an empty organization), a limiter that records.
const rt = {
  snapshots: { peek: () => undefined },
  limiter: { charge: (bucket: string, _key: string, n: number) => void charged.push([bucket, n]) },
} as unknown as Runtime;
const auth = { principal: { orgId: 'o', keyId: 'k', permissions: new Set(['CanRead', 'CanManage']) }, snapshot: undefined } as unknown as Authenticated;
const req = (query: string): GraphQLRequest => ({ query, variables: null, operationName: null });

t.test('a management document is forwarded uncompiled; the actor compiles it when it runs it', async (t) => {
  for (const [what, query] of [['a page of flags (estimated per request)', PAGE], ['a mutation (fixed estimate)', MUTATION]] as const) {
    const front = new GraphQLExecutor(createLogger('silent'), { maxDepth: 15, maxEvaluations: 100, resolvers });
    t.equal(front.answerOnFront(rt, auth, req(query)), null, `${what}: forwarded to the actor`);
    const p = front.prepare(query, null);
    t.ok(p.ok, `${what}: prepared`);
    if (!p.ok) continue;
    t.equal(p.run, null, `${what}: not compiled on the front`);
    t.equal(p.compileErrors, null, `${what}: valid`);
    t.equal(p.pending?.validated, true, `${what}: validated once on the front`);
    const actor = new GraphQLExecutor(createLogger('silent'), { maxDepth: 15, maxEvaluations: 100, resolvers });
    const q = actor.prepare(query, null);
    t.ok(q.ok && actor.ready(q) === null && q.run !== null, `${what}: the actor's executor compiles it`);
  }
  // Three mutations, three management tokens: the request's admission took the first, the front the other two.
  t.same(charged, [['mgmt', 2]], 'the mutations cost their management tokens on the front, one each');
});

t.test('an invalid management document is still refused on the front, by validation', async (t) => {
  const front = new GraphQLExecutor(createLogger('silent'), { maxDepth: 15, maxEvaluations: 100, resolvers });
  const out = front.answerOnFront(rt, auth, req('{ flagConnection(first: 10) { nodes { nope } } }'));
  t.type(out, 'string', 'answered on the front');
  const body = JSON.parse(out as string) as { errors: { message: string; extensions: { code: string } }[] };
  t.match(body.errors[0], { message: /Cannot query field "nope"/, extensions: { code: 'BAD_REQUEST' } }, 'the validation error, as a BAD_REQUEST');
  t.equal(front.prepare('{ flagConnection(first: 10) { nodes { nope } } }', null).ok, true, 'cached as prepared');
});
