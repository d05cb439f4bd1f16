/**
 * GraphQL fuzzing against a running node (docs/limits.md, "Fuzzing"): documents assembled from the schema's fields
 * with generated arguments, aliases, fragments and nesting, random text, and generated variables
 * (deep and wide ones included). Every answer keeps harness.ts's invariants: no 5xx but a
 * documented 503, transport errors problem+json, every GraphQL error with `extensions.code` and
 * none INTERNAL.
 */
import fc from 'fast-check';
import t from 'tap';
import { createFlag, createKey, startTestNode, upsertConfig } from '../../helpers/node.js';
import { abusiveJson, anyJson, contentType, fuzz, keyHeader, scaled, type Sent } from './harness.js';

const str = fc.oneof(fc.constantFrom('f', 'g', 'production', 'development', 'default', '', '__MAGIC_DATE__0123abcd_', '$x'), fc.string({ maxLength: 20 }));
const literal: fc.Arbitrary<string> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    str.map((s) => JSON.stringify(s)),
    fc.integer().map(String),
    fc.double({ noNaN: true, noDefaultInfinity: true }).map((d) => String(d)),
    fc.constantFrom('true', 'false', 'null', 'CanRead', '$v', '$ctx', '1e999'),
    fc.array(tie('value'), { maxLength: 3 }).map((a) => `[${a.join(', ')}]`),
    fc.array(fc.tuple(fc.constantFrom('a', 'b', 'country', 'name', 'stage', '__proto__'), tie('value')), { maxLength: 3 }).map((kv) => `{${kv.map(([k, v]) => `${k}: ${v}`).join(', ')}}`),
  ),
})).value as fc.Arbitrary<string>;

const args = (names: string[]) =>
  fc.subarray(names).chain((ns) => fc.tuple(...ns.map((n) => literal.map((v) => `${n}: ${v}`))).map((a) => (a.length ? `(${a.join(', ')})` : '')));

const evalSel = fc.subarray(['key', 'variant', 'reason { code message ruleId }', '__typename'], { minLength: 1 }).map((s) => s.join(' '));
const flagSel = fc.subarray(['name', 'project', 'type', 'tags', 'isArchived', 'variants { key value valueType }', 'environments', 'createdAt', 'dependencies { flag variants }', '__typename'], { minLength: 1 }).map((s) => s.join(' '));

const rootField = fc.oneof(
  fc.tuple(args(['key', 'userId', 'stage', 'context', 'clientId']), evalSel).map(([a, s]) => `evaluate${a} { ${s} }`),
  fc.tuple(args(['key', 'userId', 'stage', 'context']), evalSel).map(([a, s]) => `explainEvaluation${a} { ${s} }`),
  flagSel.map((s) => `flags { ${s} }`),
  fc.tuple(args(['name']), flagSel).map(([a, s]) => `flag${a} { ${s} }`),
  args(['name', 'stage', 'clientId']).map((a) => `flagConfigs${a} { stage enabled rolloutPercentage rules { id priority conditions { field operator value } } }`),
  fc.constantFrom('environments', 'applications', 'killSwitch { flag }', 'managementKeys { id name permissions }', '__typename', '__schema { types { name } }', '__type(name: "Flag") { fields { name } }', 'viewer { id }', 'nope'),
  fc.tuple(args(['input']), flagSel).map(([a, s]) => `createFlag${a} { ${s} }`),
  fc.tuple(args(['name', 'input']), flagSel).map(([a, s]) => `updateFlag${a} { ${s} }`),
  args(['name', 'input']).map((a) => `upsertFlagConfig${a} { stage }`),
  args(['from', 'to']).map((a) => `renameEnvironment${a}`),
  args(['environments']).map((a) => `replaceEnvironments${a}`),
  args(['rules']).map((a) => `replaceKillSwitch${a} { flag }`),
  args(['name']).map((a) => `deleteFlag${a}`),
  args(['id']).map((a) => `disableManagementKey${a} { id }`),
);

const document = fc.oneof(
  { weight: 10, arbitrary: fc.tuple(fc.constantFrom('', 'query ', 'mutation ', 'query Q($v: Any, $ctx: Any) ', 'subscription ', 'query Q($v: String!) '), fc.array(fc.tuple(fc.option(fc.constantFrom('a', 'b', 'c1', 'e')), rootField), { minLength: 1, maxLength: 6 })).map(([op, fields]) => `${op}{ ${fields.map(([al, f]) => (al ? `${al}: ${f}` : f)).join(' ')} }`) },
  { weight: 1, arbitrary: fc.integer({ min: 50, max: 3000 }).map((k) => `{ ${Array.from({ length: k }, (_, i) => `a${i}: __typename`).join(' ')} }`) },
  { weight: 1, arbitrary: fc.integer({ min: 20, max: 400 }).map((d) => `{ ${'flags { '.repeat(d)}name${' }'.repeat(d)} }`) },
  { weight: 1, arbitrary: fc.string({ maxLength: 200 }) },
  { weight: 1, arbitrary: fc.constantFrom('{ ...F } fragment F on Query { ...F }', '{ ...A ...A } fragment A on Query { flags { name } }', 'query A { __typename } query B { __typename }', '{', '', '{ evaluate }') },
);

function requests(keys: string[]): fc.Arbitrary<Sent> {
  const body = fc.oneof(
    { weight: 12, arbitrary: fc.record({ query: document, variables: fc.oneof(fc.constant(undefined), fc.record({ v: abusiveJson, ctx: abusiveJson }, { requiredKeys: [] }), anyJson), operationName: fc.oneof(fc.constant(undefined), fc.constantFrom('Q', 'A', 'nope'), anyJson) }, { requiredKeys: ['query'] }).map((b) => JSON.stringify(b)) },
    { weight: 1, arbitrary: anyJson.map((v) => JSON.stringify(v)) },
    { weight: 1, arbitrary: fc.string() },
  );
  return fc.record({ key: keyHeader(keys), ct: contentType, body }).map(({ key, ct, body }) => ({ method: 'POST', path: '/api/graphql', headers: { ...key, ...ct }, body }));
}

t.test('GraphQL fuzz', { timeout: 600_000 }, async (t) => {
  const n = await startTestNode(t, { env: { VEXIL_RATE_LIMIT_EVAL: '1000000000', VEXIL_RATE_LIMIT_MGMT: '1000000000', VEXIL_RATE_LIMIT_AUTH_FAILURES: '1000000000', VEXIL_EVAL_WORKERS: '1' } });
  await createFlag(n, 'f');
  await upsertConfig(n, 'f', {});
  const keys = [n.adminKey, await createKey(n, { permissions: ['CanEvaluate'], application: 'default' }), await createKey(n, { permissions: ['CanRead', 'CanEvaluate'], application: 'default' })];
  const started = Date.now();
  const total = await fuzz(t, n.url, requests(keys), scaled(8_000), true);
  t.ok(total >= scaled(8_000), `${total} cases in ${Date.now() - started} ms`);
  t.equal((await n.req('GET', '/healthz')).status, 200, 'the node is alive');
});
