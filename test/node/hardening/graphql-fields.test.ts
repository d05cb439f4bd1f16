/**
 * `VEXIL_GRAPHQL_MAX_FIELDS` (docs/limits.md, "GraphQL documents"): field selections counted as executed (fragments at every
 * spread, aliases, __typename, introspection), checked before validation; over it one BAD_REQUEST
 * and nothing runs. The standard introspection query and 100 full `evaluate` aliases stay under.
 */
import { getIntrospectionQuery, getOperationAST, parse } from 'graphql';
import t from 'tap';
import { GraphQLExecutor } from '../../../src/graphql/execute.js';
import { measureOperation, tokenBounds } from '../../../src/graphql/limits.js';
import { createLogger } from '../../../src/util/log.js';
import { createFlag, createKey, startTestNode, upsertConfig } from '../../helpers/node.js';
import { expectRequestError, gql } from '../../helpers/graphql.js';

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

t.test('tokenBounds: never above the executed fields and depth, exact without named fragments', async (t) => {
  const fc = (await import('fast-check')).default;
  // Documents with what could fool a token count: aliases, arguments holding object literals,
  // strings and block strings with braces, comments, directives, inline fragments (typed, untyped),
  // named fragments spread any number of times, several named operations, fields named `on`.
  const name = fc.constantFrom('flags', 'name', 'on', 'fragment', 'query', 'project', '__typename', 'x');
  const arg = fc.constantFrom('', '(a: {b: {c: "}{"}})', '(s: """ { } """)', '(l: [1, {x: 2}], v: $v)', '(e: ENUM_on)');
  const directive = fc.constantFrom('', ' @include(if: true)', ' @skip(if: $v) @x');
  const gap = fc.constantFrom(' ', ', ', '\n# a { comment } here\n', '\t');
  const selectionSet = fc.letrec((tie) => ({
    set: fc.array(tie('selection'), { minLength: 1, maxLength: 4 }).chain((sels) => gap.map((g) => `{${g}${sels.join(g)}${g}}`)),
    selection: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      fc.tuple(fc.option(name, { nil: undefined }), name, arg, directive).map(([alias, f, a, d]) => `${alias ? `${alias}: ` : ''}${f}${a}${d}`),
      fc.tuple(fc.option(name, { nil: undefined }), name, arg, directive, tie('set')).map(([alias, f, a, d, s]) => `${alias ? `${alias} : ` : ''}${f}${a}${d} ${s}`),
      fc.tuple(fc.constantFrom('... on Query', '... on Flag', '...', '... @include(if: true)'), tie('set')).map(([h, s]) => `${h} ${s}`),
      fc.constantFrom('...F0', '...F1 @skip(if: false)'),
    ),
  }));
  const doc = fc.tuple(
    fc.array(fc.tuple(fc.constantFrom('', 'query A', 'query B($v: Boolean = true)', 'mutation M', 'query @x'), selectionSet.set), { minLength: 1, maxLength: 3 }),
    fc.array(selectionSet.set, { minLength: 2, maxLength: 2 }),
    fc.constantFrom(null, 'A', 'B', 'M', 'Z'),
  );
  let checked = 0;
  let exact = 0;
  fc.assert(
    fc.property(doc, ([ops, frags, opName]) => {
      const text = `${ops.map(([h, s]) => `${h} ${s}`).join('\n')}\nfragment F0 on Query ${frags[0]}\nfragment F1 on Query ${frags[1]}`;
      let parsed;
      try {
        parsed = parse(text);
      } catch {
        return true; // not a document: nothing to compare with
      }
      const all = parsed.definitions.filter((d) => d.kind === 'OperationDefinition');
      const selected = getOperationAST(parsed, opName ?? undefined);
      const costs = (selected ? [selected] : all).map((o) => measureOperation(parsed, o as never));
      const executed = { fields: Math.max(...costs.map((c) => c.fields)), depth: Math.max(...costs.map((c) => c.depth)) };
      const bound = tokenBounds(text, opName);
      checked++;
      if (!/\.\.\.F/.test(ops.map(([, s]) => s).join(''))) {
        if (bound.fields !== executed.fields || bound.depth !== executed.depth) return false;
        exact++;
      }
      return bound.fields <= executed.fields && bound.depth <= executed.depth;
    }),
    { numRuns: 3000 },
  );
  t.ok(checked > 1000, `${checked} documents compared with measureOperation, ${exact} of them exactly`);
  t.same(tokenBounds('{ a: flags { name } b: flags { ... on Flag { name } } }', null), { fields: 4, depth: 2 }, 'aliases and inline fragments');
  t.same(tokenBounds('query A { a { b { c } } } query B { d }', 'B'), { fields: 1, depth: 1 }, 'the named operation');
  t.same(tokenBounds('query A { a { b { c } } } query B { d }', null), { fields: 3, depth: 3 }, 'no name: the largest');
  t.same(tokenBounds('{ a(x: {b: {c: 1}}) @d(e: "{f g}") }', null), { fields: 1, depth: 1 }, 'arguments, directives and strings hold no fields');
  t.same(tokenBounds('{ a b c "unterminated', null), { fields: 3, depth: 1 }, 'a lexical error: what was counted before it');
});

t.test('a document far over the limit is refused on its tokens: never parsed', async (t) => {
  const ex = new GraphQLExecutor(createLogger('silent'), { maxDepth: 15, maxEvaluations: 100, maxFields: 1000 });
  // Each a new document (a cached refusal would hide the work), one with a syntax error at its end.
  for (const suffix of ['', ' }}} !!']) {
    for (let i = 0; i < 5; i++) {
      const p = ex.prepare(`{ v${i}: __typename ${Array.from({ length: 5000 }, (_, k) => `a${k}:flags{name}`).join(' ')} }${suffix}`, null);
      t.equal(p.ok, false);
      if (!p.ok) t.match(p.errors[0].message, /at least 10001 fields \(fragments expanded\); VEXIL_GRAPHQL_MAX_FIELDS allows at most 1000/);
    }
  }
  t.equal(ex.parses, 0, '10 documents of 5,000 aliases refused without a parse');
  t.equal(ex.compilations, 10, 'each was a cache miss');
  const atLimit = ex.prepare(`{ ${Array.from({ length: 500 }, (_, k) => `a${k}:flags{name}`).join(' ')} }`, null);
  t.equal(atLimit.ok, true, '1,000 fields: parsed, validated and compiled');
  t.equal(ex.parses, 1);
  const viaFragments = ex.prepare(`{ ...F ...F ...F } fragment F on Query { ${Array.from({ length: 200 }, (_, k) => `b${k}: flags { name }`).join(' ')} }`, null);
  t.equal(viaFragments.ok, false, 'under the bound on its tokens, over the limit once fragments are expanded');
  if (!viaFragments.ok) t.match(viaFragments.errors[0].message, /selects 1200 fields \(fragments expanded\)/);
  t.equal(ex.parses, 2, 'that one needed its parse');
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
