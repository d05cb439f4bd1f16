/**
 * Evaluation plans end to end: over HTTP, on the front thread (VEXIL_EVAL_WORKERS=0) and in the
 * worker pool (every batch handed off), a planned document answers exactly the bytes of the same
 * document made unplannable by `@include(if: true)` on every field (graphql-jit answers that one).
 * The byte-level comparison against graphql-jit on one prepared document is plan.test.ts.
 */
import t, { type Test } from 'tap';
import { createKey, startTestNode, type TestNode } from '../../helpers/node.js';

const bool = [
  { key: 'on', value: true, valueType: 'boolean' },
  { key: 'off', value: false, valueType: 'boolean' },
];
const JSON_VALUE = { text: 'a "quoted" \\ line\u2028', n: [1, 2.5, -3e-7, null], ok: false, deep: { é: {} } };

async function seed(t: Test, n: TestNode): Promise<string> {
  const rest = (method: string, path: string, body: unknown) => n.req(method, path, { key: n.adminKey, body });
  for (let i = 0; i < 5; i++) {
    t.equal((await rest('POST', '/api/flags', { name: `b${i}`, project: 'default', type: 'boolean', variants: bool })).status, 201);
    const c = await rest('POST', `/api/flags/b${i}/configs`, {
      stage: 'production', enabled: i !== 3, defaultVariantKey: 'off', rolloutPercentage: i === 4 ? 0 : 100,
      rules: [{ priority: 1, conditions: [{ field: 'country', operator: '==', value: 'NL' }], allocations: [{ variantKey: 'on', percentage: 100 }] }],
    });
    t.equal(c.status, 200, `flag b${i} configured`);
  }
  const j = await rest('POST', '/api/flags', { name: 'j', project: 'default', type: 'json', variants: [{ key: 'v', value: JSON_VALUE, valueType: 'json' }, { key: 'w', value: 'w', valueType: 'json' }] });
  t.equal(j.status, 201, 'flag j created');
  t.equal((await rest('POST', '/api/flags/j/configs', { stage: 'production', enabled: true, defaultVariantKey: 'v', rolloutPercentage: 100 })).status, 200);
  return createKey(n, { permissions: ['CanEvaluate'], application: 'default' });
}

const FULL = '{ key variant reason { code message ruleId } }';
const field = (alias: string, args: string, include: boolean) => `${alias}: evaluate(${args})${include ? ' @include(if: true)' : ''} ${FULL}`;
function documents(include: boolean): [string, Record<string, unknown> | undefined][] {
  const batch = Array.from({ length: 100 }, (_, i) =>
    field(`e${i}`, `key: "${i % 6 === 5 ? 'j' : `b${i % 6}`}", userId: "u${i}", stage: "production", context: {country: "${i % 2 === 0 ? 'NL' : 'DE'}"}`, include),
  ).join(' ');
  return [
    [`{ ${batch} }`, undefined],
    [`query($k: String!, $c: Any) { ${field('a', 'key: $k, userId: "u", stage: "production", context: $c', include)} ${field('b', 'key: "j", userId: "u", stage: "production"', include)} }`, { k: 'b0', c: { country: 'NL' } }],
  ];
}

for (const [label, env] of [
  ['front thread', { VEXIL_EVAL_WORKERS: '0' }],
  ['worker pool', { VEXIL_EVAL_WORKERS: '2', VEXIL_EVAL_HANDOFF: 'always' }],
] as const) {
  t.test(label, async (t) => {
    const n = await startTestNode(t, { env: { ...env, VEXIL_GRAPHQL_MAX_EVALUATIONS: '100' } });
    const key = await seed(t, n);
    const planned = documents(false);
    const generic = documents(true);
    for (let d = 0; d < planned.length; d++) {
      const post = (query: string, variables: Record<string, unknown> | undefined) =>
        n.req('POST', '/api/graphql', { key, body: variables === undefined ? { query } : { query, variables } });
      // Twice: the second request runs the cached plan.
      for (let round = 0; round < 2; round++) {
        const a = await post(...planned[d]);
        const b = await post(...generic[d]);
        t.equal(a.status, 200);
        t.notOk(JSON.parse(a.text).errors, `document ${d}: no errors`);
        t.equal(a.text, b.text, `document ${d} round ${round}: the same bytes as graphql-jit`);
      }
    }
    const j = JSON.parse((await n.req('POST', '/api/graphql', { key, body: { query: documents(false)[1][0], variables: { k: 'j' } } })).text);
    t.same(j.data.a.variant, JSON_VALUE, 'a JSON variant comes back whole');
  });
}
