/** The pure size-limit checks (docs/limits.md, "Tenancy limits"): limits are passed in, defaults are the documented ones. */
import t from 'tap';
import {
  checkConfigLimits,
  checkVariantLimits,
  DEFAULT_TENANCY_LIMITS,
  jsonBytes,
  parseCreateFlag,
  parseUpdateFlag,
  parseUpsertFlagConfig,
  quotaError,
  type TenancyLimits,
} from '../../../src/domain/validation.js';
import { isVexilError } from '../../../src/domain/errors.js';

const small: TenancyLimits = { ...DEFAULT_TENANCY_LIMITS, maxRulesPerConfig: 1, maxConditionsPerRule: 1, maxVariantsPerFlag: 2, maxValueBytes: 10 };

function refused(t: Tap.Test, fn: () => unknown, re: RegExp, what: string): void {
  try {
    fn();
    t.fail(`${what}: not refused`);
  } catch (e) {
    t.ok(isVexilError(e) && e.code === 'BAD_REQUEST' && e.status === 400, `${what}: BAD_REQUEST 400`);
    t.match((e as Error).message, re, `${what}: names the limit`);
  }
}
declare namespace Tap { type Test = typeof t }

t.test('defaults are the documented ones', async (t) => {
  t.same(DEFAULT_TENANCY_LIMITS, {
    maxFlagsPerOrg: 200000, maxKeysPerOrg: 1000, maxConfigsPerFlag: 100, maxRulesPerConfig: 200,
    maxConditionsPerRule: 50, maxVariantsPerFlag: 100, maxValueBytes: 32768, maxSegmentsPerOrg: 1000, maxSegmentValues: 20000,
    maxPendingSchedulesPerFlag: 100, maxPendingSchedulesPerOrg: 10000,
  });
});

t.test('value bytes are the UTF-8 length of the JSON text', async (t) => {
  t.equal(jsonBytes('abc'), 5);
  t.equal(jsonBytes('é'), 4);
  t.equal(jsonBytes(null), 4);
  t.equal(jsonBytes(undefined), 4);
  t.equal(jsonBytes({ a: [1, 2] }), 11);
  t.equal(jsonBytes('"'), 4, 'escapes count');
});

t.test('variants: count and value size, at the limit allowed, one over refused', async (t) => {
  const v = (n: number, value: unknown = 'x') => Array.from({ length: n }, (_, i) => ({ key: `k${i}`, value, valueType: 'string' }));
  checkVariantLimits(v(2), small);
  refused(t, () => checkVariantLimits(v(3), small), /VEXIL_MAX_VARIANTS_PER_FLAG=2/, '3 variants');
  checkVariantLimits(v(1, '12345678'), small); // 10 bytes
  refused(t, () => checkVariantLimits(v(1, '123456789'), small), /variants\[0\]\.value.*VEXIL_MAX_VALUE_BYTES=10/, '11 bytes');
  refused(t, () => parseCreateFlag({ name: 'f', project: 'p', type: 'string', variants: v(3) }, small), /VEXIL_MAX_VARIANTS_PER_FLAG=2/, 'parseCreateFlag');
  refused(t, () => parseUpdateFlag({ variants: v(3) }, small), /VEXIL_MAX_VARIANTS_PER_FLAG=2/, 'parseUpdateFlag');
  t.ok(parseCreateFlag({ name: 'f', project: 'p', type: 'string', variants: v(3) }), 'defaults apply without limits');
  refused(t, () => parseCreateFlag({ name: 'f', project: 'p', type: 'string', variants: v(101) }), /VEXIL_MAX_VARIANTS_PER_FLAG=100/, 'default limit');
});

t.test('configurations: rules, conditions, condition value size', async (t) => {
  const cond = (value: unknown = 'a') => ({ field: 'country', operator: '==', value });
  const rule = (conditions: unknown[]) => ({ priority: 1, conditions, allocations: [{ variantKey: 'on', percentage: 100 }] });
  const cfg = (rules: unknown[]) => ({ stage: 'production', enabled: true, defaultVariantKey: 'off', rolloutPercentage: 100, rules });
  t.ok(parseUpsertFlagConfig(cfg([rule([cond('12345678')])]), small), 'at every limit');
  refused(t, () => parseUpsertFlagConfig(cfg([rule([]), rule([])]), small), /VEXIL_MAX_RULES_PER_CONFIG=1/, '2 rules');
  refused(t, () => parseUpsertFlagConfig(cfg([rule([cond(), cond()])]), small), /rules\[0\]\.conditions.*VEXIL_MAX_CONDITIONS_PER_RULE=1/, '2 conditions');
  refused(t, () => parseUpsertFlagConfig(cfg([rule([cond('123456789')])]), small), /rules\[0\]\.conditions\[0\]\.value.*VEXIL_MAX_VALUE_BYTES=10/, '11-byte value');
  refused(t, () => checkConfigLimits({ rules: [{ conditions: [{ value: ['aaaa', 'bbbb'] }] }] }, small), /VEXIL_MAX_VALUE_BYTES=10/, 'list value');
});

t.test('count limits: 409 QUOTA_EXCEEDED naming the setting and value', async (t) => {
  const e = quotaError({ ...DEFAULT_TENANCY_LIMITS, maxFlagsPerOrg: 3 }, 'maxFlagsPerOrg');
  t.equal(e.code, 'QUOTA_EXCEEDED');
  t.equal(e.status, 409);
  t.match(e.message, /VEXIL_MAX_FLAGS_PER_ORG=3/);
});
