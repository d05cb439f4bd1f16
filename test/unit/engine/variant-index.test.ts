/**
 * `Evaluation.index` (src/domain/types.ts): the served variant's position in the compiled flag's
 * variants (`CompiledFlag.variants`, the first of each key in `flag.variants` order), -1 when no
 * variant is served. The counters (src/insights/counter.ts, the OpenFeature provider) count by it
 * instead of comparing keys, so it must name the served key for every outcome kind: allocation
 * splits, a single allocation, a rule without allocations, the default, every terminal reason,
 * no variants, keys naming no variant, duplicate keys, prerequisites.
 */
import t, { type Test } from 'tap';
import fc from 'fast-check';
import type { Evaluation, Flag, FlagConfig, Organization, Rule } from '../../../src/domain/types.js';
import { NO_VARIANT_INDEX, REASON_CODES } from '../../../src/domain/types.js';
import { evaluateFlag, type CompiledFlag, type OrgSnapshot } from '../../../src/engine/index.js';
import { decodeOutcome, encodeOutcome } from '../../../src/evaluation/pool/protocol.js';
import { NOW, org, flag, config, rule, req, snap } from '../../helpers/engine-fixtures.js';

/** Why `ev` (an evaluation of `cf`) breaks the index's rule, or null. */
function indexProblem(cf: CompiledFlag, ev: Evaluation): string | null {
  const shape = Object.keys(ev).join(',');
  if (shape !== 'key,variant,reason,index') return `shape ${shape}`;
  if (!Number.isInteger(ev.index)) return `index ${ev.index} is not an integer`;
  if (ev.key === null) return ev.index === NO_VARIANT_INDEX ? null : `key null but index ${ev.index}`;
  const keys = [...cf.variants.keys()];
  if (keys[ev.index] !== ev.key) return `index ${ev.index} names '${keys[ev.index]}', served '${ev.key}'`;
  if (cf.variants.get(ev.key)!.value !== ev.variant) return `value of '${ev.key}' is not the one served`;
  return null;
}

function evalChecked(t: Test, s: OrgSnapshot, name: string, userId = 'user-1', context: Record<string, unknown> | null = null): Evaluation {
  const cf = s.flags.get(name)!;
  const ev = evaluateFlag(s, cf, req({ userId, context }), NOW);
  const problem = indexProblem(cf, ev);
  if (problem !== null) t.fail(`${name} for ${userId} (${ev.reason.code}): ${problem}`);
  return ev;
}

/** A string variant whose value is `value` (the key's first letter, upper case, by default). */
const sv = (key: string, value = key[0].toUpperCase()) => ({ key, value, valueType: 'string' as const });
const three = [sv('red'), sv('green'), sv('blue')];

t.test('a split serves each variant with its own index; a single allocation, a rule without allocations and the default theirs', async (t) => {
  const f = flag({ name: 'f', variants: three });
  const split = rule('split', 1, {
    conditions: [{ field: 'plan', operator: '==', value: 'pro' }],
    allocations: [
      { variantKey: 'blue', percentage: 34 },
      { variantKey: 'red', percentage: 33 },
      { variantKey: 'green', percentage: 33 },
    ],
  });
  const single = rule('single', 2, { conditions: [{ field: 'plan', operator: '==', value: 'team' }], allocations: [{ variantKey: 'green', percentage: 100 }] });
  const bare = rule('bare', 3, { conditions: [{ field: 'plan', operator: '==', value: 'free' }], allocations: [] });
  const s = snap(org(), [f], { f: [config({ defaultVariantKey: 'blue', rules: [split, single, bare] })] });
  const served = new Map<string, number>();
  for (let i = 0; i < 300; i++) {
    const ev = evalChecked(t, s, 'f', `u${i}`, { plan: 'pro' });
    served.set(`${ev.key}:${ev.index}`, (served.get(`${ev.key}:${ev.index}`) ?? 0) + 1);
  }
  t.same([...served.keys()].sort(), ['blue:2', 'green:1', 'red:0'], 'the split served all three, each with its position');
  t.match(evalChecked(t, s, 'f', 'u1', { plan: 'team' }), { key: 'green', index: 1, reason: { code: 'rule_matched', ruleId: 'single' } });
  t.match(evalChecked(t, s, 'f', 'u1', { plan: 'free' }), { key: 'blue', index: 2, reason: { code: 'rule_matched', ruleId: 'bare' } });
  t.match(evalChecked(t, s, 'f', 'u1', { plan: 'none' }), { key: 'blue', index: 2, reason: { code: 'default' } });
});

t.test('no variant served: -1 (no variants, keys naming no variant, no configuration)', async (t) => {
  const none = flag({ name: 'none', variants: [] });
  const gone = flag({ name: 'gone', variants: three });
  const s = snap(org(), [none, gone], {
    none: [config({ defaultVariantKey: 'on' })],
    gone: [
      config({ defaultVariantKey: 'ghost', rules: [rule('r', 1, { conditions: [{ field: 'plan', operator: '==', value: 'pro' }], allocations: [{ variantKey: 'ghost', percentage: 50 }, { variantKey: 'red', percentage: 50 }] })] }),
    ],
  });
  t.match(evalChecked(t, s, 'none'), { key: null, index: -1, reason: { code: 'no_variants' } });
  t.match(evalChecked(t, s, 'gone'), { key: null, index: -1, reason: { code: 'default' } });
  const split = new Set<string>();
  for (let i = 0; i < 100; i++) {
    const ev = evalChecked(t, s, 'gone', `u${i}`, { plan: 'pro' });
    split.add(`${ev.key}:${ev.index}`);
  }
  t.same([...split].sort(), ['null:-1', 'red:0'], 'an allocation naming no variant answers -1, its neighbour its own index');
  const s2 = snap(org(), [gone], { gone: [config({ stage: 'staging' })] });
  t.match(evalChecked(t, s2, 'gone'), { key: null, index: -1, reason: { code: 'config_missing' } });
});

t.test('duplicate keys: the first of each key numbers it, as CompiledFlag.variants keeps it', async (t) => {
  const f = flag({
    name: 'dup',
    variants: [sv('a', 'A1'), sv('b'), sv('a', 'A2'), sv('c')],
  });
  const s = snap(org(), [f], { dup: [config({ defaultVariantKey: 'c' })] });
  t.same([...s.flags.get('dup')!.variants.keys()], ['a', 'b', 'c']);
  t.match(evalChecked(t, s, 'dup'), { key: 'c', variant: 'C', index: 2 });
  const s2 = snap(org(), [f], { dup: [config({ defaultVariantKey: 'a' })] });
  t.match(evalChecked(t, s2, 'dup'), { key: 'a', variant: 'A1', index: 0 });
});

t.test('terminal reasons answer the configuration default with its index; a prerequisite\'s outcome does not leak into the child', async (t) => {
  const child = flag({ name: 'child', variants: three, dependencies: [{ flag: 'parent', variants: ['on'] }] });
  const parent = flag({ name: 'parent' }); // on, off
  const cases: [string, Partial<Organization>, Partial<Flag>, Partial<FlagConfig>][] = [
    ['killswitch', { killSwitch: [{ flag: 'child', application: null, environment: null }] }, {}, {}],
    ['archived', {}, { isArchived: true }, {}],
    ['project_or_env_mismatch', {}, { environments: ['staging'] }, {}],
    ['config_disabled', {}, {}, { enabled: false }],
    ['not_yet_active', {}, {}, { activeFrom: new Date(NOW + 1000).toISOString() }],
    ['expired', {}, {}, { activeUntil: new Date(NOW - 1000).toISOString() }],
    ['rollout_excluded', {}, {}, { rolloutPercentage: 0 }],
    ['enrollment_closed', {}, {}, { enrollmentCutoff: 0 }],
  ];
  for (const [code, o, fo, co] of cases) {
    const s = snap(org(o), [{ ...child, ...fo }, parent], { child: [config({ defaultVariantKey: 'green', ...co })], parent: [config({ defaultVariantKey: 'on' })] });
    t.match(evalChecked(t, s, 'child'), { key: 'green', index: 1, reason: { code } }, code);
  }
  // The parent serves 'off' (its index 1): the dependency fails and the child answers its default.
  const failing = snap(org(), [child, parent], { child: [config({ defaultVariantKey: 'blue' })], parent: [config({ defaultVariantKey: 'off' })] });
  t.match(evalChecked(t, failing, 'parent'), { key: 'off', index: 1 });
  t.match(evalChecked(t, failing, 'child'), { key: 'blue', index: 2, reason: { code: 'disabled_dependency' } });
  // The parent serves 'on' (its index 0): the child goes on to its own default.
  const holding = snap(org(), [child, parent], { child: [config({ defaultVariantKey: 'blue' })], parent: [config({ defaultVariantKey: 'on' })] });
  t.match(evalChecked(t, holding, 'child'), { key: 'blue', index: 2, reason: { code: 'default' } });
});

// ---- the property: random flags, every outcome kind ------------------------------------------

const KEYS = ['a', 'b', 'c', 'd'];
const keyOrGone = fc.constantFrom(...KEYS, 'gone');
const pct = fc.integer({ min: 0, max: 100 });

const ruleArb = fc.record({
  plan: fc.constantFrom('pro', 'team', null),
  allocations: fc.array(fc.record({ variantKey: keyOrGone, percentage: pct }), { maxLength: 4 }),
});

const caseArb = fc.record({
  variants: fc.array(fc.constantFrom(...KEYS), { maxLength: 5 }),
  defaultVariantKey: keyOrGone,
  rules: fc.array(ruleArb, { maxLength: 3 }),
  rolloutPercentage: fc.oneof(fc.constant(100), pct),
  enrollmentCutoff: fc.oneof(fc.constant(null), fc.constant(null), pct),
  enabled: fc.oneof(fc.constant(true), fc.constant(true), fc.constant(false)),
  window: fc.constantFrom('open', 'open', 'open', 'future', 'past'),
  archived: fc.oneof(fc.constant(false), fc.constant(false), fc.constant(false), fc.constant(true)),
  envMismatch: fc.oneof(fc.constant(false), fc.constant(false), fc.constant(false), fc.constant(true)),
  configMissing: fc.oneof(fc.constant(false), fc.constant(false), fc.constant(false), fc.constant(true)),
  killSwitch: fc.oneof(fc.constant(false), fc.constant(false), fc.constant(false), fc.constant(true)),
  dependency: fc.constantFrom('none', 'none', 'parent-any', 'parent-on', 'parent-chain', 'ghost'),
  parentDefault: fc.constantFrom('on', 'off', 'gone'),
});

t.test('property: for random flags, every evaluation\'s index names the served key (or is -1 with no key)', async (t) => {
  const seen = new Set<string>();
  fc.assert(
    fc.property(caseArb, (c) => {
      const variants = c.variants.map((key, i) => ({ key, value: `${key}${i}`, valueType: 'string' as const }));
      const dependencies =
        c.dependency === 'none' ? [] : c.dependency === 'ghost' ? [{ flag: 'ghost', variants: null }] : c.dependency === 'parent-chain' ? [{ flag: 'mid', variants: null }] : [{ flag: 'parent', variants: c.dependency === 'parent-on' ? ['on'] : null }];
      const f = flag({
        name: 'f',
        variants,
        isArchived: c.archived,
        environments: c.envMismatch ? ['staging'] : ['staging', 'production'],
        dependencies,
      });
      const rules: Rule[] = c.rules.map((r, i) =>
        rule(`r${i}`, i, { conditions: r.plan === null ? [] : [{ field: 'plan', operator: '==', value: r.plan }], allocations: r.allocations }),
      );
      const cfg = config({
        stage: c.configMissing ? 'staging' : 'production',
        defaultVariantKey: c.defaultVariantKey,
        rules,
        rolloutPercentage: c.rolloutPercentage,
        enrollmentCutoff: c.enrollmentCutoff,
        enabled: c.enabled,
        activeFrom: c.window === 'future' ? new Date(NOW + 1000).toISOString() : null,
        activeUntil: c.window === 'past' ? new Date(NOW - 1000).toISOString() : null,
      });
      const parent = flag({ name: 'parent' });
      const mid = flag({ name: 'mid', dependencies: [{ flag: 'parent', variants: ['on'] }] });
      const o = org({ killSwitch: c.killSwitch ? [{ flag: 'f', application: null, environment: null }] : [] });
      const s = snap(o, [f, parent, mid], {
        f: [cfg],
        parent: [config({ defaultVariantKey: c.parentDefault, rules: [rule('p', 1, { conditions: [{ field: 'plan', operator: '==', value: 'team' }], allocations: [{ variantKey: 'on', percentage: 50 }, { variantKey: 'off', percentage: 50 }] })] })],
        mid: [config({ defaultVariantKey: 'off' })],
      });
      for (let u = 0; u < 12; u++) {
        for (const name of ['f', 'parent', 'mid']) {
          const cf = s.flags.get(name)!;
          const ev = evaluateFlag(s, cf, req({ userId: `u${u}`, context: { plan: u % 3 === 0 ? 'pro' : u % 3 === 1 ? 'team' : 'free' } }), NOW);
          const problem = indexProblem(cf, ev);
          if (problem !== null) throw new Error(`${name} u${u} (${ev.reason.code}): ${problem}`);
          if (name === 'f') seen.add(ev.reason.code);
        }
      }
    }),
    { numRuns: 600, seed: 31 },
  );
  t.same([...seen].sort(), [...REASON_CODES].sort(), 'the random flags reached every reason code');
});

t.test('never serialised: the pool\'s wire carries an evaluation\'s answer only, as before the index', async (t) => {
  const s = snap(org(), [flag({ name: 'f', variants: three })], { f: [config({ defaultVariantKey: 'green' })] });
  const ev = evalChecked(t, s, 'f');
  t.equal(ev.index, 1);
  const line = encodeOutcome(ev);
  t.equal(line, `V${JSON.stringify({ key: 'green', variant: 'G', reason: ev.reason })}`, 'key, variant, reason, in that order, and nothing else');
  t.same(decodeOutcome(line), { key: 'green', variant: 'G', reason: ev.reason });
  t.notMatch(line, /index/);
});
