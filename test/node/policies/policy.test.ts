/**
 * Environment policies and the CanApprove permission (CONTRACT 17; docs/change-requests.md,
 * "Protecting an environment") on one node: GET/PUT /api/environments/{stage}/policy and their
 * GraphQL twins, validation, permissions, the org.policy audit event; CanApprove allows nothing
 * else; protected writes are 409 review_required naming the environment; the review bypass
 * (Admin + allowBypass + a reason, audited); a schedule made before the protection fails when due.
 */
import t from 'tap';
import { setTimeout as sleep } from 'node:timers/promises';
import { createFlag, createKey, createOrganization, evaluate, expectProblem, OPERATOR_TOKEN, startTestNode, upsertConfig, type TestNode } from '../../helpers/node.js';
import { gql } from '../../helpers/graphql.js';

t.setTimeout(240_000);

const env = { VEXIL_OPERATOR_TOKEN: OPERATOR_TOKEN, VEXIL_RATE_LIMIT_MGMT: '100000', VEXIL_RATE_LIMIT_EVAL: '100000' };
const BYPASS = 'x-vexil-bypass-review';

const policyPath = (stage: string) => `/api/environments/${encodeURIComponent(stage)}/policy`;
const putPolicy = (n: TestNode, stage: string, body: unknown, key = n.adminKey) => n.req('PUT', policyPath(stage), { key, body });
const getPolicy = (n: TestNode, stage: string, key = n.adminKey) => n.req('GET', policyPath(stage), { key });
const audit = async (n: TestNode, q = '') => (await n.req('GET', `/api/audit${q}`, { key: n.adminKey })).body as any[];

let seq = 0;
async function org(n: TestNode): Promise<TestNode> {
  return createOrganization(n, `org-${++seq}`);
}

/** An organization with flag `f` configured in production and development. */
async function withFlag(n: TestNode): Promise<TestNode> {
  const o = await org(n);
  if ((await createFlag(o, 'f')).status !== 201) throw new Error('flag');
  if ((await upsertConfig(o, 'f', { defaultVariantKey: 'off' })).status !== 200) throw new Error('config');
  if ((await upsertConfig(o, 'f', { stage: 'development', defaultVariantKey: 'off' })).status !== 200) throw new Error('config');
  return o;
}

t.test('policies', async (t) => {
  const n = await startTestNode(t, { env });

  t.test('GET answers the default; PUT stores, answers and audits org.policy; case-insensitive stage', async (t) => {
    const o = await org(n);
    const d = await getPolicy(o, 'production');
    t.equal(d.status, 200);
    t.same(d.body, { environment: 'production', requiredApprovals: 0, allowSelfApproval: false, allowBypass: false });
    const r = await putPolicy(o, 'PRODUCTION', { requiredApprovals: 2, allowBypass: true });
    t.equal(r.status, 200, r.text);
    t.same(r.body, { environment: 'production', requiredApprovals: 2, allowSelfApproval: false, allowBypass: true });
    t.same((await getPolicy(o, 'production')).body, r.body, 'read back');
    t.same((await getPolicy(o, 'development')).body.requiredApprovals, 0, 'other environments keep the default');
    const [ev] = await audit(o, '?type=organization');
    t.match(ev, {
      action: 'org.policy',
      target: { type: 'organization' },
      before: { environment: 'production', policy: { requiredApprovals: 0, allowSelfApproval: false, allowBypass: false } },
      after: { environment: 'production', policy: { requiredApprovals: 2, allowSelfApproval: false, allowBypass: true } },
    });
    // Back to the default.
    t.equal((await putPolicy(o, 'production', { requiredApprovals: 0 })).body.allowBypass, false);
    t.same((await getPolicy(o, 'production')).body.requiredApprovals, 0);
  });

  t.test('bad input is 400, an unknown stage 404, and neither changes anything', async (t) => {
    const o = await org(n);
    const before = (await audit(o)).length;
    for (const body of [{}, { requiredApprovals: 6 }, { requiredApprovals: -1 }, { requiredApprovals: 1.5 }, { requiredApprovals: '1' }, { requiredApprovals: 1, allowBypass: 'yes' }, { requiredApprovals: 1, extra: true }, []]) {
      expectProblem(t, await putPolicy(o, 'production', body), 400, 'BAD_REQUEST', JSON.stringify(body));
    }
    expectProblem(t, await putPolicy(o, 'staging', { requiredApprovals: 1 }), 404, 'NOT_FOUND');
    expectProblem(t, await getPolicy(o, 'staging'), 404, 'NOT_FOUND');
    t.equal((await getPolicy(o, 'production')).body.requiredApprovals, 0);
    t.equal((await audit(o)).length, before, 'no event');
  });

  t.test('read needs CanRead, write an organization-wide Admin key', async (t) => {
    const o = await org(n);
    const reader = await createKey(o, { permissions: ['CanRead'] });
    const writer = await createKey(o, { permissions: ['CanRead', 'CanWrite'] });
    const evaluator = await createKey(o, { permissions: ['CanEvaluate'], application: 'default' });
    const approver = await createKey(o, { permissions: ['CanApprove'] });
    t.equal((await getPolicy(o, 'production', reader)).status, 200);
    expectProblem(t, await getPolicy(o, 'production', evaluator), 403, 'FORBIDDEN');
    expectProblem(t, await getPolicy(o, 'production', approver), 403, 'FORBIDDEN', 'CanApprove alone cannot read');
    expectProblem(t, await putPolicy(o, 'production', { requiredApprovals: 1 }, writer), 403, 'FORBIDDEN');
    expectProblem(t, await putPolicy(o, 'production', { requiredApprovals: 1 }, approver), 403, 'FORBIDDEN');
    t.equal((await getPolicy(o, 'production')).body.requiredApprovals, 0);
  });

  t.test('CanApprove: created and listed like any permission, and allows nothing else by itself', async (t) => {
    const o = await withFlag(n);
    const r = await o.req('POST', '/api/keys', { key: o.adminKey, body: { name: 'reviewer', permissions: ['CanApprove'] } });
    t.equal(r.status, 201, r.text);
    t.same(r.body.permissions, ['CanApprove']);
    const approver = r.body.key as string;
    t.same((await o.req('GET', '/api/keys/self', { key: approver })).body.permissions, ['CanApprove']);
    expectProblem(t, await o.req('POST', '/api/keys', { key: o.adminKey, body: { name: 'x', permissions: ['CanApprove', 'CanApprove'] } }), 400, 'BAD_REQUEST');
    expectProblem(t, await o.req('POST', '/api/keys', { key: o.adminKey, body: { name: 'x', permissions: ['CanReview'] } }), 400, 'BAD_REQUEST');
    // Reads and writes it could not do before.
    expectProblem(t, await o.req('GET', '/api/flags', { key: approver }), 403, 'FORBIDDEN');
    expectProblem(t, await o.req('GET', '/api/flags/f', { key: approver }), 403, 'FORBIDDEN');
    expectProblem(t, await o.req('GET', '/api/segments', { key: approver }), 403, 'FORBIDDEN');
    expectProblem(t, await o.req('GET', '/api/audit', { key: approver }), 403, 'FORBIDDEN');
    expectProblem(t, await o.req('GET', '/api/keys', { key: approver }), 403, 'FORBIDDEN');
    expectProblem(t, await createFlag(o, 'g', {}, approver), 403, 'FORBIDDEN');
    expectProblem(t, await upsertConfig(o, 'f', { defaultVariantKey: 'on' }, approver), 403, 'FORBIDDEN');
    expectProblem(t, await o.req('PUT', '/api/flags/f', { key: approver, body: { description: 'x' } }), 403, 'FORBIDDEN');
    expectProblem(t, await o.req('DELETE', '/api/flags/f', { key: approver }), 403, 'FORBIDDEN');
    expectProblem(t, await o.req('POST', '/api/segments', { key: approver, body: { name: 's', conditions: [] } }), 403, 'FORBIDDEN');
    expectProblem(t, await o.req('POST', '/api/keys', { key: approver, body: { name: 'y', permissions: ['CanRead'] } }), 403, 'FORBIDDEN');
    expectProblem(t, await evaluate(o, approver, 'f', { userId: 'u', stage: 'production' }), 403, 'FORBIDDEN');
    const g = await gql(o, approver, '{ flags { name } }');
    t.equal(g.body.errors?.[0]?.extensions.code, 'FORBIDDEN', 'GraphQL reads too');
    const m = await gql(o, approver, 'mutation { archiveFlag(name: "f") { name } }');
    t.equal(m.body.errors?.[0]?.extensions.code, 'FORBIDDEN', 'GraphQL writes too');
    t.equal((await o.req('GET', '/api/flags/f', { key: o.adminKey })).body.isArchived, false);
    // GraphQL's Permission enum and the key form's list know it.
    const k = await gql(o, o.adminKey, 'mutation { createManagementKey(input: {name: "r2", permissions: [CanApprove]}) { managementKey { permissions } } }');
    t.same(k.body.data?.createManagementKey?.managementKey?.permissions, ['CanApprove'], JSON.stringify(k.body));
  });

  t.test('GraphQL environmentPolicy and setEnvironmentPolicy', async (t) => {
    const o = await org(n);
    const set = await gql(o, o.adminKey, 'mutation { setEnvironmentPolicy(stage: "production", input: {requiredApprovals: 1, allowSelfApproval: true}) { environment requiredApprovals allowSelfApproval allowBypass } }');
    t.same(set.body.data?.setEnvironmentPolicy, { environment: 'production', requiredApprovals: 1, allowSelfApproval: true, allowBypass: false }, JSON.stringify(set.body));
    const get = await gql(o, o.adminKey, '{ environmentPolicy(stage: "Production") { environment requiredApprovals allowSelfApproval allowBypass } }');
    t.same(get.body.data?.environmentPolicy, { environment: 'production', requiredApprovals: 1, allowSelfApproval: true, allowBypass: false });
    const bad = await gql(o, o.adminKey, 'mutation { setEnvironmentPolicy(stage: "production", input: {requiredApprovals: 9}) { environment } }');
    t.equal(bad.body.errors?.[0]?.extensions.code, 'BAD_REQUEST');
    const missing = await gql(o, o.adminKey, '{ environmentPolicy(stage: "nope") { environment } }');
    t.equal(missing.body.errors?.[0]?.extensions.code, 'NOT_FOUND');
    const writer = await createKey(o, { permissions: ['CanRead', 'CanWrite'] });
    const denied = await gql(o, writer, 'mutation { setEnvironmentPolicy(stage: "production", input: {requiredApprovals: 0}) { environment } }');
    t.equal(denied.body.errors?.[0]?.extensions.code, 'FORBIDDEN');
    t.equal((await getPolicy(o, 'production')).body.requiredApprovals, 1);
  });

  t.test('a protected environment refuses direct writes with review_required; others are untouched', async (t) => {
    const o = await withFlag(n);
    const evaluator = await createKey(o, { permissions: ['CanEvaluate'], application: 'default' });
    t.equal((await putPolicy(o, 'production', { requiredApprovals: 1 })).status, 200);
    const before = (await audit(o)).length;
    const r = await upsertConfig(o, 'f', { defaultVariantKey: 'on' });
    expectProblem(t, r, 409, 'CONFLICT', /review/);
    t.equal(r.body.reason, 'review_required');
    t.equal(r.body.environment, 'production');
    t.same(r.body.environments, ['production']);
    const e = await evaluate(o, evaluator, 'f', { userId: 'u', stage: 'production' });
    t.equal(e.body.key, 'off', 'evaluation answers as before');
    t.equal((await upsertConfig(o, 'f', { stage: 'development', defaultVariantKey: 'on' })).status, 200, 'development is not protected');
    // A flag used in production: its variants, archive, delete; description alone is no answer change.
    expectProblem(t, await o.req('PUT', '/api/flags/f', { key: o.adminKey, body: { isArchived: true } }), 409, 'CONFLICT');
    expectProblem(t, await o.req('DELETE', '/api/flags/f', { key: o.adminKey }), 409, 'CONFLICT');
    t.equal((await o.req('PUT', '/api/flags/f', { key: o.adminKey, body: { description: 'docs only' } })).status, 200);
    // GraphQL: the same guard, with reason and environment in extensions.
    const g = await gql(o, o.adminKey, 'mutation { setFlagConfigEnabled(name: "f", stage: "production", enabled: false) { enabled } }');
    t.match(g.body.errors?.[0]?.extensions, { code: 'CONFLICT', reason: 'review_required', environment: 'production' }, JSON.stringify(g.body));
    t.equal((await audit(o)).length, before + 2, 'only the two allowed writes were recorded');
  });

  t.test('the review bypass: Admin + allowBypass + a reason, audited; otherwise refused', async (t) => {
    const o = await withFlag(n);
    const writer = await createKey(o, { permissions: ['CanRead', 'CanWrite'] });
    t.equal((await putPolicy(o, 'production', { requiredApprovals: 1 })).status, 200);
    const body = { stage: 'production', enabled: true, defaultVariantKey: 'on', rolloutPercentage: 100 };
    const post = (key: string, headers: Record<string, string>) => o.req('POST', '/api/flags/f/configs', { key, body, headers });
    // Without allowBypass: review_required even for Admin.
    const noPolicy = await post(o.adminKey, { [BYPASS]: 'incident 42' });
    expectProblem(t, noPolicy, 409, 'CONFLICT');
    t.equal(noPolicy.body.reason, 'review_required');
    t.equal((await putPolicy(o, 'production', { requiredApprovals: 1, allowBypass: true })).status, 200);
    // Malformed header: 400 (an empty one is no header: HTTP clients and the front drop it).
    expectProblem(t, await post(o.adminKey, { [BYPASS]: 'x'.repeat(501) }), 400, 'BAD_REQUEST', /500/);
    // A key without Admin: 403.
    expectProblem(t, await post(writer, { [BYPASS]: 'incident 42' }), 403, 'FORBIDDEN', /Admin/);
    // No header at all: still review_required.
    expectProblem(t, await post(o.adminKey, {}), 409, 'CONFLICT');
    const before = (await audit(o)).length;
    const ok = await post(o.adminKey, { [BYPASS]: '  incident 42  ' });
    t.equal(ok.status, 200, ok.text);
    const events = await audit(o);
    t.equal(events.length, before + 1);
    t.match(events[0], { action: 'config.upsert', target: { name: 'f', stage: 'production' }, bypass: { reason: 'incident 42' } });
    // An unprotected write with the header records no bypass.
    t.equal((await upsertConfig(o, 'f', { stage: 'development', defaultVariantKey: 'on' }, o.adminKey)).status, 200);
    t.notOk('bypass' in (await audit(o))[0], 'no bypass where none was needed');
    const viaHeaderUnneeded = await o.req('POST', '/api/flags/f/configs', { key: o.adminKey, body: { ...body, stage: 'development' }, headers: { [BYPASS]: 'x' } });
    t.equal(viaHeaderUnneeded.status, 200);
    t.notOk('bypass' in (await audit(o))[0], 'a header where nothing is protected records nothing');
    // GraphQL carries the header too.
    const g = await o.req('POST', '/api/graphql', { key: o.adminKey, headers: { [BYPASS]: 'hotfix' }, body: { query: 'mutation { setFlagConfigEnabled(name: "f", stage: "production", enabled: false) { enabled } }' } });
    t.same(g.body.data?.setFlagConfigEnabled, { enabled: false }, g.text);
    const gq = await gql(o, o.adminKey, '{ auditLog(first: 1) { action bypass { reason } } }');
    t.same(gq.body.data?.auditLog, [{ action: 'config.disable', bypass: { reason: 'hotfix' } }]);
  });

  t.test('a policy follows its environment through a rename, and goes with its removal', async (t) => {
    const o = await org(n);
    t.equal((await putPolicy(o, 'development', { requiredApprovals: 1, allowBypass: true })).status, 200);
    const refused = await gql(o, o.adminKey, 'mutation { renameEnvironment(from: "development", to: "dev") }');
    t.equal(refused.body.errors?.[0]?.extensions.reason, 'review_required', JSON.stringify(refused.body));
    const renamed = await o.req('POST', '/api/graphql', { key: o.adminKey, headers: { [BYPASS]: 'reorg' }, body: { query: 'mutation { renameEnvironment(from: "development", to: "dev") }' } });
    t.same(renamed.body.data?.renameEnvironment, ['dev', 'production'], renamed.text);
    t.equal((await getPolicy(o, 'dev')).body.requiredApprovals, 1, 'the policy followed');
    const removed = await o.req('POST', '/api/graphql', { key: o.adminKey, headers: { [BYPASS]: 'cleanup' }, body: { query: 'mutation { replaceEnvironments(environments: ["production"]) }' } });
    t.same(removed.body.data?.replaceEnvironments, ['production'], removed.text);
    const again = await gql(o, o.adminKey, 'mutation { replaceEnvironments(environments: ["production", "dev"]) }');
    t.same(again.body.data?.replaceEnvironments, ['production', 'dev']);
    t.equal((await getPolicy(o, 'dev')).body.requiredApprovals, 0, 'a new environment of that name starts unprotected');
  });

  t.test('a schedule made before the protection fails when due with review_required, changing nothing', async (t) => {
    const o = await withFlag(n);
    const at = new Date(Date.now() + 1500).toISOString();
    const s = await o.req('POST', '/api/flags/f/schedules', { key: o.adminKey, body: { at, stage: 'production', enabled: false } });
    t.equal(s.status, 201, s.text);
    t.equal((await putPolicy(o, 'production', { requiredApprovals: 1 })).status, 200);
    // A new schedule for it is refused now.
    const again = await o.req('POST', '/api/flags/f/schedules', { key: o.adminKey, body: { at, stage: 'production', enabled: false } });
    t.equal(again.body.reason, 'review_required');
    let status = 'pending';
    let error: string | null = null;
    for (let i = 0; i < 60 && status === 'pending'; i++) {
      await sleep(100);
      const list = (await o.req('GET', '/api/flags/f/schedules', { key: o.adminKey })).body as any[];
      ({ status, error } = list.find((x) => x.id === s.body.id));
    }
    t.equal(status, 'failed');
    t.match(error, /^review_required: /);
    const cfg = (await o.req('GET', '/api/flags/f', { key: o.adminKey })).body.configs.find((c: any) => c.stage === 'production');
    t.equal(cfg.enabled, true, 'nothing changed');
  });
});
