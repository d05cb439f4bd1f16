import t from 'tap';
import { compileFlag, buildSnapshot, configKey } from '../../../src/engine/index.js';
import { flag, config, rule, org } from '../../helpers/engine-fixtures.js';

t.test('configKey: stage case-insensitive, clientId exact, null/empty clientId is the base', async (t) => {
  t.equal(configKey('Production', null), configKey('production', null));
  t.equal(configKey('production', ''), configKey('production', null));
  t.not(configKey('production', 'web:ios'), configKey('production', null));
  t.not(configKey('production', 'web:ios'), configKey('production', 'WEB:IOS'));
  t.not(configKey('production', 'x'), configKey('productionx', null));
});

t.test('compileFlag: thresholds, rollout, cut-off, times, order', async (t) => {
  const f = flag({
    variants: [
      { key: 'a', value: 'A', valueType: 'string' },
      { key: 'b', value: 'B', valueType: 'string' },
      { key: 'c', value: 'C', valueType: 'string' },
    ],
  });
  const cf = compileFlag(f, [
    config({
      defaultVariantKey: 'b',
      rolloutPercentage: 25.5,
      enrollmentCutoff: 10,
      activeFrom: '2025-01-01T00:00:00Z',
      activeUntil: null,
      rules: [
        rule('third', 9),
        rule('first', 1, {
          allocations: [
            { variantKey: 'a', percentage: 50 },
            { variantKey: 'b', percentage: 30 },
            { variantKey: 'c', percentage: 20 },
          ],
        }),
        rule('second-a', 3, {
          allocations: [
            { variantKey: 'a', percentage: 33.33 },
            { variantKey: 'b', percentage: 33.33 },
            { variantKey: 'c', percentage: 33.33 },
          ],
        }),
        rule('second-b', 3),
      ],
    }),
    config({ stage: 'staging', clientId: 'web:ios', enabled: false, rolloutPercentage: 150, enrollmentCutoff: null }),
  ]);
  t.equal(cf.variants.size, 3);
  t.equal(cf.configs.size, 2);
  const c = cf.configs.get(configKey('production', null))!;
  t.ok(c, 'base config under its key');
  t.same(c.rules.map((r) => r.id), ['first', 'second-a', 'second-b', 'third'], 'priority asc, stable');
  t.same(c.rules[0].allocations.map((a) => [a.variantKey, a.upTo]), [['a', 5000], ['b', 8000], ['c', 10000]]);
  t.same(c.rules[1].allocations.map((a) => a.upTo), [3333, 6666, 10000], 'last allocation absorbs rounding');
  t.equal(c.rules[0].reason.message, 'Matched rule first at priority 1');
  t.equal(c.rules[0].reason.ruleId, 'first');
  t.equal(c.rolloutUpTo, 2550);
  t.equal(c.cutoffUpTo, 1000);
  t.equal(c.activeFromMs, Date.parse('2025-01-01T00:00:00Z'));
  t.equal(c.activeUntilMs, null);
  t.same([c.defaultKey, c.defaultValue], ['b', 'B']);
  const ios = cf.configs.get(configKey('staging', 'web:ios'))!;
  t.ok(ios, 'client config under its key');
  t.equal(ios.rolloutUpTo, 10000, 'clamped to 10000');
  t.equal(ios.cutoffUpTo, null);
  t.ok(Object.isFrozen(c.rules[0].reason) && Object.isFrozen(c.reasons.default), 'shared reasons are frozen');
});

t.test('buildSnapshot compiles every flag, with or without configurations', async (t) => {
  const o = org();
  const s = buildSnapshot(o, [flag({ name: 'a' }), flag({ name: 'b' })], new Map([['a', [config()]]]));
  t.equal(s.org, o);
  t.same([...s.flags.keys()].sort(), ['a', 'b']);
  t.equal(s.flags.get('a')!.configs.size, 1);
  t.equal(s.flags.get('b')!.configs.size, 0);
});
