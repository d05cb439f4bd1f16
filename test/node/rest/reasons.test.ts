/**
 * All thirteen reason codes reached through the REST API (docs/evaluation.md, "Order", steps 2-13),
 * the variant terminal outcomes answer (the configuration's defaultVariantKey, else null/null),
 * and the precedence between them. States are created over REST, except the kill switch: there
 * is no REST endpoint for it yet (GraphQL comes later), so it is written through the service
 * layer (`replaceKillSwitch` with an Authenticated from the real `authenticate`).
 */
import t from 'tap';
import { rolloutBucket } from '../../../src/engine/index.js';
import type { Res, TestNode } from '../../helpers/node.js';
import {
  createOrg,
  evalFlag,
  evalKey,
  must,
  postConfig,
  postFlag,
  putFlag,
  setKillSwitch,
  startNode,
  type TapTest,
} from '../../helpers/flags.js';

const colours = [
  { key: 'red', value: '#f00', valueType: 'string' },
  { key: 'blue', value: '#00f', valueType: 'string' },
];
/** Everybody gets blue through a rule; the default (terminal outcomes) is red. */
const allBlue = { id: 'all-blue', priority: 7, conditions: [], allocations: [{ variantKey: 'blue', percentage: 100 }] };
const RED = { key: 'red', variant: '#f00' };
const BLUE = { key: 'blue', variant: '#00f' };
const NONE = { key: null, variant: null };

const hour = 3600_000;
const iso = (ms: number) => new Date(ms).toISOString();

interface Ctx {
  n: TestNode;
  admin: string;
  ek: string;
}

async function setup(n: TestNode): Promise<Ctx> {
  const org = await createOrg(n, ['development', 'production'], ['web', 'other']);
  return { n, admin: org.adminKey, ek: await evalKey(n, org.adminKey, 'web') };
}

/** Creates a string flag in web (201 asserted) and, unless `config` is null, its production configuration. */
async function flag(t: TapTest, c: Ctx, name: string, extra: Record<string, unknown> = {}, config: Record<string, unknown> | null = {}) {
  must(t, await postFlag(c.n, c.admin, name, { type: 'string', variants: colours, ...extra }), 201, `create ${name}`);
  if (config !== null) {
    must(t, await postConfig(c.n, c.admin, name, { defaultVariantKey: 'red', rules: [allBlue], ...config }), 200, `config ${name}`);
  }
}

/**
 * Evaluates with explain (reason code, ruleId present only for rule_matched) and without (exactly
 * variant and key), and checks both answer `expected`.
 */
async function expectOutcome(
  t: TapTest,
  c: Ctx,
  name: string,
  body: Record<string, unknown>,
  code: string,
  expected: { key: string | null; variant: unknown },
  ruleId?: string,
): Promise<Res> {
  const req = { userId: 'user-1', stage: 'production', ...body };
  const r = await evalFlag(c.n, c.ek, name, req, true);
  t.equal(r.status, 200, `${name}: 200 (got ${r.status} ${r.text.slice(0, 200)})`);
  t.equal(r.body?.reason?.code, code, `${name}: reason.code ${code}`);
  t.type(r.body?.reason?.message, 'string', `${name}: reason.message`);
  if (ruleId === undefined) t.notOk(r.body?.reason && 'ruleId' in r.body.reason, `${name}: no ruleId`);
  else t.equal(r.body?.reason?.ruleId, ruleId, `${name}: reason.ruleId`);
  t.equal(r.body?.key, expected.key, `${name}: key`);
  t.same(r.body?.variant, expected.variant, `${name}: variant`);
  const plain = await evalFlag(c.n, c.ek, name, req, false);
  t.same(plain.body, { variant: expected.variant, key: expected.key }, `${name}: without explain, just variant and key`);
  t.notOk('reason' in (plain.body ?? {}), `${name}: no reason key without explain`);
  return r;
}

t.test('reason codes over REST', async (t) => {
  const n = await startNode(t);

  t.test('rule_matched and default', async (t) => {
    const c = await setup(n);
    await flag(t, c, 'colour', {}, {
      rules: [{ id: 'vip', priority: 3, conditions: [{ field: 'tier', operator: '==', value: 'vip' }], allocations: [{ variantKey: 'blue', percentage: 100 }] }],
    });
    const m = await expectOutcome(t, c, 'colour', { context: { tier: 'vip' } }, 'rule_matched', BLUE, 'vip');
    t.match(m.body.reason.message, /priority 3/, 'the message names the priority');
    t.match(m.body.reason.message, /vip/);
    await expectOutcome(t, c, 'colour', { context: { tier: 'basic' } }, 'default', RED);
    await expectOutcome(t, c, 'colour', {}, 'default', RED);
    // A rule with no conditions matches every user.
    await flag(t, c, 'everyone');
    await expectOutcome(t, c, 'everyone', { userId: 'anyone-at-all' }, 'rule_matched', BLUE, 'all-blue');
  });

  t.test('killswitch (rules set through GraphQL replaceKillSwitch)', async (t) => {
    const c = await setup(n);
    await flag(t, c, 'ks-target');
    await flag(t, c, 'ks-bystander');
    await flag(t, c, 'ks-unconfigured', {}, null);
    await flag(t, c, 'ks-dev', {}, { stage: 'development' });

    await setKillSwitch(n, c.admin, [{ flag: 'ks-target' }, { flag: 'ks-unconfigured' }]);
    const k = await expectOutcome(t, c, 'ks-target', {}, 'killswitch', RED);
    t.match(k.body.reason.message, /ks-target/);
    await expectOutcome(t, c, 'ks-unconfigured', {}, 'killswitch', NONE);
    await expectOutcome(t, c, 'ks-bystander', {}, 'rule_matched', BLUE, 'all-blue');

    // An environment rule covers only that stage; an application rule every flag of it.
    await setKillSwitch(n, c.admin, [{ environment: 'development' }]);
    await expectOutcome(t, c, 'ks-dev', { stage: 'development' }, 'killswitch', RED);
    await expectOutcome(t, c, 'ks-target', {}, 'rule_matched', BLUE, 'all-blue');
    await setKillSwitch(n, c.admin, [{ application: 'web', environment: 'production' }]);
    await expectOutcome(t, c, 'ks-bystander', {}, 'killswitch', RED);
    await expectOutcome(t, c, 'ks-dev', { stage: 'development' }, 'rule_matched', BLUE, 'all-blue');
    await setKillSwitch(n, c.admin, [{ application: 'other' }]);
    await expectOutcome(t, c, 'ks-bystander', {}, 'rule_matched', BLUE, 'all-blue');

    // Clearing the kill switch restores every flag.
    await setKillSwitch(n, c.admin, []);
    await expectOutcome(t, c, 'ks-target', {}, 'rule_matched', BLUE, 'all-blue');
    await expectOutcome(t, c, 'ks-unconfigured', {}, 'config_missing', NONE);
  });

  t.test('archived (PUT isArchived true)', async (t) => {
    const c = await setup(n);
    await flag(t, c, 'retired');
    await flag(t, c, 'retired-unconfigured', {}, null);
    must(t, await putFlag(n, c.admin, 'retired', { isArchived: true }), 200, 'archive');
    must(t, await putFlag(n, c.admin, 'retired-unconfigured', { isArchived: true }), 200, 'archive');
    await expectOutcome(t, c, 'retired', {}, 'archived', RED);
    await expectOutcome(t, c, 'retired-unconfigured', {}, 'archived', NONE);
  });

  t.test('not_yet_active and expired (activeFrom / activeUntil)', async (t) => {
    const c = await setup(n);
    const now = Date.now();
    await flag(t, c, 'future', {}, { activeFrom: iso(now + hour) });
    await flag(t, c, 'past', {}, { activeUntil: iso(now - hour) });
    await flag(t, c, 'window', {}, { activeFrom: iso(now - hour), activeUntil: iso(now + hour) });
    await expectOutcome(t, c, 'future', {}, 'not_yet_active', RED);
    await expectOutcome(t, c, 'past', {}, 'expired', RED);
    await expectOutcome(t, c, 'window', {}, 'rule_matched', BLUE, 'all-blue');
    // Moving the window over now activates the flag.
    must(t, await postConfig(n, c.admin, 'future', { defaultVariantKey: 'red', rules: [allBlue], activeFrom: iso(now - hour) }), 200, 'reconfigure');
    await expectOutcome(t, c, 'future', {}, 'rule_matched', BLUE, 'all-blue');
  });

  t.test('project_or_env_mismatch: stage outside the flag environments, or clientId of another application', async (t) => {
    const c = await setup(n);
    await flag(t, c, 'dev-only', { environments: ['development'] }, { stage: 'development' });
    await expectOutcome(t, c, 'dev-only', { stage: 'production' }, 'project_or_env_mismatch', NONE);
    await expectOutcome(t, c, 'dev-only', { stage: 'PRODUCTION' }, 'project_or_env_mismatch', NONE);
    await expectOutcome(t, c, 'dev-only', { stage: 'development' }, 'rule_matched', BLUE, 'all-blue');

    await flag(t, c, 'web-flag');
    const m = await expectOutcome(t, c, 'web-flag', { clientId: 'other:web' }, 'project_or_env_mismatch', RED);
    t.match(m.body.reason.message, /other/);
    await expectOutcome(t, c, 'web-flag', { clientId: 'OTHER:web' }, 'project_or_env_mismatch', RED);
    // The flag's own application, a clientId without a colon, or a prefix that is no application: not namespaced elsewhere.
    await expectOutcome(t, c, 'web-flag', { clientId: 'web:ios' }, 'rule_matched', BLUE, 'all-blue');
    await expectOutcome(t, c, 'web-flag', { clientId: 'other' }, 'rule_matched', BLUE, 'all-blue');
    await expectOutcome(t, c, 'web-flag', { clientId: 'nobody:web' }, 'rule_matched', BLUE, 'all-blue');
  });

  t.test('config_missing and config_disabled', async (t) => {
    const c = await setup(n);
    await flag(t, c, 'unconfigured', {}, null);
    await expectOutcome(t, c, 'unconfigured', {}, 'config_missing', NONE);
    await flag(t, c, 'prod-configured');
    await expectOutcome(t, c, 'prod-configured', { stage: 'development' }, 'config_missing', NONE);
    // Only a clientId configuration: used for that client, missing for everybody else.
    await flag(t, c, 'client-only', {}, { clientId: 'web:ios' });
    await expectOutcome(t, c, 'client-only', { clientId: 'web:ios' }, 'rule_matched', BLUE, 'all-blue');
    await expectOutcome(t, c, 'client-only', {}, 'config_missing', NONE);
    await expectOutcome(t, c, 'client-only', { clientId: 'web:android' }, 'config_missing', NONE);

    await flag(t, c, 'switched-off', {}, { enabled: false });
    await expectOutcome(t, c, 'switched-off', {}, 'config_disabled', RED);
    // A disabled clientId configuration does not fall back to the enabled stage configuration.
    must(t, await postConfig(n, c.admin, 'prod-configured', { clientId: 'web:ios', enabled: false, defaultVariantKey: 'red' }), 200, 'client config');
    await expectOutcome(t, c, 'prod-configured', { clientId: 'web:ios' }, 'config_disabled', RED);
    await expectOutcome(t, c, 'prod-configured', {}, 'rule_matched', BLUE, 'all-blue');
  });

  t.test('disabled_dependency (dependencies on create)', async (t) => {
    const c = await setup(n);
    await flag(t, c, 'parent-off', {}, { enabled: false });
    await flag(t, c, 'child-of-off', { dependencies: [{ flag: 'parent-off' }] });
    const d = await expectOutcome(t, c, 'child-of-off', {}, 'disabled_dependency', RED);
    t.match(d.body.reason.message, /parent-off/);

    await flag(t, c, 'parent-unconfigured', {}, null);
    await flag(t, c, 'child-of-unconfigured', { dependencies: [{ flag: 'parent-unconfigured' }] });
    await expectOutcome(t, c, 'child-of-unconfigured', {}, 'disabled_dependency', RED);

    // The parent serves blue (rule_matched): a dependency on any variant or on blue holds, on red fails.
    await flag(t, c, 'parent-blue');
    await flag(t, c, 'child-any', { dependencies: [{ flag: 'parent-blue' }] });
    await flag(t, c, 'child-blue', { dependencies: [{ flag: 'parent-blue', variants: ['blue'] }] });
    await flag(t, c, 'child-red', { dependencies: [{ flag: 'parent-blue', variants: ['red'] }] });
    await expectOutcome(t, c, 'child-any', {}, 'rule_matched', BLUE, 'all-blue');
    await expectOutcome(t, c, 'child-blue', {}, 'rule_matched', BLUE, 'all-blue');
    await expectOutcome(t, c, 'child-red', {}, 'disabled_dependency', RED);

    // A parent ending in default holds too; archiving it disables the child; a grandparent counts.
    await flag(t, c, 'parent-default', {}, { rules: [] });
    await flag(t, c, 'child-of-default', { dependencies: [{ flag: 'parent-default' }] });
    await flag(t, c, 'grandchild', { dependencies: [{ flag: 'child-of-default' }] });
    await expectOutcome(t, c, 'child-of-default', {}, 'rule_matched', BLUE, 'all-blue');
    await expectOutcome(t, c, 'grandchild', {}, 'rule_matched', BLUE, 'all-blue');
    must(t, await putFlag(n, c.admin, 'parent-default', { isArchived: true }), 200, 'archive parent');
    await expectOutcome(t, c, 'child-of-default', {}, 'disabled_dependency', RED);
    await expectOutcome(t, c, 'grandchild', {}, 'disabled_dependency', RED);

    // The parent is evaluated for the same user and context.
    await flag(t, c, 'parent-nl', {}, {
      rules: [{ id: 'nl', priority: 1, conditions: [{ field: 'country', operator: '==', value: 'NL' }], allocations: [{ variantKey: 'blue', percentage: 100 }] }],
    });
    await flag(t, c, 'child-nl', { dependencies: [{ flag: 'parent-nl', variants: ['blue'] }] });
    await expectOutcome(t, c, 'child-nl', { context: { country: 'NL' } }, 'rule_matched', BLUE, 'all-blue');
    await expectOutcome(t, c, 'child-nl', { context: { country: 'BE' } }, 'disabled_dependency', RED);
  });

  t.test('rollout_excluded (rollout 0) and enrollment_closed (cut-off 0, rollout 100)', async (t) => {
    const c = await setup(n);
    await flag(t, c, 'nobody', {}, { rolloutPercentage: 0 });
    for (const u of ['a', 'b', 'c']) await expectOutcome(t, c, 'nobody', { userId: u }, 'rollout_excluded', RED);
    await flag(t, c, 'closed', {}, { rolloutPercentage: 100, enrollmentCutoff: 0 });
    for (const u of ['a', 'b', 'c']) await expectOutcome(t, c, 'closed', { userId: u }, 'enrollment_closed', RED);
    // A cut-off at or above the rollout has no effect.
    await flag(t, c, 'open', {}, { rolloutPercentage: 100, enrollmentCutoff: 100 });
    await expectOutcome(t, c, 'open', {}, 'rule_matched', BLUE, 'all-blue');
    // Cut-off 50: buckets below 5000 keep the flag, the rest of the rollout is closed.
    await flag(t, c, 'half-closed', {}, { rolloutPercentage: 100, enrollmentCutoff: 50 });
    let inside = 0;
    let outside = 0;
    for (let i = 0; inside < 2 || outside < 2; i++) {
      const u = `cut-${i}`;
      if (rolloutBucket('half-closed', u) < 5000) {
        if (inside++ < 2) await expectOutcome(t, c, 'half-closed', { userId: u }, 'rule_matched', BLUE, 'all-blue');
      } else if (outside++ < 2) {
        await expectOutcome(t, c, 'half-closed', { userId: u }, 'enrollment_closed', RED);
      }
    }
  });

  t.test('no_variants (flag created with variants: [])', async (t) => {
    const c = await setup(n);
    await flag(t, c, 'empty', { variants: [] }, null);
    await expectOutcome(t, c, 'empty', {}, 'no_variants', NONE);
    await expectOutcome(t, c, 'empty', { stage: 'development' }, 'no_variants', NONE);
    must(t, await putFlag(n, c.admin, 'empty', { isArchived: true }), 200, 'archive');
    await expectOutcome(t, c, 'empty', {}, 'no_variants', NONE);
    // Adding variants later makes it configurable.
    must(t, await putFlag(n, c.admin, 'empty', { variants: colours, isArchived: false }), 200, 'add variants');
    await expectOutcome(t, c, 'empty', {}, 'config_missing', NONE);
  });

  t.test('precedence: the first applicable step decides', async (t) => {
    const c = await setup(n);
    const now = Date.now();
    // killswitch before archived
    await flag(t, c, 'p-ks-archived');
    must(t, await putFlag(n, c.admin, 'p-ks-archived', { isArchived: true }), 200, 'archive');
    await setKillSwitch(n, c.admin, [{ flag: 'p-ks-archived' }]);
    await expectOutcome(t, c, 'p-ks-archived', {}, 'killswitch', RED);
    // no_variants before killswitch
    await flag(t, c, 'p-empty-ks', { variants: [] }, null);
    await setKillSwitch(n, c.admin, [{ flag: 'p-ks-archived' }, { flag: 'p-empty-ks' }]);
    await expectOutcome(t, c, 'p-empty-ks', {}, 'no_variants', NONE);
    // archived before project_or_env_mismatch
    await flag(t, c, 'p-archived-mismatch');
    must(t, await putFlag(n, c.admin, 'p-archived-mismatch', { isArchived: true }), 200, 'archive');
    await expectOutcome(t, c, 'p-archived-mismatch', { clientId: 'other:x' }, 'archived', RED);
    // project_or_env_mismatch before config_disabled
    await flag(t, c, 'p-mismatch-disabled', {}, { enabled: false });
    await expectOutcome(t, c, 'p-mismatch-disabled', { clientId: 'other:x' }, 'project_or_env_mismatch', RED);
    // config_disabled before expired
    await flag(t, c, 'p-disabled-expired', {}, { enabled: false, activeUntil: iso(now - hour) });
    await expectOutcome(t, c, 'p-disabled-expired', {}, 'config_disabled', RED);
    // not_yet_active before disabled_dependency
    await flag(t, c, 'p-parent-off', {}, { enabled: false });
    await flag(t, c, 'p-future-dep', { dependencies: [{ flag: 'p-parent-off' }] }, { activeFrom: iso(now + hour) });
    await expectOutcome(t, c, 'p-future-dep', {}, 'not_yet_active', RED);
    // disabled_dependency before rollout_excluded
    await flag(t, c, 'p-dep-rollout', { dependencies: [{ flag: 'p-parent-off' }] }, { rolloutPercentage: 0 });
    await expectOutcome(t, c, 'p-dep-rollout', {}, 'disabled_dependency', RED);
    // rollout_excluded before enrollment_closed
    await flag(t, c, 'p-rollout-closed', {}, { rolloutPercentage: 0, enrollmentCutoff: 0 });
    await expectOutcome(t, c, 'p-rollout-closed', {}, 'rollout_excluded', RED);
    // enrollment_closed before rule_matched
    await flag(t, c, 'p-closed-rule', {}, { enrollmentCutoff: 0 });
    await expectOutcome(t, c, 'p-closed-rule', {}, 'enrollment_closed', RED);
    await setKillSwitch(n, c.admin, []);
  });

  t.test('terminal outcomes answer the defaultVariantKey variant of the selected configuration', async (t) => {
    const c = await setup(n);
    // Distinct defaults per (stage, clientId) show which configuration a terminal outcome used.
    must(t, await postFlag(n, c.admin, 'multi', {
      type: 'json',
      variants: [
        { key: 'a', value: { v: 'A' }, valueType: 'json' },
        { key: 'b', value: [1, 2], valueType: 'json' },
        { key: 'c', value: null, valueType: 'json' },
      ],
    }), 201, 'create');
    const rule = { id: 'r', priority: 1, conditions: [], allocations: [{ variantKey: 'a', percentage: 100 }] };
    must(t, await postConfig(n, c.admin, 'multi', { defaultVariantKey: 'b', rolloutPercentage: 0, rules: [rule] }), 200, 'prod');
    must(t, await postConfig(n, c.admin, 'multi', { clientId: 'web:ios', defaultVariantKey: 'c', rolloutPercentage: 0, rules: [rule] }), 200, 'ios');
    await expectOutcome(t, c, 'multi', {}, 'rollout_excluded', { key: 'b', variant: [1, 2] });
    await expectOutcome(t, c, 'multi', { clientId: 'web:ios' }, 'rollout_excluded', { key: 'c', variant: null });
    must(t, await putFlag(n, c.admin, 'multi', { isArchived: true }), 200, 'archive');
    await expectOutcome(t, c, 'multi', {}, 'archived', { key: 'b', variant: [1, 2] });
    await expectOutcome(t, c, 'multi', { clientId: 'web:ios' }, 'archived', { key: 'c', variant: null });
  });
});
