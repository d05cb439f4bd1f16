/**
 * Evaluation context limits (docs/limits.md, "Evaluation contexts"): the pure counting function, then REST and GraphQL (literal,
 * variable, literal with a nested variable, variable default) over real HTTP, with the worker pool,
 * and a 200,000-deep context that must get 400 rather than a crash.
 */
import t from 'tap';
import { measureContext } from '../../../src/domain/validation.js';
import { createFlag, createKey, evaluate, expectProblem, startTestNode, upsertConfig } from '../../helpers/node.js';
import { expectRequestError, gql } from '../../helpers/graphql.js';

const L = { maxDepth: 32, maxValues: 10_000 };
const nest = (d: number): unknown => {
  let v: unknown = 1;
  for (let i = 1; i < d; i++) v = { a: v };
  return { a: v }; // depth d
};
const deepText = (d: number) => '['.repeat(d) + ']'.repeat(d);

t.test('counting', async (t) => {
  t.match(measureContext({}, L), { depth: 1, values: 1, exceeded: null }, 'the context object is depth 1 and one value');
  t.match(measureContext({ a: { b: 1 } }, L), { depth: 2, values: 3, exceeded: null }, '{"a": {"b": 1}} has depth 2, 3 values');
  t.match(measureContext({ a: [1, 2, [3]], b: 'x', c: null }, L), { depth: 3, values: 8, exceeded: null }, 'arrays nest and count; keys do not');
  t.match(measureContext(nest(32), L), { depth: 32, exceeded: null }, 'depth 32 is allowed');
  t.match(measureContext(nest(33), L), { exceeded: 'depth' }, 'depth 33 is not');
  const wide = Object.fromEntries(Array.from({ length: 9_999 }, (_, i) => [`k${i}`, i]));
  t.match(measureContext(wide, L), { values: 10_000, exceeded: null }, '10,000 values (object included) are allowed');
  t.match(measureContext({ ...wide, one: 1 }, L), { exceeded: 'values' }, '10,001 are not');
  t.match(measureContext({ a: new Array(1_000_000).fill(0) }, L), { exceeded: 'values' }, 'a huge array is refused before it is walked');
  t.match(measureContext(JSON.parse(deepText(200_000)), L), { exceeded: 'depth' }, '200,000 levels: no stack overflow');
});

for (const workers of ['0', '1']) {
  t.test(`over HTTP (VEXIL_EVAL_WORKERS=${workers})`, async (t) => {
    const n = await startTestNode(t, { env: { VEXIL_EVAL_WORKERS: workers, VEXIL_CONTEXT_MAX_DEPTH: '4', VEXIL_CONTEXT_MAX_VALUES: '20' } });
    await createFlag(n, 'f');
    t.equal((await upsertConfig(n, 'f', {})).status, 200);
    const key = await createKey(n, { permissions: ['CanEvaluate'], application: 'default' });
    const body = (context: unknown) => ({ userId: 'u', stage: 'production', context });

    t.equal((await evaluate(n, key, 'f', body(nest(4)))).status, 200, 'REST: depth 4 allowed');
    expectProblem(t, await evaluate(n, key, 'f', body(nest(5))), 400, 'BAD_REQUEST', /VEXIL_CONTEXT_MAX_DEPTH \(4 levels\)/);
    t.equal((await evaluate(n, key, 'f', body({ a: Array(18).fill(1) }))).status, 200, 'REST: 20 values allowed');
    expectProblem(t, await evaluate(n, key, 'f', body({ a: Array(19).fill(1) })), 400, 'BAD_REQUEST', /VEXIL_CONTEXT_MAX_VALUES \(20 values\)/);
    const huge = await n.req('POST', '/flags/f', {
      key,
      raw: `{"userId":"u","stage":"production","context":{"a":${deepText(200_000)}}}`,
      headers: { 'content-type': 'application/json' },
    });
    expectProblem(t, huge, 400, 'BAD_REQUEST', /VEXIL_CONTEXT_MAX_DEPTH/);
    // The front stops keeping a too-deep body as it arrives; authentication still comes first.
    const deepWrongKey = await n.req('POST', '/flags/f', {
      key: 'f'.repeat(64),
      raw: `{"userId":"u","stage":"production","context":{"a":${deepText(200_000)}}}`,
      headers: { 'content-type': 'application/json' },
    });
    expectProblem(t, deepWrongKey, 401, 'UNAUTHENTICATED', 'a deep body with an unknown key is still a 401');

    const q = (ctx: string, vars = '') =>
      `query${vars} { a: evaluate(key: "f", userId: "u", stage: "production") { key } b: evaluate(key: "f", userId: "u", stage: "production", context: ${ctx}) { key } }`;
    const ok = await gql(n, key, q('{a: {b: {c: 1}}}'));
    t.equal(ok.body.data?.b?.key, 'off', 'GraphQL literal of depth 3 evaluates');
    expectRequestError(t, await gql(n, key, q('{a: {b: {c: {d: {e: 1}}}}}')), /VEXIL_CONTEXT_MAX_DEPTH \(4 levels\)/, 'literal too deep');
    expectRequestError(t, await gql(n, key, q(`{a: [${Array(19).fill(1).join(',')}]}`)), /VEXIL_CONTEXT_MAX_VALUES/, 'literal too wide');
    expectRequestError(t, await gql(n, key, q('$c', '($c: Any)'), { c: nest(5) }), /VEXIL_CONTEXT_MAX_DEPTH/, 'variable too deep');
    t.equal((await gql(n, key, q('$c', '($c: Any)'), { c: nest(4) })).body.data?.b?.key, 'off', 'variable of depth 4 evaluates');
    expectRequestError(t, await gql(n, key, q('{x: {y: {v: $c}}}', '($c: Any)'), { c: { z: { w: 1 } } }), /VEXIL_CONTEXT_MAX_DEPTH/, 'variable nested in a literal');
    t.equal((await gql(n, key, q('{x: $c}', '($c: Any)'), { c: { z: { w: 1 } } })).body.data?.b?.key, 'off', 'nested variable within the limit');
    expectRequestError(t, await gql(n, key, q('$c', '($c: Any = {a: {b: {c: {d: {e: 1}}}}})')), /VEXIL_CONTEXT_MAX_DEPTH/, 'variable default too deep');
    const deepVar = await n.req('POST', '/api/graphql', {
      key,
      raw: `{"query":${JSON.stringify(q('$c', '($c: Any)'))},"variables":{"c":${deepText(200_000)}}}`,
      headers: { 'content-type': 'application/json' },
    });
    expectRequestError(t, deepVar as any, /VEXIL_CONTEXT_MAX_DEPTH/, '200,000-deep variable');
    t.equal((await n.req('GET', '/healthz')).status, 200, 'the node is alive');
  });
}

/** The byte-at-a-time scan the fast one (quote to quote inside strings) must agree with. */
function referenceDeeperThan(bytes: Uint8Array, max: number): boolean {
  let depth = 0;
  let inString = false;
  let escaped = false;
  for (const c of bytes) {
    if (inString) {
      if (escaped) escaped = false;
      else if (c === 0x5c) escaped = true;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > max) return true;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return false;
}

t.test('JsonDepthScanner: fed in chunks or at once, the verdict of a byte-by-byte scan', async (t) => {
  const fc = (await import('fast-check')).default;
  const { JsonDepthScanner, jsonDeeperThan } = await import('../../../src/domain/validation.js');
  // Short tokens and long runs (strings past the scanner's 64-byte plain loop, backslash runs).
  const piece = fc.oneof(
    fc.constantFrom('{', '}', '[', ']', '"', '\\', 'a', ':', ','),
    fc.tuple(fc.constantFrom('a', '\\', '"', '['), fc.integer({ min: 1, max: 150 })).map(([c, k]) => c.repeat(k)),
  );
  const text = fc.array(piece, { maxLength: 40 }).map((a) => a.join(''));
  fc.assert(
    fc.property(text, fc.array(fc.nat(4000), { maxLength: 5 }), fc.integer({ min: 0, max: 6 }), fc.boolean(), (s, cuts, max, plain) => {
      const bytes = Buffer.from(s);
      const expected = referenceDeeperThan(bytes, max);
      const at = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
      const sc = new JsonDepthScanner(max);
      let prev = 0;
      let verdict = false;
      for (const c of [...at, bytes.length]) {
        // Chunks as uWebSockets.js hands them over (plain Uint8Arrays) or as Buffers.
        const chunk = plain ? new Uint8Array(bytes.subarray(prev, c)) : bytes.subarray(prev, c);
        verdict = sc.feed(chunk) || verdict;
        prev = c;
      }
      return verdict === expected && jsonDeeperThan(bytes, max) === expected && sc.tooDeep === verdict;
    }),
    { numRuns: 10000 },
  );
  const sc = new JsonDepthScanner(1);
  t.equal(sc.feed(Buffer.from('{"a":"\\')), false, 'an escape at the end of a chunk');
  t.equal(sc.feed(Buffer.from('"[[{"}')), false, '... still escapes the first byte of the next chunk');
  t.pass('10,000 generated texts and splits agree with the byte-by-byte scan');
});

t.test('BodyReader: a body found too deep is no longer kept', async (t) => {
  const { BodyReader } = await import('../../../src/http/exchange.js');
  const inc = (contentType = 'application/json') => ({ contentType, body: Buffer.alloc(0), bodyTooDeep: null }) as any;
  const route = { method: 'post', pattern: '/x', handler: () => ({ status: 200 }), maxBodyDepth: 3 } as any;

  const deep = inc();
  const r = new BodyReader(route, deep);
  t.ok(r.push(Buffer.from('{"a":{"b":'), true));
  t.ok(r.push(Buffer.from('[[[[[[[[['), true), 'too deep: accepted, not kept');
  t.ok(r.push(Buffer.alloc(100_000, 0x5b), true));
  r.finish(deep);
  t.equal(deep.bodyTooDeep, true, 'the verdict');
  t.equal(deep.body.length, 0, 'nothing of it is kept');

  const ok = inc();
  const r2 = new BodyReader(route, ok);
  r2.push(Buffer.from('{"a":{"b":'), true);
  r2.push(Buffer.from('[1]}}'), true);
  r2.finish(ok);
  t.same([ok.bodyTooDeep, ok.body.toString()], [false, '{"a":{"b":[1]}}'], 'depth 3 is kept whole');

  const text = inc('text/plain');
  const r3 = new BodyReader(route, text);
  r3.push(Buffer.from('[[[[[[['), true);
  r3.finish(text);
  t.same([text.bodyTooDeep, text.body.toString()], [null, '[[[[[[['], 'not JSON: not scanned (the handler answers 415)');

  const big = inc();
  const r4 = new BodyReader({ ...route, maxBodyDepth: undefined }, big);
  t.ok(r4.push(Buffer.alloc(1 << 20, 0x20), false), '1 MiB is allowed');
  t.equal(r4.push(Buffer.alloc(1, 0x20), false), false, 'one byte more is not (413)');
});

t.test('jsonDeeperThan: a byte scan, strings skipped', async (t) => {
  const { jsonDeeperThan } = await import('../../../src/domain/validation.js');
  const b = (s: string) => Buffer.from(s);
  t.equal(jsonDeeperThan(b('{"a":{"b":[1]}}'), 3), false, 'depth 3 within 3');
  t.equal(jsonDeeperThan(b('{"a":{"b":[1]}}'), 2), true, 'depth 3 over 2');
  t.equal(jsonDeeperThan(b('{"a":"[[[[{{{{\\"[[["}'), 1), false, 'brackets in strings (and escaped quotes) do not count');
  t.equal(jsonDeeperThan(b('['.repeat(200_000) + ']'.repeat(200_000)), 33), true, '200,000 levels');
});
