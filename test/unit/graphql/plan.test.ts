/**
 * Evaluation plans (src/graphql/plan.ts) answer byte for byte what graphql-jit answers: every
 * document here runs through `run` (the plan when there is one) and `runGeneric` (graphql-jit
 * only) against the same snapshot and clock, and the answers and the evaluation counts must be
 * identical. Covers every reason code, Any variants of every JSON type, missing flags, scope and
 * permission errors, variables (absent, null, wrong type) and the documents that must fall back.
 * HTTP end to end, front thread and pool: plan-http.test.ts.
 */
import t from 'tap';
import type { Authenticated } from '../../../src/auth/authenticate.js';
import type { Permission } from '../../../src/auth/permissions.js';
import { REASON_CODES, type Flag, type FlagConfig, type Organization, type ReasonCode } from '../../../src/domain/types.js';
import { buildSnapshot } from '../../../src/engine/index.js';
import { GraphQLExecutor } from '../../../src/graphql/execute.js';
import { runPlan } from '../../../src/graphql/plan.js';
import type { GraphQLContext } from '../../../src/graphql/evaluation-resolvers.js';
import { EvalCounts } from '../../../src/ops/eval-counts.js';
import { createLogger } from '../../../src/util/log.js';

const NOW = Date.parse('2026-01-15T12:00:00Z');
const at = new Date(NOW - 86_400_000).toISOString();
const org: Organization = {
  id: 'o1', name: 'plan', subscriptionActive: true, environments: ['production', 'staging'], applications: ['default', 'other'],
  killSwitch: [{ flag: 'f-kill', application: null, environment: null }], version: 7,
} as Organization;

const bool = [{ key: 'on', value: true, valueType: 'boolean' }, { key: 'off', value: false, valueType: 'boolean' }];
const ANY_VALUES: unknown[] = [
  'plain', 'quote " back \\ slash \n newline \u2028 \u0001 é 😀', 0, -0, 1.5, 1e21, -7, true, false, null,
  [], [1, 'two', null, { three: [true] }], {}, { nested: { list: [1, 2, { deep: 'x' }], empty: {} }, 'odd key "': 1 },
];

function flag(name: string, extra: Partial<Flag> = {}): Flag {
  return {
    name, project: 'default', type: 'boolean', description: null, tags: [], isArchived: false, variants: bool,
    environments: ['production', 'staging'], dependencies: [], createdAt: at, updatedAt: at, ...extra,
  } as Flag;
}
function config(extra: Partial<FlagConfig> = {}): FlagConfig {
  return {
    stage: 'production', clientId: null, enabled: true, defaultVariantKey: 'off', rolloutPercentage: 100, rules: [],
    activeFrom: null, activeUntil: null, enrollmentCutoff: null, ...extra,
  };
}
const nlRule = { id: 'nl', priority: 1, conditions: [{ field: 'country', operator: '==', value: 'NL' }], allocations: [{ variantKey: 'on', percentage: 100 }] };

const flags: [Flag, FlagConfig[]][] = [
  [flag('f-rule'), [config({ rules: [nlRule] as FlagConfig['rules'] })]],
  [flag('f-default'), [config()]],
  [flag('f-client'), [config(), config({ clientId: 'ios', defaultVariantKey: 'on' })]],
  [flag('f-kill'), [config()]],
  [flag('f-archived', { isArchived: true }), [config()]],
  [flag('f-future'), [config({ activeFrom: new Date(NOW + 86_400_000).toISOString() })]],
  [flag('f-expired'), [config({ activeUntil: new Date(NOW - 3_600_000).toISOString() })]],
  [flag('f-otherenv', { environments: ['staging'] }), [config()]],
  [flag('f-disabled'), [config({ enabled: false })]],
  [flag('f-dep', { dependencies: [{ flag: 'f-disabled', variants: null }] } as Partial<Flag>), [config({ defaultVariantKey: 'on' })]],
  [flag('f-noconfig'), []],
  [flag('f-rollout0'), [config({ rolloutPercentage: 0 })]],
  [flag('f-cutoff'), [config({ enrollmentCutoff: 0 })]],
  [flag('f-novariants', { variants: [] }), [config({ defaultVariantKey: 'on' })]],
  [flag('f-app', { project: 'other' }), [config()]],
  ...ANY_VALUES.map((value, i): [Flag, FlagConfig[]] => [
    flag(`f-any-${i}`, { type: 'json', variants: [{ key: 'v', value, valueType: 'json' }] } as Partial<Flag>),
    [config({ defaultVariantKey: 'v' })],
  ]),
];
const snapshot = buildSnapshot(org, flags.map(([f]) => f), new Map(flags.map(([f, c]) => [f.name, c])));

function principal(permissions: Permission[], application: string | null = null, environment: string | null = null): Authenticated {
  return { principal: { keyId: 'k', keyName: 'k', orgId: 'o1', permissions: new Set(permissions), application, environment }, snapshot };
}
const PRINCIPALS: Record<string, Authenticated> = {
  evaluator: principal(['CanEvaluate'], 'default'),
  'env-scoped': principal(['CanEvaluate'], 'default', 'production'),
  'other-env': principal(['CanEvaluate'], 'default', 'staging'),
  'org-wide': principal(['CanEvaluate']),
  reader: principal(['CanRead'], 'default'),
};

const executor = new GraphQLExecutor(createLogger('silent'), { maxDepth: 15, maxEvaluations: 1000 });

function context(auth: Authenticated): { ctx: GraphQLContext; counts: Map<ReasonCode, number> } {
  const evalCounts = new EvalCounts();
  const counts = new Map<ReasonCode, number>();
  return {
    // What an evaluation worker gives a document: the evaluation environment, no runtime.
    ctx: { env: { peek: () => snapshot, now: () => NOW, evalCounts }, rt: null, auth, deferredAny: false },
    get counts() {
      counts.clear();
      evalCounts.drain((r, n) => counts.set(r, n));
      return counts;
    },
  };
}

const FULL = '{ key variant reason { code message ruleId } }';
const alias = (i: number, args: string, sel = FULL) => `e${i}: evaluate(${args}) ${sel}`;
const lit = (f: string, extra = '') => `key: "${f}", userId: "u1", stage: "production"${extra}`;

const allFlags = flags.map(([f]) => f.name).filter((n) => n !== 'f-app');
const seenCodes = new Set<string>();

interface Case {
  name: string;
  query: string;
  variables?: Record<string, unknown> | null;
  /** The plan answers (true) or hands the request to graphql-jit (false: no plan, or it gives up). */
  planned: boolean;
  who?: keyof typeof PRINCIPALS;
}

const CASES: Case[] = [
  { name: 'single', query: `{ ${alias(0, lit('f-rule', ', context: {country: "NL"}'))} }`, planned: true },
  {
    name: 'every flag, every reason code, Any of every JSON type',
    query: `{ ${allFlags.map((f, i) => alias(i, lit(f, ', context: {country: "NL", n: 1.5, l: [1, "x"], o: {p: null}}'))).join(' ')} }`,
    planned: true,
  },
  {
    name: 'field order, sub-field aliases, partial selections',
    query: `{ a: evaluate(${lit('f-rule', ', context: {country: "NL"}')}) { reason { why: message ruleId c: code } variant }
      b: evaluate(${lit('f-default')}) { variant } c: evaluate(${lit('f-rule')}) { reason { ruleId } }
      d: evaluate(${lit('f-any-3')}) { k: key v: variant k2: key } }`,
    planned: true,
  },
  { name: 'clientId literal and null', query: `{ a: evaluate(${lit('f-client', ', clientId: "ios"')}) ${FULL} b: evaluate(${lit('f-client', ', clientId: null, context: null')}) ${FULL} }`, planned: true },
  { name: 'block string literal', query: `{ evaluate(key: """f-rule""", userId: "u\\u00e9", stage: "production", context: {country: """NL"""}) ${FULL} }`, planned: true },
  { name: 'named query among several', query: `query A { evaluate(${lit('f-default')}) ${FULL} } query B { __typename }`, planned: true },
  { name: 'stage spelled differently', query: `{ evaluate(key: "f-default", userId: "u1", stage: "PRODUCTION") ${FULL} }`, planned: true },
  { name: 'environment-scoped key in scope', query: `{ evaluate(${lit('f-default')}) ${FULL} }`, planned: true, who: 'env-scoped' },
  // Field errors: graphql-jit answers (and counts the fields that did answer).
  { name: 'missing flag among others', query: `{ ${alias(0, lit('f-rule'))} ${alias(1, lit('nope'))} ${alias(2, lit('f-default'))} }`, planned: false },
  { name: 'unknown stage', query: `{ ${alias(0, lit('f-default'))} ${alias(1, 'key: "f-default", userId: "u1", stage: "mars"')} }`, planned: false },
  { name: 'application scope', query: `{ ${alias(0, lit('f-default'))} ${alias(1, lit('f-app'))} }`, planned: false },
  { name: 'environment scope', query: `{ ${alias(0, lit('f-default'))} }`, planned: false, who: 'other-env' },
  { name: 'organization-wide key', query: `{ ${alias(0, lit('f-default'))} }`, planned: false, who: 'org-wide' },
  { name: 'no CanEvaluate', query: `{ ${alias(0, lit('f-default'))} }`, planned: false, who: 'reader' },
  { name: 'empty userId literal', query: `{ ${alias(0, 'key: "f-default", userId: "", stage: "production"')} }`, planned: false },
  { name: 'context not an object', query: `{ ${alias(0, lit('f-default', ', context: [1]'))} }`, planned: false },
  // Documents the plan does not model.
  { name: '@include', query: `{ ${alias(0, lit('f-rule'))} e1: evaluate(${lit('f-default')}) @include(if: true) ${FULL} }`, planned: false },
  { name: '@skip', query: `{ ${alias(0, lit('f-rule'))} e1: evaluate(${lit('f-default')}) @skip(if: true) ${FULL} }`, planned: false },
  { name: 'nested @include', query: `{ evaluate(${lit('f-rule')}) { key variant @include(if: false) } }`, planned: false },
  { name: '__typename at the root', query: `{ __typename ${alias(0, lit('f-rule'))} }`, planned: false },
  { name: '__typename inside', query: `{ evaluate(${lit('f-rule')}) { __typename key } }`, planned: false },
  { name: 'fragment', query: `{ evaluate(${lit('f-rule')}) { ...F } } fragment F on Evaluation { key variant }`, planned: false },
  { name: 'inline fragment', query: `{ evaluate(${lit('f-rule')}) { ... on Evaluation { key } variant } }`, planned: false },
  { name: 'merged response keys', query: `{ e: evaluate(${lit('f-rule')}) { key } e: evaluate(${lit('f-rule')}) { variant } }`, planned: false },
  { name: 'variable nested in a context literal', query: `query($c: String) { evaluate(${lit('f-rule', ', context: {country: $c}')}) ${FULL} }`, variables: { c: 'NL' }, planned: false },
  { name: 'variable with a default', query: `query($k: String! = "f-rule") { evaluate(key: $k, userId: "u", stage: "production") ${FULL} }`, variables: {}, planned: false },
  { name: 'not evaluate', query: `{ environments }`, planned: false },
];

const VAR_QUERY = `query($k: String!, $u: String!, $s: String!, $c: Any, $cl: String) {
  a: evaluate(key: $k, userId: $u, stage: $s, context: $c, clientId: $cl) ${FULL}
  b: evaluate(key: "f-any-11", userId: $u, stage: "production") ${FULL}
}`;
const VAR_CASES: [string, Record<string, unknown> | null, boolean][] = [
  ['all given', { k: 'f-rule', u: 'u1', s: 'production', c: { country: 'NL' }, cl: 'ios' }, true],
  ['optional absent', { k: 'f-client', u: 'u1', s: 'production' }, true],
  ['optional null', { k: 'f-client', u: 'u1', s: 'production', c: null, cl: null }, true],
  ['context with __proto__ key', JSON.parse('{"k":"f-rule","u":"u","s":"production","c":{"__proto__":{"country":"NL"},"country":"NL"}}') as Record<string, unknown>, true],
  ['required absent', { u: 'u1', s: 'production' }, false],
  ['required null', { k: null, u: 'u1', s: 'production' }, false],
  ['no variables at all', null, false],
  ['String given a number', { k: 'f-rule', u: 1, s: 'production' }, false],
  ['context a string', { k: 'f-rule', u: 'u1', s: 'production', c: 'NL' }, false],
  ['clientId empty', { k: 'f-client', u: 'u1', s: 'production', cl: '' }, false],
  ['missing flag', { k: 'nope', u: 'u1', s: 'production' }, false],
];
for (const [name, variables, planned] of VAR_CASES) CASES.push({ name: `variables: ${name}`, query: VAR_QUERY, variables, planned });

for (const c of CASES) {
  t.test(c.name, async (t) => {
    const op = c.query.startsWith('query A') ? 'A' : null;
    const p = executor.prepare(c.query, op);
    t.ok(p.ok, 'valid document');
    if (!p.ok) return;
    const auth = PRINCIPALS[c.who ?? 'evaluator'];
    const viaRun = context(auth);
    const viaJit = context(auth);
    const variables = c.variables ?? null;
    const planned = p.plan === null ? null : runPlan(p.plan, context(auth).ctx, variables);
    t.equal(planned !== null, c.planned, c.planned ? 'the plan answers' : 'graphql-jit answers');
    const a = await executor.run(p, viaRun.ctx, variables);
    const b = await executor.runGeneric(p, viaJit.ctx, variables);
    t.equal(a, b, 'the same bytes as graphql-jit');
    if (planned !== null) t.equal(planned, b, 'the plan itself answers those bytes');
    t.same([...viaRun.counts], [...viaJit.counts], 'the same evaluations counted');
    const parsed = JSON.parse(b) as { data?: Record<string, { reason?: { code?: string; c?: string } } | null> };
    for (const v of Object.values(parsed.data ?? {})) if (v?.reason?.code) seenCodes.add(v.reason.code);
  });
}

t.test('every reason code was compared', async (t) => {
  t.same([...seenCodes].sort(), [...REASON_CODES].sort());
});

t.test('the plan is compiled once per document, with the cached compiled query', async (t) => {
  const q = `{ ${alias(0, lit('f-default'))} }`;
  const p1 = executor.prepare(q, null);
  const p2 = executor.prepare(q, null);
  t.ok(p1.ok && p1.plan !== null);
  t.equal(p1, p2, 'the cache entry, plan included, is reused');
});
