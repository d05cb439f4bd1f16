/**
 * REST ↔ GraphQL parity (docs/graphql.md: every field calls the service function REST calls, same checks): what one
 * writes the other reads identically, and `evaluate` answers exactly what `POST /flags/{name}`
 * answers for the same input, across the reason codes of docs/evaluation.md and the error cases.
 */
import t, { type Test } from 'tap';
import { createKey, evaluate, startTestNode, type TestNode } from '../../helpers/node.js';
import { CONFIG_FIELDS, FLAG_FIELDS, gql } from '../../helpers/graphql.js';

// REST evaluations go through the worker pool, GraphQL's run on the front thread: same engine, same answers.
const n = await startTestNode(t, { env: { VEXIL_EVAL_WORKERS: '2', VEXIL_EVAL_HANDOFF: 'always' } });
const admin = n.adminKey;
const rest = (method: string, path: string, body?: unknown, key = admin) => n.req(method, path, { key, body });

const bool = [
  { key: 'on', value: true, valueType: 'boolean' },
  { key: 'off', value: false, valueType: 'boolean' },
];

async function restFlag(name: string, extra: Record<string, unknown> = {}, config?: Record<string, unknown>) {
  const c = await rest('POST', '/api/flags', { name, project: 'default', type: 'boolean', variants: bool, ...extra });
  t.equal(c.status, 201, `REST create ${name}`);
  if (config) {
    const u = await rest('POST', `/api/flags/${name}/configs`, { stage: 'production', enabled: true, defaultVariantKey: 'off', rolloutPercentage: 100, ...config });
    t.equal(u.status, 200, `REST config ${name}: ${u.text}`);
  }
}

interface Scenario {
  flag: string;
  userId: string;
  stage?: string;
  context?: Record<string, unknown>;
  clientId?: string;
}

const EVAL_QUERY = `query($key: String!, $userId: String!, $stage: String!, $context: Any, $clientId: String) {
  evaluate(key: $key, userId: $userId, stage: $stage, context: $context, clientId: $clientId) { key variant reason { code message ruleId } }
}`;

/** REST `?explain=true` and GraphQL `evaluate` for one input; asserts they agree and returns the answer. */
async function both(t: Test, node: TestNode, key: string, s: Scenario) {
  const body: Record<string, unknown> = { userId: s.userId, stage: s.stage ?? 'production' };
  if (s.context !== undefined) body.context = s.context;
  if (s.clientId !== undefined) body.clientId = s.clientId;
  const r = await evaluate(node, key, s.flag, body, true);
  const g = await gql(node, key, EVAL_QUERY, { key: s.flag, ...body });
  const label = `${s.flag} for ${s.userId}`;
  if (r.status === 200) {
    t.notOk(g.body.errors, `${label}: GraphQL answers too`);
    const expected = { key: r.body.key, variant: r.body.variant, reason: { ...r.body.reason, ruleId: r.body.reason.ruleId ?? null } };
    t.same(g.body.data?.evaluate, expected, `${label}: same answer (${r.body.reason.code})`);
    return r.body as { key: string | null; variant: unknown; reason: { code: string; ruleId?: string } };
  }
  const e = g.body.errors?.[0];
  t.equal(g.body.data?.evaluate, null, `${label}: GraphQL field is null like REST's ${r.status}`);
  const restCode = r.body.code;
  if (e?.extensions.code === 'AUTH_NOT_AUTHORIZED') {
    t.equal(r.status, 403, `${label}: REST answers 403 where GraphQL says AUTH_NOT_AUTHORIZED`);
  } else {
    t.equal(e?.extensions.code, restCode, `${label}: same code ${restCode}`);
    t.equal(e?.extensions.status, r.status, `${label}: extensions.status is the REST status`);
  }
  return null;
}

t.test('created over REST, read over GraphQL: identical', async (t) => {
  await restFlag('rest-made', { description: 'from REST', tags: ['x'], environments: ['production'] }, {
    rules: [{ id: 'r1', priority: 3, conditions: [{ field: 'user.country', operator: '==', value: { nested: ['NL'] } }], allocations: [{ variantKey: 'on', percentage: 60 }, { variantKey: 'off', percentage: 40 }] }],
    activeFrom: '2021-01-01T00:00:00Z',
    enrollmentCutoff: 75,
  });
  const r = await rest('GET', '/api/flags/rest-made');
  const g = await gql(n, admin, `{ flag(name: "rest-made") { ${FLAG_FIELDS} configs { ${CONFIG_FIELDS} } } flags { ${FLAG_FIELDS} } }`);
  t.notOk(g.body.errors);
  t.same(g.body.data?.flag, r.body, 'flag(name) equals GET /api/flags/{name}');
  const list = await rest('GET', '/api/flags');
  t.same(g.body.data?.flags, list.body, 'flags equals GET /api/flags');
});

t.test('created over GraphQL, read over REST: identical', async (t) => {
  const g = await gql(n, admin, `mutation {
    createFlag(input: {name: "gql-made", project: "default", type: "string", description: null, tags: ["y"],
      variants: [{key: "a", value: "A", valueType: "string"}, {key: "b", value: "B", valueType: "string"}],
      dependencies: [{flag: "rest-made"}], environments: ["production"]}) { ${FLAG_FIELDS} }
    upsertFlagConfig(name: "gql-made", input: {stage: "production", clientId: "default:web", enabled: true, defaultVariantKey: "b", rolloutPercentage: 50,
      rules: [{priority: 1, conditions: [], allocations: [{variantKey: "a", percentage: 100}]}], activeUntil: "2999-01-01T00:00:00Z"}) { ${CONFIG_FIELDS} }
  }`);
  t.notOk(g.body.errors);
  const r = await rest('GET', '/api/flags/gql-made');
  t.equal(r.status, 200);
  const { configs, ...flag } = r.body;
  t.same(flag, g.body.data?.createFlag, 'GET /api/flags/{name} equals createFlag');
  t.same(configs, [g.body.data?.upsertFlagConfig], 'and its configs equal upsertFlagConfig');
  const upd = await rest('PUT', '/api/flags/gql-made', { description: 'via REST' });
  const after = await gql(n, admin, `{ flag(name: "gql-made") { ${FLAG_FIELDS} } }`);
  t.same(after.body.data?.flag, upd.body, 'a REST update reads the same over GraphQL');
});

t.test('the same failures give the same codes over both', async (t) => {
  const dup = await rest('POST', '/api/flags', { name: 'rest-made', project: 'default', type: 'boolean', variants: bool });
  const gdup = await gql(n, admin, `mutation { createFlag(input: {name: "rest-made", project: "default", type: "boolean", variants: []}) { name } }`);
  t.equal(dup.status, 409);
  t.same(gdup.body.errors?.[0].extensions, { code: dup.body.code, status: dup.status }, 'existing name: CONFLICT 409');
  const bad = await rest('POST', '/api/flags', { name: 'bad', project: 'default', type: 'colour', variants: [] });
  const gbad = await gql(n, admin, `mutation { createFlag(input: {name: "bad", project: "default", type: "colour", variants: []}) { name } }`);
  t.equal(bad.status, 400);
  t.same(gbad.body.errors?.[0].extensions, { code: bad.body.code, status: 400 }, 'bad type: BAD_REQUEST 400');
  t.equal(gbad.body.errors?.[0].message, bad.body.detail, 'with the same message');
  const reader = await createKey(n, { permissions: ['CanRead'], application: 'default' });
  const nf = await rest('GET', '/api/flags/nope', undefined, reader);
  const gnf = await gql(n, reader, '{ flag(name: "nope") { name } }');
  t.same(gnf.body.errors?.[0].extensions, { code: nf.body.code, status: 404 }, 'unknown flag: NOT_FOUND 404');
  t.equal(gnf.body.errors?.[0].message, nf.body.detail);
  const w = await rest('POST', '/api/flags', { name: 'z', project: 'default', type: 'boolean', variants: bool }, reader);
  const gw = await gql(n, reader, `mutation { createFlag(input: {name: "z", project: "default", type: "boolean", variants: []}) { name } }`);
  t.same(gw.body.errors?.[0].extensions, { code: w.body.code, status: 403 }, 'reader writing: FORBIDDEN 403');
});

t.test('evaluate answers what POST /flags/{name} answers, for every reason code', async (t) => {
  const ev = await createKey(n, { permissions: ['CanEvaluate'], application: 'default' });
  const past = '2000-01-01T00:00:00Z';
  const future = '2999-01-01T00:00:00Z';
  await restFlag('p-rule', {}, { rules: [{ id: 'nl', priority: 5, conditions: [{ field: 'country', operator: '==', value: 'NL' }], allocations: [{ variantKey: 'on', percentage: 100 }] }] });
  await restFlag('p-split', {}, { rolloutPercentage: 50, rules: [{ priority: 1, conditions: [], allocations: [{ variantKey: 'on', percentage: 30 }, { variantKey: 'off', percentage: 70 }] }] });
  await restFlag('p-killed', {}, {});
  await restFlag('p-archived', {}, {});
  t.equal((await rest('PUT', '/api/flags/p-archived', { isArchived: true })).status, 200);
  await restFlag('p-elsewhere', { environments: ['development'] });
  await restFlag('p-noconfig');
  await restFlag('p-disabled', {}, { enabled: false });
  await restFlag('p-later', {}, { activeFrom: future });
  await restFlag('p-over', {}, { activeUntil: past });
  await restFlag('p-child', { dependencies: [{ flag: 'p-disabled' }] }, {});
  await restFlag('p-rollout0', {}, { rolloutPercentage: 0 });
  await restFlag('p-closed', {}, { enrollmentCutoff: 0 });
  await restFlag('p-novariants', { variants: [] });
  await restFlag('p-client', {}, { defaultVariantKey: 'off' });
  t.equal((await rest('POST', '/api/flags/p-client/configs', { stage: 'production', clientId: 'default:ios', enabled: true, defaultVariantKey: 'on', rolloutPercentage: 100 })).status, 200);
  const ks = await gql(n, admin, 'mutation { replaceKillSwitch(rules: [{flag: "p-killed"}]) { flag } }');
  t.same(ks.body.data, { replaceKillSwitch: [{ flag: 'p-killed' }] });

  const seen = new Set<string>();
  const scenarios: Scenario[] = [
    { flag: 'p-rule', userId: 'u1', context: { country: 'NL' } },
    { flag: 'p-rule', userId: 'u1', context: { country: 'DE' } },
    { flag: 'p-rule', userId: 'u1' },
    { flag: 'p-killed', userId: 'u1' },
    { flag: 'p-archived', userId: 'u1' },
    { flag: 'p-elsewhere', userId: 'u1' },
    { flag: 'p-noconfig', userId: 'u1' },
    { flag: 'p-disabled', userId: 'u1' },
    { flag: 'p-later', userId: 'u1' },
    { flag: 'p-over', userId: 'u1' },
    { flag: 'p-child', userId: 'u1' },
    { flag: 'p-rollout0', userId: 'u1' },
    { flag: 'p-closed', userId: 'u1' },
    { flag: 'p-novariants', userId: 'u1' },
    { flag: 'p-client', userId: 'u1', clientId: 'default:ios' },
    { flag: 'p-client', userId: 'u1', clientId: 'default:android' },
    { flag: 'p-client', userId: 'u1', clientId: 'other-app:ios' },
    { flag: 'p-rule', userId: 'u1', stage: 'PRODUCTION', context: { country: 'NL' } },
    ...Array.from({ length: 30 }, (_, i) => ({ flag: 'p-split', userId: `user-${i}` })),
  ];
  for (const s of scenarios) {
    const a = await both(t, n, ev, s);
    if (a) seen.add(a.reason.code);
  }
  const expected = ['rule_matched', 'default', 'killswitch', 'archived', 'project_or_env_mismatch', 'config_missing', 'config_disabled', 'not_yet_active', 'expired', 'disabled_dependency', 'rollout_excluded', 'enrollment_closed', 'no_variants'];
  t.same([...seen].sort(), [...expected].sort(), 'every reason code was compared');

  // And the error cases, with the same codes and statuses.
  await both(t, n, ev, { flag: 'nope', userId: 'u1' });
  await both(t, n, ev, { flag: 'p-rule', userId: 'u1', stage: 'mars' });
  await both(t, n, ev, { flag: 'p-rule', userId: 'u1', stage: '' });
  await both(t, n, ev, { flag: 'p-rule', userId: '' });
  const scoped = await createKey(n, { permissions: ['CanEvaluate'], application: 'default', environment: 'production' });
  await both(t, n, scoped, { flag: 'p-rule', userId: 'u1', stage: 'development' });
  await both(t, n, scoped, { flag: 'p-rule', userId: 'u1', stage: 'Production', context: { country: 'NL' } });
  const orgWide = await createKey(n, { permissions: ['CanEvaluate'] });
  await both(t, n, orgWide, { flag: 'p-rule', userId: 'u1' });
  const otherApp = await gql(n, admin, 'mutation { replaceApplications(applications: ["default", "other-app"]) }');
  t.notOk(otherApp.body.errors);
  const other = await createKey(n, { permissions: ['CanEvaluate'], application: 'other-app' });
  await both(t, n, other, { flag: 'p-rule', userId: 'u1' });
});

t.test('a rule naming a segment evaluates alike over REST (worker pool), GraphQL and OFREP', async (t) => {
  const ev = await createKey(n, { permissions: ['CanEvaluate'], application: 'default' });
  // Segments written over GraphQL: one with a 20,000-id list, one with an ordinary condition.
  const ids = Array.from({ length: 20_000 }, (_, i) => `id-${i}`);
  const CREATE = 'mutation($i: CreateSegmentInput!) { createSegment(input: $i) { name application conditions { field operator } } }';
  const big = await gql(n, admin, CREATE, { i: { name: 'listed', conditions: [{ field: 'userId', operator: 'in', value: ids }] } });
  t.same(big.body, { data: { createSegment: { name: 'listed', application: null, conditions: [{ field: 'userId', operator: 'in' }] } } });
  const eu = await gql(n, admin, CREATE, { i: { name: 'eu', application: 'default', conditions: [{ field: 'country', operator: 'in', value: ['NL', 'DE', 'FR'] }] } });
  t.notOk(eu.body.errors, eu.text);
  await restFlag('s-gate', {}, {
    rules: [
      { id: 'both', priority: 1, conditions: [{ field: 'tier', operator: '==', value: 'gold' }], segments: ['listed', 'eu'], allocations: [{ variantKey: 'on', percentage: 100 }] },
      { id: 'eu-split', priority: 2, conditions: [], segments: ['eu'], allocations: [{ variantKey: 'on', percentage: 50 }, { variantKey: 'off', percentage: 50 }] },
    ],
  });

  /** REST and GraphQL agree (both()); OFREP answers the same variant, value and reason code. */
  const all = async (s: Scenario) => {
    const r = await both(t, n, ev, s);
    const o = await n.req('POST', `/ofrep/v1/evaluate/flags/${s.flag}`, { key: ev, body: { context: { targetingKey: s.userId, stage: 'production', ...s.context } } });
    t.equal(o.status, 200, `OFREP ${s.flag} for ${s.userId}: ${o.text}`);
    t.equal(o.body.variant, r?.key, 'OFREP: same variant');
    t.equal(o.body.value, r?.variant, 'OFREP: same value');
    t.equal(o.body.metadata?.reasonCode, r?.reason.code, 'OFREP: same reason code');
    return r!;
  };
  t.match(await all({ flag: 's-gate', userId: 'id-19999', context: { tier: 'gold', country: 'NL' } }), { key: 'on', reason: { ruleId: 'both' } });
  t.match(await all({ flag: 's-gate', userId: 'id-20000', context: { tier: 'gold', country: 'NL' } }), { reason: { ruleId: 'eu-split' } }, 'not listed: the next rule');
  t.match(await all({ flag: 's-gate', userId: 'id-5', context: { tier: 'silver', country: 'DE' } }), { reason: { ruleId: 'eu-split' } }, 'condition fails');
  t.match(await all({ flag: 's-gate', userId: 'id-5', context: { tier: 'gold', country: 'US' } }), { reason: { code: 'default' } }, 'in no segment');
  const split = new Set<string | null>();
  for (let i = 0; i < 20; i++) split.add((await all({ flag: 's-gate', userId: `x-${i}`, context: { country: 'FR' } })).key);
  t.same([...split].sort(), ['off', 'on'], "the segment rule's allocation split is the same everywhere");

  // A segment change: every path answers with the new segment at once.
  const upd = await gql(n, admin, 'mutation($c: [ConditionInput!]) { updateSegment(name: "eu", input: {conditions: $c}) { name } }', { c: [{ field: 'country', operator: 'in', value: ['US'] }] });
  t.notOk(upd.body.errors, upd.text);
  t.match(await all({ flag: 's-gate', userId: 'id-5', context: { tier: 'gold', country: 'US' } }), { key: 'on', reason: { ruleId: 'both' } });
  t.match(await all({ flag: 's-gate', userId: 'id-5', context: { tier: 'gold', country: 'NL' } }), { reason: { code: 'default' } });
});
