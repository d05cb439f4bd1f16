/**
 * The GraphQL pieces of the admin web UI (docs/api.md, "Admin web UI"), over real HTTP:
 * - `viewer`: the calling key's own record for any valid key, never its value;
 * - `explainEvaluation`: CanRead with the read scope rules (org-wide keys included), always a
 *   reason, charged to the management bucket and not counted as an `evaluate` field.
 */
import t from 'tap';
import { createFlag, createKey, evaluate, HEX64_ANYWHERE, startTestNode, upsertConfig } from '../../helpers/node.js';
import { expectFieldError, gql } from '../../helpers/graphql.js';

const n = await startTestNode(t, {
  env: { VEXIL_RATE_LIMIT_MGMT: '20', VEXIL_RATE_LIMIT_EVAL: '1', VEXIL_GRAPHQL_MAX_EVALUATIONS: '2' },
});
const admin = n.adminKey;
// Setup (asserted by throwing: tap's root test takes no assertions between top-level awaits).
const must = async (what: string, r: Promise<{ status: number; text: string }>, status: number) => {
  const res = await r;
  if (res.status !== status) throw new Error(`${what}: ${res.status} ${res.text}`);
};
await must('applications', gql(n, admin, 'mutation { replaceApplications(applications: ["default", "mobile"]) }'), 200);
await must('checkout', createFlag(n, 'checkout'), 201);
await must('ios-only', createFlag(n, 'ios-only', { project: 'mobile' }), 201);
await must('config', upsertConfig(n, 'checkout', {
  rules: [{ priority: 3, conditions: [{ field: 'country', operator: '==', value: 'NL' }], allocations: [{ variantKey: 'on', percentage: 100 }] }],
}), 200);

const EXPLAIN = `query($flag: String!, $ctx: Any, $stage: String!, $user: String!) {
  explainEvaluation(key: $flag, userId: $user, stage: $stage, context: $ctx) { key variant reason { code message ruleId } }
}`;
const explain = (key: string, flag: string, ctx: unknown = null, stage = 'production', user = 'u1') =>
  gql(n, key, EXPLAIN, { flag, ctx, stage, user });

t.test('viewer answers every valid key its own record, never a key value', async (t) => {
  const evalKey = await createKey(n, { name: 'web-eval', permissions: ['CanEvaluate'], application: 'default', environment: 'production' });
  const ids: string[] = [];
  for (const [key, expected] of [
    [admin, { permissions: ['Admin', 'CanRead', 'CanWrite'], application: null, environment: null }],
    [evalKey, { name: 'web-eval', permissions: ['CanEvaluate'], application: 'default', environment: 'production' }],
  ] as const) {
    const r = await gql(n, key, '{ viewer { id name permissions application environment disabled createdAt rotatedAt } }');
    t.notOk(r.body.errors, 'no errors');
    t.match(r.body.data?.viewer, { id: String, name: String, disabled: false, createdAt: String, rotatedAt: null, ...expected });
    t.notMatch(r.text, HEX64_ANYWHERE, 'no key value in the answer');
    ids.push(r.body.data?.viewer.id);
  }
  const list = await n.req('GET', '/api/keys', { key: admin });
  // (The evaluation key's requests pay from its evaluation bucket, 1/s here: no second request.)
  t.ok(list.body.some((k: { id: string; name: string }) => k.id === ids[1] && k.name === 'web-eval'), "the id is the key's own");
});

t.test('explainEvaluation: an org-wide key (which cannot evaluate) gets the reason', async (t) => {
  const nl = await explain(admin, 'checkout', { country: 'NL' });
  t.notOk(nl.body.errors);
  t.match(nl.body.data?.explainEvaluation, { key: 'on', variant: true, reason: { code: 'rule_matched', message: /priority 3/, ruleId: /^r_/ } });
  const de = await explain(admin, 'checkout', { country: 'DE' });
  t.same(de.body.data?.explainEvaluation, { key: 'off', variant: false, reason: { code: 'default', message: de.body.data?.explainEvaluation.reason.message, ruleId: null } });
  const dev = await explain(admin, 'checkout', null, 'development');
  t.equal(dev.body.data?.explainEvaluation.reason.code, 'config_missing');
  const ev = await gql(n, admin, '{ evaluate(key: "checkout", userId: "u1", stage: "production") { key } }');
  expectFieldError(t, ev, ['evaluate'], 'FORBIDDEN', 'the same key cannot evaluate');
  // Toggling the configuration changes the explanation at once (read your writes).
  await gql(n, admin, 'mutation { setFlagConfigEnabled(name: "checkout", stage: "production", enabled: false) { enabled } }');
  const off = await explain(admin, 'checkout', { country: 'NL' });
  t.match(off.body.data?.explainEvaluation, { key: 'off', reason: { code: 'config_disabled' } });
  await gql(n, admin, 'mutation { setFlagConfigEnabled(name: "checkout", stage: "production", enabled: true) { enabled } }');
});

t.test('explainEvaluation: CanRead and the read scope rules', async (t) => {
  const evalOnly = await createKey(n, { permissions: ['CanEvaluate'], application: 'default' });
  expectFieldError(t, await explain(evalOnly, 'checkout'), ['explainEvaluation'], 'FORBIDDEN', 'CanEvaluate alone');
  const reader = await createKey(n, { permissions: ['CanRead'], application: 'default', environment: 'development' });
  const ok = await explain(reader, 'checkout', { country: 'NL' });
  t.equal(ok.body.data?.explainEvaluation.reason.code, 'rule_matched', 'an environment scope does not restrict reads');
  expectFieldError(t, await explain(reader, 'ios-only'), ['explainEvaluation'], 'FORBIDDEN', 'a flag of another application');
  const writer = await createKey(n, { permissions: ['CanWrite'], application: 'mobile' });
  t.equal((await explain(writer, 'ios-only')).body.data?.explainEvaluation.reason.code, 'config_missing', 'CanWrite includes CanRead');
  expectFieldError(t, await explain(admin, 'nope'), ['explainEvaluation'], 'NOT_FOUND', 'unknown flag');
  expectFieldError(t, await explain(admin, 'checkout', null, 'staging'), ['explainEvaluation'], 'NOT_FOUND', 'unknown stage');
  expectFieldError(t, await explain(admin, 'checkout', null, 'production', ''), ['explainEvaluation'], 'BAD_REQUEST', 'empty userId');
  expectFieldError(t, await explain(admin, 'checkout', [1]), ['explainEvaluation'], 'BAD_REQUEST', 'a context that is not an object');
});

t.test('explainEvaluation is management traffic, not evaluation traffic', async (t) => {
  // A key that may do both; VEXIL_RATE_LIMIT_EVAL=1 and VEXIL_GRAPHQL_MAX_EVALUATIONS=2.
  const both = await createKey(n, { permissions: ['CanEvaluate', 'CanRead'], application: 'default' });
  const five = await gql(n, both, `{ ${[1, 2, 3, 4, 5].map((i) => `e${i}: explainEvaluation(key: "checkout", userId: "u${i}", stage: "production") { reason { code } }`).join(' ')} }`);
  t.notOk(five.body.errors, 'five explanations pass a limit of two evaluate fields');
  t.equal(Object.keys(five.body.data ?? {}).length, 5);
  const r = await evaluate(n, both, 'checkout', { userId: 'u1', stage: 'production' });
  t.equal(r.status, 200, 'the evaluation bucket (1/s) still has its token');
  const again = await evaluate(n, both, 'checkout', { userId: 'u1', stage: 'production' });
  t.equal(again.status, 429, 'and the evaluation bucket is really that small');
  // The management bucket (20/s, burst 20) pays: the 21st request in a burst is refused.
  // Sent together, so that a slow machine cannot refill the bucket between them.
  const burst = await Promise.all(Array.from({ length: 30 }, () => explain(both, 'checkout')));
  t.ok(burst.some((b) => b.status === 429), 'explanations run out of the management bucket');
});
