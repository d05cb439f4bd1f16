import t from 'tap';
import type { Flag, FlagConfig, KillSwitchRule, ReasonCode } from '../../../src/domain/types.js';
import { REASON_CODES } from '../../../src/domain/types.js';
import {
  evaluateFlag,
  rolloutBucket,
  allocationBucket,
  MAX_DEPENDENCY_DEPTH,
} from '../../../src/engine/index.js';
import { NOW, org, flag, config, rule, req, snap, evalIn, evalOne } from '../../helpers/engine-fixtures.js';

const HOUR = 3600_000;
const iso = (ms: number) => new Date(ms).toISOString();

// ---------------------------------------------------------------------------------------------
// Precedence: every terminal condition can be switched on independently ("faults"); the engine
// must answer the first one in the order of docs/evaluation.md, "Order".
// ---------------------------------------------------------------------------------------------

const ORDER = [
  'no_variants',
  'killswitch',
  'archived',
  'project_or_env_mismatch',
  'config_missing',
  'config_disabled',
  'not_yet_active',
  'expired',
  'disabled_dependency',
  'rollout_excluded',
  'enrollment_closed',
  'default', // "fault" = no rule matches; otherwise the outcome is rule_matched
] as const;
type Fault = (typeof ORDER)[number];

function scenario(faults: ReadonlySet<Fault>) {
  const o = org({
    killSwitch: faults.has('killswitch') ? [{ flag: null, application: 'web', environment: 'production' }] : [],
  });
  const f = flag({
    variants: faults.has('no_variants') ? [] : flag().variants,
    isArchived: faults.has('archived'),
    environments: faults.has('project_or_env_mismatch') ? ['development', 'staging'] : ['development', 'staging', 'production'],
    dependencies: faults.has('disabled_dependency') ? [{ flag: 'ghost', variants: null }] : [],
  });
  const configs: FlagConfig[] = [config({ stage: 'staging', defaultVariantKey: 'on' })];
  if (!faults.has('config_missing')) {
    configs.push(
      config({
        enabled: !faults.has('config_disabled'),
        activeFrom: faults.has('not_yet_active') ? iso(NOW + HOUR) : iso(NOW - 2 * HOUR),
        activeUntil: faults.has('expired') ? iso(NOW - HOUR) : iso(NOW + 2 * HOUR),
        rolloutPercentage: faults.has('rollout_excluded') ? 0 : 100,
        enrollmentCutoff: faults.has('enrollment_closed') ? 0 : null,
        rules: faults.has('default')
          ? [rule('r1', 1, { conditions: [{ field: 'plan', operator: '==', value: 'enterprise' }] })]
          : [rule('r1', 1, { conditions: [{ field: 'plan', operator: '==', value: 'pro' }] })],
      }),
    );
  }
  return evalOne(f, configs, { context: { plan: 'pro' } }, o);
}

function expected(faults: ReadonlySet<Fault>): ReasonCode {
  for (const c of ORDER) if (faults.has(c)) return c;
  return 'rule_matched';
}

t.test('every reason code is reachable on its own', async (t) => {
  const seen = new Set<string>();
  for (const fault of ORDER) {
    const e = scenario(new Set([fault]));
    t.equal(e.reason.code, fault, fault);
    seen.add(e.reason.code);
  }
  const clean = scenario(new Set());
  t.equal(clean.reason.code, 'rule_matched');
  seen.add(clean.reason.code);
  t.same([...seen].sort(), [...REASON_CODES].sort(), 'all 13 codes covered');
});

t.test('each pair: the earlier step wins', async (t) => {
  for (let i = 0; i < ORDER.length; i++) {
    for (let j = i + 1; j < ORDER.length; j++) {
      const e = scenario(new Set([ORDER[i], ORDER[j]]));
      t.equal(e.reason.code, ORDER[i], `${ORDER[i]} beats ${ORDER[j]}`);
    }
  }
});

t.test('all 4096 combinations answer the first applicable code and the right terminal variant', async (t) => {
  let bad = 0;
  for (let mask = 0; mask < 1 << ORDER.length; mask++) {
    const faults = new Set<Fault>(ORDER.filter((_, i) => mask & (1 << i)));
    const e = scenario(faults);
    const want = expected(faults);
    let wantKey: string | null;
    if (want === 'rule_matched') wantKey = 'on';
    else if (faults.has('no_variants') || faults.has('config_missing')) wantKey = null;
    else wantKey = 'off';
    const wantVariant = wantKey === null ? null : wantKey.toUpperCase();
    if (e.reason.code !== want || e.key !== wantKey || e.variant !== wantVariant) {
      bad++;
      if (bad <= 5) t.fail(`${[...faults].join('+')}: got ${e.reason.code}/${e.key}, want ${want}/${wantKey}`);
    }
    if (typeof e.reason.message !== 'string' || e.reason.message.length < 8) {
      bad++;
      t.fail(`no message for ${want}`);
    }
    if ((e.reason.ruleId !== undefined) !== (want === 'rule_matched')) {
      bad++;
      t.fail(`ruleId set only for rule_matched (${want})`);
    }
  }
  t.equal(bad, 0, 'no combination answered wrongly');
});

// ---------------------------------------------------------------------------------------------
// Reason messages and terminal variants
// ---------------------------------------------------------------------------------------------

t.test('reason messages are specific', async (t) => {
  const cases: [Fault, RegExp][] = [
    ['no_variants', /no variants/],
    ['killswitch', /kill switch.*application 'web'.*environment 'production'/],
    ['archived', /^Flag is archived$/],
    ['project_or_env_mismatch', /stage 'production'/],
    ['config_missing', /^Stage 'production' has no configuration$/],
    ['config_disabled', /stage 'production' is disabled/],
    ['not_yet_active', /not active until 2025-06-01T13:00:00.000Z/],
    ['expired', /expired at 2025-06-01T11:00:00.000Z/],
    ['disabled_dependency', /Parent flag 'ghost' does not exist/],
    ['rollout_excluded', /^User is outside the 0% rollout$/],
    ['enrollment_closed', /closed at 0%/],
    ['default', /No rule matched; serving default variant 'off'/],
  ];
  for (const [fault, re] of cases) t.match(scenario(new Set([fault])).reason.message, re, fault);
  const e = scenario(new Set());
  t.equal(e.reason.message, 'Matched rule r1 at priority 1');
  t.equal(e.reason.ruleId, 'r1');
  const r25 = evalOne(flag(), [config({ rolloutPercentage: 25 })], { userId: excludedUser('checkout', 2500) });
  t.equal(r25.reason.message, 'User is outside the 25% rollout');
});

t.test('terminal outcomes answer the configuration default variant; null when none', async (t) => {
  const f = flag();
  const archived = flag({ isArchived: true });
  // default variant of the selected configuration, with its value
  t.same(evalOne(archived, [config({ defaultVariantKey: 'on' })]), {
    key: 'on',
    variant: 'ON',
    reason: { code: 'archived', message: 'Flag is archived' },
    index: 0,
  });
  // default key naming no variant: key and variant null, for terminal codes and for `default`
  const e1 = evalOne(archived, [config({ defaultVariantKey: 'gone' })]);
  t.same([e1.reason.code, e1.key, e1.variant], ['archived', null, null]);
  const e2 = evalOne(f, [config({ defaultVariantKey: 'gone' })]);
  t.same([e2.reason.code, e2.key, e2.variant], ['default', null, null]);
  t.match(e2.reason.message, /'gone' does not exist/);
  // killswitch before config lookup still answers the configuration's default
  const ks = org({ killSwitch: [{ flag: 'checkout', application: null, environment: null }] });
  const e3 = evalOne(f, [config({ defaultVariantKey: 'on' })], {}, ks);
  t.same([e3.reason.code, e3.key, e3.variant], ['killswitch', 'on', 'ON']);
  // ... and null when no configuration exists for the request
  const e4 = evalOne(f, [config({ stage: 'staging' })], {}, ks);
  t.same([e4.reason.code, e4.key, e4.variant], ['killswitch', null, null]);
  // structured variant values are answered as stored
  const json = flag({ type: 'json', variants: [{ key: 'cfg', value: { a: [1, 2] }, valueType: 'json' }] });
  t.same(evalOne(json, [config({ defaultVariantKey: 'cfg', enabled: false })]).variant, { a: [1, 2] });
  // a variant whose value is false is still answered (not mistaken for "no variant")
  const bool = flag({ type: 'boolean', variants: [{ key: 'off', value: false, valueType: 'boolean' }] });
  t.same(evalOne(bool, [config({ defaultVariantKey: 'off', enabled: false })]), {
    key: 'off',
    variant: false,
    reason: { code: 'config_disabled', message: "Configuration for stage 'production' is disabled" },
    index: 0,
  });
});

t.test('results are fresh objects', async (t) => {
  const s = snap(org(), [flag()], { checkout: [config()] });
  const a = evalIn(s, 'checkout');
  a.key = 'mutated';
  const b = evalIn(s, 'checkout');
  t.not(a, b);
  t.equal(b.key, 'off');
});

// ---------------------------------------------------------------------------------------------
// Kill switch, environments, clientId
// ---------------------------------------------------------------------------------------------

t.test('kill-switch rule matching', async (t) => {
  const f = flag();
  const code = (rules: KillSwitchRule[], stage = 'production') =>
    evalOne(f, [config({ stage })], { stage }, org({ killSwitch: rules })).reason.code;
  t.equal(code([{ flag: null, application: null, environment: null }]), 'killswitch', 'all-null rule matches everything');
  t.equal(code([{ flag: 'checkout', application: null, environment: null }]), 'killswitch', 'by flag');
  t.equal(code([{ flag: 'other', application: null, environment: null }]), 'default', 'other flag');
  t.equal(code([{ flag: 'Checkout', application: null, environment: null }]), 'default', 'flag names are exact');
  t.equal(code([{ flag: null, application: 'web', environment: null }]), 'killswitch', 'by application');
  t.equal(code([{ flag: null, application: 'mobile', environment: null }]), 'default', 'other application');
  t.equal(code([{ flag: null, application: null, environment: 'PRODUCTION' }]), 'killswitch', 'environment case-insensitive');
  t.equal(code([{ flag: null, application: null, environment: 'staging' }]), 'default', 'other environment');
  t.equal(code([{ flag: null, application: null, environment: 'staging' }], 'staging'), 'killswitch');
  t.equal(code([{ flag: 'checkout', application: 'web', environment: 'staging' }]), 'default', 'every non-null field must match');
  t.equal(code([{ flag: 'checkout', application: 'web', environment: 'production' }]), 'killswitch');
  t.equal(
    code([{ flag: 'other', application: null, environment: null }, { flag: null, application: null, environment: 'production' }]),
    'killswitch',
    'any rule of the list',
  );
});

t.test('environments compare case-insensitively', async (t) => {
  const f = flag({ environments: ['Production'] });
  t.equal(evalOne(f, [config({ stage: 'Production' })], { stage: 'production' }).reason.code, 'default');
  t.equal(evalOne(flag({ environments: ['staging'] }), [config()]).reason.code, 'project_or_env_mismatch');
});

t.test('clientId namespaced to another application is project_or_env_mismatch', async (t) => {
  const f = flag(); // project 'web'; org applications web, mobile
  const cfgs = [config({ defaultVariantKey: 'on' })];
  const mis = evalOne(f, cfgs, { clientId: 'mobile:ios' });
  t.same([mis.reason.code, mis.key], ['project_or_env_mismatch', 'on'], 'terminal with the config default');
  t.match(mis.reason.message, /application 'mobile'/);
  t.equal(evalOne(f, cfgs, { clientId: 'MOBILE:ios' }).reason.code, 'project_or_env_mismatch', 'application case-insensitive');
  t.equal(evalOne(f, cfgs, { clientId: 'web:ios' }).reason.code, 'default', 'own application');
  t.equal(evalOne(f, cfgs, { clientId: 'WEB:ios' }).reason.code, 'default', 'own application, other case');
  t.equal(evalOne(f, cfgs, { clientId: 'tv:box' }).reason.code, 'default', 'prefix that is no application');
  t.equal(evalOne(f, cfgs, { clientId: 'mobile' }).reason.code, 'default', 'not namespaced');
  t.equal(evalOne(f, cfgs, { clientId: ':mobile' }).reason.code, 'default', 'empty namespace');
  t.equal(evalOne(f, cfgs, { clientId: 'mobile-app:x' }).reason.code, 'default', 'namespace must equal the application');
});

t.test('configuration selection by clientId', async (t) => {
  const f = flag();
  const cfgs = [
    config({ defaultVariantKey: 'off' }),
    config({ clientId: 'web:ios', defaultVariantKey: 'on' }),
    config({ stage: 'staging', clientId: 'web:android', defaultVariantKey: 'on' }),
  ];
  t.equal(evalOne(f, cfgs, { clientId: 'web:ios' }).key, 'on', 'client configuration wins');
  t.equal(evalOne(f, cfgs, { clientId: 'web:android' }).key, 'off', "no client config in this stage: the stage's");
  t.equal(evalOne(f, cfgs, { clientId: null }).key, 'off', 'no clientId');
  t.equal(evalOne(f, cfgs, { clientId: 'WEB:IOS' }).key, 'off', 'clientIds are exact');
  t.equal(evalOne(f, cfgs, { stage: 'Production' }).key, 'off', 'stage lookup is case-insensitive');
  // A disabled client configuration is config_disabled even though the stage's one is enabled.
  const dis = [config(), config({ clientId: 'web:ios', enabled: false, defaultVariantKey: 'on' })];
  const e = evalOne(f, dis, { clientId: 'web:ios' });
  t.same([e.reason.code, e.key], ['config_disabled', 'on']);
  t.match(e.reason.message, /client 'web:ios' is disabled/);
  // Only a client configuration: a request without that clientId has none.
  const only = [config({ clientId: 'web:ios' })];
  t.equal(evalOne(f, only).reason.code, 'config_missing');
  t.match(evalOne(f, only, { clientId: 'web:tv' }).reason.message, /client 'web:tv'/);
  t.equal(evalOne(f, only, { clientId: 'web:ios' }).reason.code, 'default');
  // Client configuration rules are the ones evaluated.
  const rules = [
    config({ rules: [rule('base', 1, { allocations: [{ variantKey: 'off', percentage: 100 }] })] }),
    config({ clientId: 'web:ios', rules: [rule('ios', 1)] }),
  ];
  t.equal(evalOne(f, rules, { clientId: 'web:ios' }).reason.ruleId, 'ios');
  t.equal(evalOne(f, rules).reason.ruleId, 'base');
});

// ---------------------------------------------------------------------------------------------
// Time window
// ---------------------------------------------------------------------------------------------

t.test('time window boundaries', async (t) => {
  const f = flag();
  const c = [config({ activeFrom: iso(NOW), activeUntil: iso(NOW + HOUR) })];
  t.equal(evalOne(f, c, {}, org(), NOW - 1).reason.code, 'not_yet_active', '1 ms before activeFrom');
  t.equal(evalOne(f, c, {}, org(), NOW).reason.code, 'default', 'exactly activeFrom is active');
  t.equal(evalOne(f, c, {}, org(), NOW + HOUR - 1).reason.code, 'default', '1 ms before activeUntil');
  t.equal(evalOne(f, c, {}, org(), NOW + HOUR).reason.code, 'expired', 'exactly activeUntil is expired');
  t.equal(evalOne(f, [config({ activeFrom: iso(NOW) })], {}, org(), NOW + 1000 * HOUR).reason.code, 'default', 'open end');
  t.equal(evalOne(f, [config({ activeUntil: iso(NOW) })], {}, org(), 0).reason.code, 'default', 'open start');
  const e = evalOne(f, c, {}, org(), NOW + HOUR);
  t.same([e.key, e.variant], ['off', 'OFF'], 'expired answers the default variant');
  // Offsets are honoured: 14:00+02:00 is 12:00Z.
  const tz = [config({ activeUntil: '2025-06-01T14:00:00+02:00' })];
  t.equal(evalOne(f, tz, {}, org(), NOW).reason.code, 'expired');
  t.equal(evalOne(f, tz, {}, org(), NOW - 1).reason.code, 'default');
});

// ---------------------------------------------------------------------------------------------
// Rollout and enrollment cut-off
// ---------------------------------------------------------------------------------------------

/** The first `user-${i}` whose rollout bucket is in [min, max). */
function userInRange(flagName: string, min: number, max = 10000): string {
  for (let i = 0; ; i++) {
    const b = rolloutBucket(flagName, `user-${i}`);
    if (b >= min && b < max) return `user-${i}`;
  }
}
const excludedUser = (flagName: string, minBucket: number) => userInRange(flagName, minBucket);

t.test('rollout: buckets below rolloutPercentage*100 are in', async (t) => {
  const f = flag();
  let checked = 0;
  for (let i = 0; i < 2000; i++) {
    const userId = `user-${i}`;
    const b = rolloutBucket('checkout', userId);
    const code = evalOne(f, [config({ rolloutPercentage: 12.5 })], { userId }).reason.code;
    if (code !== (b < 1250 ? 'default' : 'rollout_excluded')) {
      t.fail(`${userId} bucket ${b}: ${code}`);
      return;
    }
    checked++;
  }
  t.equal(checked, 2000);
  t.equal(evalOne(f, [config({ rolloutPercentage: 0 })]).reason.code, 'rollout_excluded', '0% excludes everyone');
  t.equal(evalOne(f, [config({ rolloutPercentage: 100 })], { userId: excludedUser('checkout', 9990) }).reason.code, 'default', '100% includes bucket 999x');
});

t.test('rollout and cut-off boundaries are exact to the bucket', async (t) => {
  const f = flag();
  const userId = userInRange('checkout', 1000, 9000);
  const b = rolloutBucket('checkout', userId);
  const code = (c: Partial<FlagConfig>) => evalOne(f, [config(c)], { userId }).reason.code;
  t.equal(code({ rolloutPercentage: b / 100 }), 'rollout_excluded', `bucket ${b} with rolloutUpTo ${b}`);
  t.equal(code({ rolloutPercentage: (b + 1) / 100 }), 'default', `bucket ${b} with rolloutUpTo ${b + 1}`);
  t.equal(code({ enrollmentCutoff: b / 100 }), 'enrollment_closed', `bucket ${b} with cutoffUpTo ${b}`);
  t.equal(code({ enrollmentCutoff: (b + 1) / 100 }), 'default', `bucket ${b} with cutoffUpTo ${b + 1}`);
});

t.test('enrollment cut-off keeps enrolled buckets and refuses new ones', async (t) => {
  const f = flag();
  const c = [config({ rolloutPercentage: 50, enrollmentCutoff: 20 })];
  const counts: Record<string, number> = {};
  for (let i = 0; i < 3000; i++) {
    const userId = `user-${i}`;
    const b = rolloutBucket('checkout', userId);
    const e = evalOne(f, c, { userId });
    const want = b >= 5000 ? 'rollout_excluded' : b >= 2000 ? 'enrollment_closed' : 'default';
    if (e.reason.code !== want) {
      t.fail(`${userId} bucket ${b}: ${e.reason.code}, want ${want}`);
      return;
    }
    counts[want] = (counts[want] ?? 0) + 1;
  }
  t.ok(counts.default > 0 && counts.enrollment_closed > 0 && counts.rollout_excluded > 0, JSON.stringify(counts));
  const closed = evalOne(f, c, { userId: userInRange('checkout', 2000, 5000) });
  t.match(closed.reason.message, /closed at 20%/);
  t.same([closed.key, closed.variant], ['off', 'OFF'], 'terminal: default variant');
  // A cut-off at or above the rollout changes nothing; null means open.
  const u = userInRange('checkout', 4000, 5000);
  t.equal(evalOne(f, [config({ rolloutPercentage: 50, enrollmentCutoff: 50 })], { userId: u }).reason.code, 'default', 'cut-off = rollout');
  t.equal(evalOne(f, [config({ rolloutPercentage: 50, enrollmentCutoff: 80 })], { userId: u }).reason.code, 'default', 'cut-off above rollout');
  t.equal(evalOne(f, [config({ rolloutPercentage: 50, enrollmentCutoff: 40 })], { userId: u }).reason.code, 'enrollment_closed', 'cut-off just below the bucket');
  t.equal(evalOne(f, [config({ rolloutPercentage: 100, enrollmentCutoff: null })], { userId: u }).reason.code, 'default');
  t.equal(evalOne(f, [config({ rolloutPercentage: 100, enrollmentCutoff: 0 })], { userId: u }).reason.code, 'enrollment_closed', 'cut-off 0 closes enrollment entirely');
});

// ---------------------------------------------------------------------------------------------
// Rules and allocations
// ---------------------------------------------------------------------------------------------

t.test('rules: lowest priority number first, stable, all conditions must match', async (t) => {
  const f = flag();
  const pro = { field: 'plan', operator: '==', value: 'pro' };
  const de = { field: 'geo.country', operator: 'in', value: ['DE', 'AT'] };
  const c = [
    config({
      rules: [
        rule('late', 10),
        rule('pro-de', 2, { conditions: [pro, de], allocations: [{ variantKey: 'off', percentage: 100 }] }),
        rule('pro', 5, { conditions: [pro] }),
        rule('pro-twin', 5, { conditions: [pro], allocations: [{ variantKey: 'off', percentage: 100 }] }),
      ],
    }),
  ];
  const e1 = evalOne(f, c, { context: { plan: 'pro', geo: { country: 'DE' } } });
  t.same([e1.reason.code, e1.reason.ruleId, e1.key, e1.reason.message], ['rule_matched', 'pro-de', 'off', 'Matched rule pro-de at priority 2']);
  const e2 = evalOne(f, c, { context: { plan: 'pro', geo: { country: 'US' } } });
  t.same([e2.reason.ruleId, e2.key], ['pro', 'on'], 'AND: one failing condition skips the rule; equal priority keeps stored order');
  t.match(e2.reason.message, /at priority 5/);
  const e3 = evalOne(f, c, { context: { plan: 'free' } });
  t.same([e3.reason.ruleId, e3.key], ['late', 'on'], 'a rule without conditions matches every user');
  const e4 = evalOne(f, c, { context: null });
  t.equal(e4.reason.ruleId, 'late');
  const none = [config({ rules: [rule('pro', 1, { conditions: [pro] })] })];
  t.equal(evalOne(f, none, { context: { plan: 'free' } }).reason.code, 'default');
  t.equal(evalOne(f, none, { context: { plan: 'pro' } }).reason.code, 'rule_matched');
  // Conditions see userId at the top level; the request's userId wins over context.userId.
  const byUser = [config({ rules: [rule('u', 1, { conditions: [{ field: 'userId', operator: '==', value: 'alice' }] })] })];
  t.equal(evalOne(f, byUser, { userId: 'alice', context: { userId: 'bob' } }).reason.code, 'rule_matched');
  t.equal(evalOne(f, byUser, { userId: 'bob', context: { userId: 'alice' } }).reason.code, 'default');
  // A matched rule without allocations serves the default variant.
  const noAlloc = [config({ defaultVariantKey: 'on', rules: [rule('bare', 1, { allocations: [] })] })];
  const e5 = evalOne(f, noAlloc);
  t.same([e5.reason.code, e5.key, e5.variant], ['rule_matched', 'on', 'ON']);
});

t.test('allocations: cumulative thresholds on the allocation bucket', async (t) => {
  const f = flag({
    variants: [
      { key: 'a', value: 1, valueType: 'number' },
      { key: 'b', value: 2, valueType: 'number' },
      { key: 'c', value: 3, valueType: 'number' },
    ],
  });
  const c = [
    config({
      defaultVariantKey: 'a',
      rules: [rule('split', 1, { allocations: [{ variantKey: 'a', percentage: 33.33 }, { variantKey: 'b', percentage: 33.33 }, { variantKey: 'c', percentage: 33.34 }] })],
    }),
  ];
  const s = snap(org(), [f], { checkout: c });
  for (let i = 0; i < 3000; i++) {
    const userId = `user-${i}`;
    const ab = allocationBucket('checkout', userId);
    const want = ab < 3333 ? 'a' : ab < 6666 ? 'b' : 'c';
    const e = evalIn(s, 'checkout', { userId });
    if (e.key !== want || e.variant !== { a: 1, b: 2, c: 3 }[want]) {
      t.fail(`${userId} allocation bucket ${ab}: ${e.key}, want ${want}`);
      return;
    }
  }
  t.pass('3000 users follow the thresholds 3333/6666/10000');
  // Boundary: a user whose allocation bucket equals a threshold falls into the next range.
  let userId = '';
  for (let i = 0; ; i++) {
    const ab = allocationBucket('checkout', `user-${i}`);
    if (ab > 1000 && ab < 9000) {
      userId = `user-${i}`;
      break;
    }
  }
  const ab = allocationBucket('checkout', userId);
  const at = (pctA: number) =>
    evalIn(
      snap(org(), [f], { checkout: [config({ defaultVariantKey: 'a', rules: [rule('s', 1, { allocations: [{ variantKey: 'a', percentage: pctA }, { variantKey: 'b', percentage: 100 - pctA }] })] })] }),
      'checkout',
      { userId },
    ).key;
  t.equal(at(ab / 100), 'b', `allocation bucket ${ab} with threshold ${ab}`);
  t.equal(at((ab + 1) / 100), 'a', `allocation bucket ${ab} with threshold ${ab + 1}`);
  // Deterministic: the same user gets the same variant every time.
  const first = evalIn(s, 'checkout', { userId: 'sticky' }).key;
  for (let i = 0; i < 20; i++) t.equal(evalIn(s, 'checkout', { userId: 'sticky' }).key, first);
  // A 0% allocation is never served.
  const zero = snap(org(), [f], {
    checkout: [config({ defaultVariantKey: 'a', rules: [rule('z', 1, { allocations: [{ variantKey: 'a', percentage: 0 }, { variantKey: 'b', percentage: 100 }] })] })],
  });
  let servedA = 0;
  for (let i = 0; i < 1000; i++) if (evalIn(zero, 'checkout', { userId: `user-${i}` }).key === 'a') servedA++;
  t.equal(servedA, 0);
});

// ---------------------------------------------------------------------------------------------
// Dependencies
// ---------------------------------------------------------------------------------------------

function depFlag(name: string, deps: Flag['dependencies'], over: Partial<Flag> = {}): Flag {
  return flag({ name, dependencies: deps, ...over });
}

t.test('dependencies: parent must end in rule_matched or default', async (t) => {
  const child = depFlag('child', [{ flag: 'parent', variants: null }]);
  const childCfg = config({ defaultVariantKey: 'off', rules: [rule('c1', 1)] });
  const build = (parent: Flag | null, parentCfgs: FlagConfig[]) =>
    snap(org(), parent ? [child, parent] : [child], { child: [childCfg], parent: parentCfgs });
  t.equal(evalIn(build(depFlag('parent', []), [config({ rules: [rule('p', 1)] })]), 'child').reason.code, 'rule_matched', 'parent rule_matched');
  t.equal(evalIn(build(depFlag('parent', []), [config()]), 'child').reason.code, 'rule_matched', 'parent default');
  const missing = evalIn(build(null, []), 'child');
  t.same([missing.reason.code, missing.key, missing.variant], ['disabled_dependency', 'off', 'OFF'], 'missing parent; terminal default variant');
  t.match(missing.reason.message, /'parent' does not exist/);
  const archived = evalIn(build(depFlag('parent', [], { isArchived: true }), [config()]), 'child');
  t.equal(archived.reason.code, 'disabled_dependency');
  t.match(archived.reason.message, /Parent flag 'parent' ended in 'archived'/);
  t.equal(evalIn(build(depFlag('parent', []), [config({ enabled: false })]), 'child').reason.code, 'disabled_dependency', 'parent config_disabled');
  t.equal(evalIn(build(depFlag('parent', []), [config({ stage: 'staging' })]), 'child').reason.code, 'disabled_dependency', 'parent config_missing in this stage');
  t.equal(evalIn(build(depFlag('parent', []), [config({ rolloutPercentage: 0 })]), 'child').reason.code, 'disabled_dependency', 'parent rollout_excluded');
});

t.test('dependencies: variant filter', async (t) => {
  const child = depFlag('child', [{ flag: 'parent', variants: ['on'] }]);
  const parent = depFlag('parent', []);
  const pro = { field: 'plan', operator: '==', value: 'pro' };
  const s = snap(org(), [child, parent], {
    child: [config({ rules: [rule('c1', 1)] })],
    parent: [config({ defaultVariantKey: 'off', rules: [rule('p-pro', 1, { conditions: [pro] })] })],
  });
  // The parent is evaluated with the same context: 'on' only for pro users.
  t.equal(evalIn(s, 'child', { context: { plan: 'pro' } }).reason.code, 'rule_matched', 'parent served on');
  const e = evalIn(s, 'child', { context: { plan: 'free' } });
  t.equal(e.reason.code, 'disabled_dependency', 'parent served off (default), not in [on]');
  t.match(e.reason.message, /served variant 'off', not one of \[on\]/);
  // Every dependency must hold.
  const two = depFlag('two', [{ flag: 'parent', variants: null }, { flag: 'ghost', variants: null }]);
  const s2 = snap(org(), [two, parent], { two: [config()], parent: [config()] });
  t.equal(evalIn(s2, 'two').reason.code, 'disabled_dependency');
});

t.test('dependencies: same stage and clientId for the parent', async (t) => {
  const child = depFlag('child', [{ flag: 'parent', variants: ['on'] }]);
  const s = snap(org(), [child, depFlag('parent', [])], {
    child: [config(), config({ stage: 'staging' })],
    parent: [config({ defaultVariantKey: 'off' }), config({ clientId: 'web:ios', defaultVariantKey: 'on' }), config({ stage: 'staging', defaultVariantKey: 'on' })],
  });
  t.equal(evalIn(s, 'child').reason.code, 'disabled_dependency');
  t.equal(evalIn(s, 'child', { clientId: 'web:ios' }).reason.code, 'default', "parent's client configuration");
  t.equal(evalIn(s, 'child', { stage: 'staging' }).reason.code, 'default', "parent's staging configuration");
});

t.test('dependencies: cycles and depth are guarded', async (t) => {
  const a = depFlag('a', [{ flag: 'b', variants: null }]);
  const b = depFlag('b', [{ flag: 'a', variants: null }]);
  const self = depFlag('self', [{ flag: 'self', variants: null }]);
  const s = snap(org(), [a, b, self], { a: [config()], b: [config()], self: [config()] });
  const ea = evalIn(s, 'a');
  t.equal(ea.reason.code, 'disabled_dependency', 'a <-> b');
  t.equal(evalIn(s, 'b').reason.code, 'disabled_dependency');
  const es = evalIn(s, 'self');
  t.equal(es.reason.code, 'disabled_dependency', 'self-dependency');
  t.match(es.reason.message, /'self' is part of a dependency cycle/);
  t.match(ea.reason.message, /Parent flag 'b' ended in 'disabled_dependency'/);

  const chain = (n: number) => {
    const flags: Flag[] = [];
    const cfgs: Record<string, FlagConfig[]> = {};
    for (let i = 0; i < n; i++) {
      flags.push(depFlag(`f${i}`, i + 1 < n ? [{ flag: `f${i + 1}`, variants: null }] : []));
      cfgs[`f${i}`] = [config()];
    }
    return snap(org(), flags, cfgs);
  };
  t.equal(evalIn(chain(MAX_DEPENDENCY_DEPTH + 1), 'f0').reason.code, 'default', `chain of ${MAX_DEPENDENCY_DEPTH} parents is allowed`);
  const deep = evalIn(chain(MAX_DEPENDENCY_DEPTH + 2), 'f0');
  t.equal(deep.reason.code, 'disabled_dependency', 'deeper chain is cut');
  t.match(deep.reason.message, /Parent flag 'f1' ended in 'disabled_dependency'/);

  // Diamonds: every level depends on both flags of the next level. Without memoization this is
  // 2^30 evaluations; with it, linear.
  const flags: Flag[] = [];
  const cfgs: Record<string, FlagConfig[]> = {};
  const levels = 30;
  for (let l = 0; l < levels; l++) {
    for (const side of ['x', 'y']) {
      const deps = l + 1 < levels ? [{ flag: `x${l + 1}`, variants: null }, { flag: `y${l + 1}`, variants: null }] : [];
      flags.push(depFlag(`${side}${l}`, deps));
      cfgs[`${side}${l}`] = [config()];
    }
  }
  const diamond = snap(org(), flags, cfgs);
  const start = process.hrtime.bigint();
  t.equal(evalIn(diamond, 'x0').reason.code, 'default');
  t.ok(Number(process.hrtime.bigint() - start) < 1e9, 'diamond DAG evaluates quickly');
  // A disabled leaf propagates up through every level.
  cfgs['y29'] = [config({ enabled: false })];
  t.equal(evalIn(snap(org(), flags, cfgs), 'x0').reason.code, 'disabled_dependency');
});

t.test('evaluateFlag takes now from the caller', async (t) => {
  const f = flag();
  const s = snap(org(), [f], { checkout: [config({ activeUntil: iso(NOW) })] });
  const cf = s.flags.get('checkout')!;
  t.equal(evaluateFlag(s, cf, req(), NOW - 1).reason.code, 'default');
  t.equal(evaluateFlag(s, cf, req(), NOW).reason.code, 'expired');
  t.equal(evaluateFlag(s, cf, req(), Number.MAX_SAFE_INTEGER).reason.code, 'expired');
});
