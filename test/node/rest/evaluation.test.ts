/**
 * Evaluation over REST, `POST /flags/{name}` (docs/api.md, "Evaluation"; docs/evaluation.md): the order
 * of the 400/404/403/404 checks, key scopes, `explain`, targeting, and deterministic rollout.
 */
import { existsSync } from 'node:fs';
import t from 'tap';
import { allocationBucket, rolloutBucket } from '../../../src/engine/index.js';
import { projectPath } from '../../../src/util/paths.js';
import {
  createOrg,
  deleteFlag,
  evalFlag,
  evalKey,
  expectProblem,
  makeKey,
  must,
  postConfig,
  postFlag,
  putFlag,
  setKillSwitch,
  startNode,
  type TapTest,
} from '../../helpers/flags.js';
import type { Res } from '../../helpers/node.js';

/** A 200 evaluation with exactly `variant`, `key` and (with explain) `reason`. */
function expectEval(t: TapTest, r: Res, key: string | null, variant: unknown, code?: string, ruleId?: string): void {
  t.equal(r.status, 200, `200 (got ${r.status} ${r.text.slice(0, 200)})`);
  t.match(r.headers.get('content-type') ?? '', /^application\/json/);
  t.equal(r.body?.key, key, 'key');
  t.same(r.body?.variant, variant, 'variant');
  if (code === undefined) {
    t.same(Object.keys(r.body ?? {}).sort(), ['key', 'variant'], 'no reason without explain');
    t.notOk('reason' in (r.body ?? {}), 'the reason key is absent');
  } else {
    t.same(Object.keys(r.body ?? {}).sort(), ['key', 'reason', 'variant']);
    t.equal(r.body.reason.code, code, 'reason.code');
    t.type(r.body.reason.message, 'string');
    t.ok(r.body.reason.message.length > 0, 'reason.message is not empty');
    if (ruleId === undefined) t.notOk('ruleId' in r.body.reason, 'no ruleId unless a rule matched');
    else t.equal(r.body.reason.ruleId, ruleId, 'reason.ruleId');
  }
}

t.test('evaluation over REST', async (t) => {
  const n = await startNode(t);
  const org = await createOrg(n, ['development', 'production'], ['web', 'billing']);
  const A = org.adminKey;
  const nl = { priority: 1, id: 'nl-rule', conditions: [{ field: 'country', operator: '==', value: 'NL' }], allocations: [{ variantKey: 'on', percentage: 100 }] };
  // feat: production serves off by default and on for NL; development serves on to everybody.
  must(t, await postFlag(n, A, 'feat'), 201, 'create feat');
  must(t, await postConfig(n, A, 'feat', { stage: 'production', defaultVariantKey: 'off', rules: [nl] }), 200, 'production config');
  must(t, await postConfig(n, A, 'feat', { stage: 'development', defaultVariantKey: 'on' }), 200, 'development config');
  must(t, await postFlag(n, A, 'bill-feat', { project: 'billing' }), 201, 'create bill-feat');
  must(t, await postConfig(n, A, 'bill-feat', { defaultVariantKey: 'on' }), 200, 'bill-feat config');

  const webEval = await evalKey(n, A, 'web');
  const webProdEval = await evalKey(n, A, 'web', 'production');
  const webDevEval = await evalKey(n, A, 'WEB', 'development');
  const orgWideEval = await makeKey(n, A, { permissions: ['CanEvaluate'] });
  const webReader = await makeKey(n, A, { permissions: ['CanRead'], application: 'web' });
  const webWriter = await makeKey(n, A, { permissions: ['CanWrite', 'CanRead'], application: 'web' });
  const webEvalRead = await makeKey(n, A, { permissions: ['CanEvaluate', 'CanRead'], application: 'web' });

  t.test('rule 1 / step 1: stage or userId missing is 400, before any lookup', async (t) => {
    expectProblem(t, await evalFlag(n, webEval, 'feat', { userId: 'u1' }), 400, 'BAD_REQUEST', /stage is required/);
    expectProblem(t, await evalFlag(n, webEval, 'feat', { stage: 'production' }), 400, 'BAD_REQUEST', /userId is required/);
    expectProblem(t, await evalFlag(n, webEval, 'feat', {}), 400, 'BAD_REQUEST', /stage.*userId|userId.*stage/);
    expectProblem(t, await evalFlag(n, webEval, 'feat', { userId: 'u1', stage: null }), 400, 'BAD_REQUEST', /stage/);
    expectProblem(t, await evalFlag(n, webEval, 'feat', { userId: null, stage: 'production' }), 400, 'BAD_REQUEST', /userId/);
    expectProblem(t, await evalFlag(n, webEval, 'feat', { userId: 'u1', stage: '' }), 400, 'BAD_REQUEST', /stage/);
    expectProblem(t, await evalFlag(n, webEval, 'feat', { userId: '', stage: 'production' }), 400, 'BAD_REQUEST', /userId/);
    expectProblem(t, await evalFlag(n, webEval, 'feat', { userId: 42, stage: 'production' }), 400, 'BAD_REQUEST', /userId/);
    expectProblem(t, await evalFlag(n, webEval, 'feat', { userId: 'u1', stage: ['production'] }), 400, 'BAD_REQUEST', /stage/);
    // 400 comes before 404 (unknown flag), 403 (other application) and 404 (unknown stage).
    expectProblem(t, await evalFlag(n, webEval, 'no-such-flag', { userId: 'u1' }), 400, 'BAD_REQUEST', /stage/);
    expectProblem(t, await evalFlag(n, webEval, 'bill-feat', { stage: 'production' }), 400, 'BAD_REQUEST', /userId/);
    expectProblem(t, await evalFlag(n, webEval, 'no-such-flag', { stage: 'nowhere' }), 400, 'BAD_REQUEST', /userId/);
    // Other malformed fields.
    expectProblem(t, await evalFlag(n, webEval, 'feat', { userId: 'u1', stage: 'production', context: 'x' }), 400, 'BAD_REQUEST', /context/);
    expectProblem(t, await evalFlag(n, webEval, 'feat', { userId: 'u1', stage: 'production', context: [1] }), 400, 'BAD_REQUEST', /context/);
    expectProblem(t, await evalFlag(n, webEval, 'feat', { userId: 'u1', stage: 'production', clientId: 7 }), 400, 'BAD_REQUEST', /clientId/);
    expectProblem(t, await evalFlag(n, webEval, 'feat', { userId: 'u1', stage: 'production', contxt: {} }), 400, 'BAD_REQUEST', /contxt/);
    // The same request, well-formed, answers.
    expectEval(t, await evalFlag(n, webEval, 'feat', { userId: 'u1', stage: 'production' }), 'off', false);
  });

  t.test('rule 5 / step 1: unknown flag 404, other application 403, unknown stage 404, in that order', async (t) => {
    expectProblem(t, await evalFlag(n, webEval, 'no-such-flag', { userId: 'u1', stage: 'production' }), 404, 'NOT_FOUND', /no-such-flag/);
    // Unknown flag and unknown stage: the flag is reported.
    const both = await evalFlag(n, webEval, 'no-such-flag', { userId: 'u1', stage: 'nowhere' });
    expectProblem(t, both, 404, 'NOT_FOUND', /no-such-flag/);
    t.notMatch(both.body.detail, /nowhere/);
    // Flag in another application than the key's scope: 403, even with an unknown stage.
    expectProblem(t, await evalFlag(n, webEval, 'bill-feat', { userId: 'u1', stage: 'production' }), 403, 'FORBIDDEN', /web/);
    expectProblem(t, await evalFlag(n, webEval, 'bill-feat', { userId: 'u1', stage: 'nowhere' }), 403, 'FORBIDDEN');
    // The stage is not an environment of the organization: 404.
    expectProblem(t, await evalFlag(n, webEval, 'feat', { userId: 'u1', stage: 'staging' }), 404, 'NOT_FOUND', /staging/);
    // The billing flag evaluates for a billing key.
    const billEval = await evalKey(n, A, 'billing');
    expectEval(t, await evalFlag(n, billEval, 'bill-feat', { userId: 'u1', stage: 'production' }), 'on', true);
    expectProblem(t, await evalFlag(n, billEval, 'feat', { userId: 'u1', stage: 'production' }), 403, 'FORBIDDEN');
  });

  t.test('rule 2: an environment-scoped key matches its stage case-insensitively and uses that configuration', async (t) => {
    // production config: off by default, on for NL; development config: on.
    expectEval(t, await evalFlag(n, webProdEval, 'feat', { userId: 'u1', stage: 'PRODUCTION' }, true), 'off', false, 'default');
    expectEval(t, await evalFlag(n, webProdEval, 'feat', { userId: 'u1', stage: 'Production', context: { country: 'NL' } }, true), 'on', true, 'rule_matched', 'nl-rule');
    expectEval(t, await evalFlag(n, webProdEval, 'feat', { userId: 'u1', stage: 'production' }), 'off', false);
    // Another stage: 403, whether or not it exists.
    expectProblem(t, await evalFlag(n, webProdEval, 'feat', { userId: 'u1', stage: 'development' }), 403, 'FORBIDDEN', /production/);
    expectProblem(t, await evalFlag(n, webProdEval, 'feat', { userId: 'u1', stage: 'staging' }), 403, 'FORBIDDEN');
    // The development key gets the development configuration, in any spelling.
    expectEval(t, await evalFlag(n, webDevEval, 'feat', { userId: 'u1', stage: 'DEVELOPMENT' }, true), 'on', true, 'default');
    expectProblem(t, await evalFlag(n, webDevEval, 'feat', { userId: 'u1', stage: 'PRODUCTION' }), 403, 'FORBIDDEN');
    // The application scope still applies to an environment-scoped key.
    expectProblem(t, await evalFlag(n, webProdEval, 'bill-feat', { userId: 'u1', stage: 'production' }), 403, 'FORBIDDEN');
  });

  t.test('rule 3: a key without environment scope evaluates every environment of its application', async (t) => {
    expectEval(t, await evalFlag(n, webEval, 'feat', { userId: 'u1', stage: 'production' }, true), 'off', false, 'default');
    expectEval(t, await evalFlag(n, webEval, 'feat', { userId: 'u1', stage: 'development' }, true), 'on', true, 'default');
    expectEval(t, await evalFlag(n, webEval, 'feat', { userId: 'u1', stage: 'DEVELOPMENT' }, true), 'on', true, 'default');
    expectEval(t, await evalFlag(n, webEval, 'feat', { userId: 'u1', stage: 'pRoDuCtIoN', context: { country: 'NL' } }, true), 'on', true, 'rule_matched', 'nl-rule');
  });

  t.test('rule 4 and permissions: org-wide CanEvaluate and keys without CanEvaluate are 403', async (t) => {
    const body = { userId: 'u1', stage: 'production' };
    expectProblem(t, await evalFlag(n, orgWideEval, 'feat', body), 403, 'FORBIDDEN', /organization-wide|application scope/);
    expectProblem(t, await evalFlag(n, A, 'feat', body), 403, 'FORBIDDEN', /CanEvaluate/);
    expectProblem(t, await evalFlag(n, webReader, 'feat', body), 403, 'FORBIDDEN', /CanEvaluate/);
    expectProblem(t, await evalFlag(n, webWriter, 'feat', body), 403, 'FORBIDDEN', /CanEvaluate/);
    const envOnly = await makeKey(n, A, { permissions: ['CanEvaluate'], environment: 'production' });
    expectProblem(t, await evalFlag(n, envOnly, 'feat', body), 403, 'FORBIDDEN');
    // A key with CanEvaluate and CanRead does both.
    expectEval(t, await evalFlag(n, webEvalRead, 'feat', body), 'off', false);
    t.equal((await n.req('GET', '/api/flags/feat', { key: webEvalRead })).status, 200);
  });

  t.test('explain: reason only with explain=true', async (t) => {
    const body = { userId: 'u1', stage: 'production', context: { country: 'NL' } };
    expectEval(t, await evalFlag(n, webEval, 'feat', body), 'on', true);
    const r = await evalFlag(n, webEval, 'feat', body, true);
    expectEval(t, r, 'on', true, 'rule_matched', 'nl-rule');
    t.match(r.body.reason.message, /priority 1/);
    const viaFalse = await n.req('POST', '/flags/feat?explain=false', { key: webEval, body });
    expectEval(t, viaFalse, 'on', true);
    const viaOne = await n.req('POST', '/flags/feat?explain=1', { key: webEval, body });
    expectEval(t, viaOne, 'on', true, 'rule_matched', 'nl-rule');
    // Other query parameters do not turn it on.
    expectEval(t, await n.req('POST', '/flags/feat?foo=true', { key: webEval, body }), 'on', true);
    expectProblem(t, await n.req('POST', '/flags/feat?explain=perhaps', { key: webEval, body }), 400, 'BAD_REQUEST', /explain/);
    // The default outcome has a reason without ruleId.
    expectEval(t, await evalFlag(n, webEval, 'feat', { userId: 'u1', stage: 'production' }, true), 'off', false, 'default');
    // A terminal outcome without explain is still just variant and key.
    const ek = await evalKey(n, A, 'web');
    must(t, await postFlag(n, A, 'no-config'), 201, 'create');
    expectEval(t, await evalFlag(n, ek, 'no-config', { userId: 'u1', stage: 'production' }), null, null);
    const nc = await evalFlag(n, ek, 'no-config', { userId: 'u1', stage: 'production' });
    t.equal(nc.text, '{"variant":null,"key":null}', 'nulls are present, reason is not');
  });

  t.test('targeting: conditions on context and userId, priorities, strict equality', async (t) => {
    must(t, await postFlag(n, A, 'tiers', {
      type: 'string',
      variants: [
        { key: 'free', value: 'Free', valueType: 'string' },
        { key: 'pro', value: 'Pro', valueType: 'string' },
        { key: 'vip', value: 'VIP', valueType: 'string' },
        { key: 'staff', value: 'Staff', valueType: 'string' },
      ],
    }), 201, 'create');
    must(t, await postConfig(n, A, 'tiers', {
      defaultVariantKey: 'free',
      rules: [
        // Stored out of order: priority decides, not position.
        { id: 'pro-plan', priority: 20, conditions: [{ field: 'account.plan', operator: '==', value: 'pro' }], allocations: [{ variantKey: 'pro', percentage: 100 }] },
        { id: 'vip-user', priority: 5, conditions: [{ field: 'userId', operator: '==', value: 'alice' }], allocations: [{ variantKey: 'vip', percentage: 100 }] },
        { id: 'staff', priority: 10, conditions: [{ field: 'account.plan', operator: '==', value: 'pro' }, { field: 'staff', operator: '==', value: true }], allocations: [{ variantKey: 'staff', percentage: 100 }] },
        { id: 'level', priority: 30, conditions: [{ field: 'level', operator: '==', value: 1 }], allocations: [{ variantKey: 'pro', percentage: 100 }] },
        { id: 'proto', priority: 40, conditions: [{ field: 'constructor.name', operator: '==', value: 'Object' }], allocations: [{ variantKey: 'staff', percentage: 100 }] },
      ],
    }), 200, 'config');
    const ev = (userId: string, context?: unknown) => evalFlag(n, webEval, 'tiers', { userId, stage: 'production', ...(context === undefined ? {} : { context }) }, true);

    expectEval(t, await ev('bob'), 'free', 'Free', 'default');
    expectEval(t, await ev('bob', { account: { plan: 'pro' } }), 'pro', 'Pro', 'rule_matched', 'pro-plan');
    const staff = await ev('bob', { account: { plan: 'pro' }, staff: true });
    expectEval(t, staff, 'staff', 'Staff', 'rule_matched', 'staff');
    t.match(staff.body.reason.message, /priority 10/);
    // alice matches priority 5 before anything else.
    expectEval(t, await ev('alice', { account: { plan: 'pro' }, staff: true }), 'vip', 'VIP', 'rule_matched', 'vip-user');
    // The request's userId wins over context.userId.
    expectEval(t, await ev('bob', { userId: 'alice' }), 'free', 'Free', 'default');
    expectEval(t, await ev('alice', { userId: 'bob' }), 'vip', 'VIP', 'rule_matched', 'vip-user');
    // == is strict JSON equality: "1" is not 1, "true" is not true.
    expectEval(t, await ev('bob', { level: 1 }), 'pro', 'Pro', 'rule_matched', 'level');
    expectEval(t, await ev('bob', { level: '1' }), 'free', 'Free', 'default');
    expectEval(t, await ev('bob', { account: { plan: 'pro' }, staff: 'true' }), 'pro', 'Pro', 'rule_matched', 'pro-plan');
    // A dotted path into a missing or non-object parent does not match.
    expectEval(t, await ev('bob', { account: 'pro' }), 'free', 'Free', 'default');
    expectEval(t, await ev('bob', { 'account.plan': 'pro' }), 'free', 'Free', 'default');
    expectEval(t, await ev('bob', null), 'free', 'Free', 'default');
    // Only own properties of the context are followed, never the prototype chain.
    expectEval(t, await ev('bob', {}), 'free', 'Free', 'default');
    expectEval(t, await ev('bob', { constructor: { name: 'Object' } }), 'staff', 'Staff', 'rule_matched', 'proto');
    // userId limits: 1024 characters is fine, 1025 is 400.
    expectEval(t, await ev('u'.repeat(1024)), 'free', 'Free', 'default');
    expectProblem(t, await evalFlag(n, webEval, 'tiers', { userId: 'u'.repeat(1025), stage: 'production' }), 400, 'BAD_REQUEST', /userId/);
  });

  t.test('deterministic rollout: same user same answer; 50% over 2,000 users is 47-53% and follows the documented hash', async (t) => {
    must(t, await postFlag(n, A, 'half', {
      type: 'string',
      variants: [
        { key: 'control', value: 'C', valueType: 'string' },
        { key: 'a', value: 'A', valueType: 'string' },
        { key: 'b', value: 'B', valueType: 'string' },
      ],
    }), 201, 'create');
    must(t, await postConfig(n, A, 'half', {
      defaultVariantKey: 'control',
      rolloutPercentage: 50,
      rules: [{ id: 'split', priority: 1, conditions: [], allocations: [{ variantKey: 'a', percentage: 50 }, { variantKey: 'b', percentage: 50 }] }],
    }), 200, 'config');

    // The same user, asked repeatedly (and with any context), gets the same answer.
    for (const user of ['alice', 'bob', 'carol']) {
      const first = await evalFlag(n, webEval, 'half', { userId: user, stage: 'production' }, true);
      for (let i = 0; i < 5; i++) {
        const again = await evalFlag(n, webEval, 'half', { userId: user, stage: 'production', context: { i } }, true);
        t.same(again.body, first.body, `${user} answer ${i} is stable`);
      }
    }

    const users = Array.from({ length: 2000 }, (_, i) => `user-${i}`);
    const results: Res[] = [];
    for (let i = 0; i < users.length; i += 100) {
      results.push(...(await Promise.all(users.slice(i, i + 100).map((u) => evalFlag(n, webEval, 'half', { userId: u, stage: 'production' }, true)))));
    }
    let included = 0;
    let inA = 0;
    let mismatches = 0;
    results.forEach((r, i) => {
      const u = users[i];
      if (r.status !== 200) {
        mismatches++;
        return;
      }
      const expectIn = rolloutBucket('half', u) < 5000;
      const expectKey = expectIn ? (allocationBucket('half', u) < 5000 ? 'a' : 'b') : 'control';
      const expectCode = expectIn ? 'rule_matched' : 'rollout_excluded';
      if (r.body.key !== expectKey || r.body.reason.code !== expectCode || r.body.variant !== expectKey.toUpperCase()[0]) mismatches++;
      if (r.body.reason.code === 'rule_matched') {
        included++;
        if (r.body.key === 'a') inA++;
      }
    });
    t.equal(mismatches, 0, 'every answer follows murmur3 buckets of (flag name, userId)');
    t.ok(included >= 940 && included <= 1060, `included ${included} of 2000 is within 47-53%`);
    t.ok(inA >= included * 0.45 && inA <= included * 0.55, `allocation a got ${inA} of ${included} included (about half)`);

    // Raising the rollout only adds users: everyone included at 50% is still included at 75%.
    must(t, await postConfig(n, A, 'half', {
      defaultVariantKey: 'control',
      rolloutPercentage: 75,
      rules: [{ id: 'split', priority: 1, conditions: [], allocations: [{ variantKey: 'a', percentage: 50 }, { variantKey: 'b', percentage: 50 }] }],
    }), 200, 'config 75');
    let lost = 0;
    for (let i = 0; i < 300; i += 100) {
      const batch = await Promise.all(users.slice(i, i + 100).map((u) => evalFlag(n, webEval, 'half', { userId: u, stage: 'production' }, true)));
      batch.forEach((r, j) => {
        if (results[i + j].body.reason.code === 'rule_matched' && (r.body.reason.code !== 'rule_matched' || r.body.key !== results[i + j].body.key)) lost++;
      });
    }
    t.equal(lost, 0, 'no user loses the flag or changes variant when the rollout grows');
  });
});

/**
 * A real node evaluates in worker threads by default (VEXIL_EVAL_WORKERS = cores); the harness
 * uses 0. The same answers, and read-your-writes after management changes, through the pool. The
 * pool loads the compiled worker (dist/workers/evaluator.js, built by `npm test`'s pretest).
 */
const workerFile = projectPath('dist', 'workers', 'evaluator.js');
t.test('evaluation through the worker pool', { skip: existsSync(workerFile) ? false : `${workerFile} is missing: run npm run build` }, async (t) => {
  const n = await startNode(t, { env: { VEXIL_EVAL_WORKERS: '2', VEXIL_EVAL_HANDOFF: 'always' } });
  t.equal(n.node.runtime.pool?.threads, 2, 'two evaluation workers');
  const org = await createOrg(n);
  const A = org.adminKey;
  const ek = await evalKey(n, A, 'web');
  const nl = { id: 'nl', priority: 2, conditions: [{ field: 'country', operator: '==', value: 'NL' }], allocations: [{ variantKey: 'on', percentage: 100 }] };
  must(t, await postFlag(n, A, 'pooled'), 201, 'create');
  must(t, await postConfig(n, A, 'pooled', { rules: [nl] }), 200, 'config');

  expectEval(t, await evalFlag(n, ek, 'pooled', { userId: 'u', stage: 'production', context: { country: 'NL' } }, true), 'on', true, 'rule_matched', 'nl');
  expectEval(t, await evalFlag(n, ek, 'pooled', { userId: 'u', stage: 'production', context: { country: 'NL' } }), 'on', true);
  expectEval(t, await evalFlag(n, ek, 'pooled', { userId: 'u', stage: 'production' }, true), 'off', false, 'default');
  expectProblem(t, await evalFlag(n, ek, 'nope', { userId: 'u', stage: 'production' }), 404, 'NOT_FOUND');

  // Every management change is visible to the very next evaluation.
  must(t, await postConfig(n, A, 'pooled', { defaultVariantKey: 'on', rules: [] }), 200, 'reconfigure');
  expectEval(t, await evalFlag(n, ek, 'pooled', { userId: 'u', stage: 'production' }, true), 'on', true, 'default');
  must(t, await putFlag(n, A, 'pooled', { isArchived: true }), 200, 'archive');
  expectEval(t, await evalFlag(n, ek, 'pooled', { userId: 'u', stage: 'production' }, true), 'on', true, 'archived');
  must(t, await putFlag(n, A, 'pooled', { isArchived: false }), 200, 'restore');
  await setKillSwitch(n, A, [{ flag: 'pooled' }]);
  expectEval(t, await evalFlag(n, ek, 'pooled', { userId: 'u', stage: 'production' }, true), 'on', true, 'killswitch');
  await setKillSwitch(n, A, []);
  expectEval(t, await evalFlag(n, ek, 'pooled', { userId: 'u', stage: 'production' }, true), 'on', true, 'default');
  must(t, await postFlag(n, A, 'pooled-child', { dependencies: [{ flag: 'pooled', variants: ['off'] }] }), 201, 'child');
  must(t, await postConfig(n, A, 'pooled-child', { defaultVariantKey: 'on' }), 200, 'child config');
  expectEval(t, await evalFlag(n, ek, 'pooled-child', { userId: 'u', stage: 'production' }, true), 'on', true, 'disabled_dependency');
  must(t, await deleteFlag(n, A, 'pooled-child'), 204, 'delete child');
  expectProblem(t, await evalFlag(n, ek, 'pooled-child', { userId: 'u', stage: 'production' }), 404, 'NOT_FOUND');

  // Concurrent evaluations (batched into the workers) follow the documented buckets.
  must(t, await postConfig(n, A, 'pooled', { rolloutPercentage: 50, rules: [{ id: 'all', priority: 1, conditions: [], allocations: [{ variantKey: 'on', percentage: 100 }] }] }), 200, 'rollout');
  const users = Array.from({ length: 400 }, (_, i) => `pool-${i}`);
  const results = await Promise.all(users.map((u) => evalFlag(n, ek, 'pooled', { userId: u, stage: 'production' }, true)));
  const wrong = results.filter((r, i) => r.status !== 200 || r.body.reason.code !== (rolloutBucket('pooled', users[i]) < 5000 ? 'rule_matched' : 'rollout_excluded'));
  t.equal(wrong.length, 0, 'every pooled answer follows the rollout bucket');
});
