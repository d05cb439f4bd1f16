/** Segment bodies and a rule's segments (docs/api.md#segments, docs/limits.md): pure validation. */
import t from 'tap';
import { DEFAULT_TENANCY_LIMITS, parseCreateSegment, parseUpdateSegment, parseUpsertFlagConfig, type TenancyLimits } from '../../../src/domain/validation.js';
import { isVexilError } from '../../../src/domain/errors.js';

const bad = (t: Tap.Test, fn: () => unknown, message: RegExp, what: string) => {
  try {
    fn();
    t.fail(`${what}: accepted`);
  } catch (e) {
    t.ok(isVexilError(e) && e.code === 'BAD_REQUEST', `${what}: BAD_REQUEST`);
    t.match((e as Error).message, message, what);
  }
};

t.test('create: defaults and normalisation', async (t) => {
  t.same(parseCreateSegment({ name: 'beta.users_1' }), { name: 'beta.users_1', description: null, conditions: [] }, 'application stays absent');
  t.same(parseCreateSegment({ name: 's', application: null, conditions: null }), { name: 's', description: null, application: null, conditions: [] });
  t.same(parseCreateSegment({ name: 's', application: 'web', conditions: [{ field: 'a.b', operator: '!=' }] }).conditions, [{ field: 'a.b', operator: '!=', value: null }]);
});

t.test('create and update: bad input names the path', async (t) => {
  bad(t, () => parseCreateSegment({ name: '-x' }), /name/, 'name pattern');
  bad(t, () => parseCreateSegment({ name: 'x', extra: 1 }), /unknown field 'extra'/, 'unknown field');
  bad(t, () => parseCreateSegment({ name: 'x', application: 'bad name' }), /application/, 'application name');
  bad(t, () => parseCreateSegment({ name: 'x', conditions: [{ field: 'a', operator: 'like', value: 1 }] }), /conditions\[0\]\.operator/, 'operator');
  bad(t, () => parseCreateSegment({ name: 'x', conditions: [{ field: 'a', operator: '<', value: 'x' }] }), /needs a number/, 'value type');
  bad(t, () => parseUpdateSegment({ application: 'web' }), /unknown field 'application'/, 'update cannot move a segment');
  bad(t, () => parseUpdateSegment({ conditions: [{ field: 'a..b', operator: '==' }] }), /conditions\[0\]\.field/, 'update checks conditions');
  t.same(parseUpdateSegment({}), {}, 'an empty update keeps everything');
  t.same(parseUpdateSegment({ description: null, conditions: null }), { description: null }, 'null conditions: kept');
});

t.test('limits: list items, item bytes, conditions', async (t) => {
  const limits: TenancyLimits = { ...DEFAULT_TENANCY_LIMITS, maxSegmentValues: 3, maxValueBytes: 10, maxConditionsPerRule: 2 };
  const inList = (value: unknown[]) => ({ name: 's', conditions: [{ field: 'userId', operator: 'in', value }] });
  t.ok(parseCreateSegment(inList(['a', 'b', 'c']), limits), 'at the list limit');
  bad(t, () => parseCreateSegment(inList(['a', 'b', 'c', 'd']), limits), /conditions\[0\]\.value \(4 items\).*VEXIL_MAX_SEGMENT_VALUES=3/, 'over the list limit');
  bad(t, () => parseCreateSegment(inList(['a', 'waytoolongvalue']), limits), /conditions\[0\]\.value\[1\].*VEXIL_MAX_VALUE_BYTES=10/, 'one item over the byte limit');
  t.ok(parseCreateSegment({ name: 's', conditions: [{ field: 'u', operator: 'not_in', value: ['aaaaaa', 'bbbbbb', 'cccccc'] }] }, limits), 'a list may exceed the byte limit as a whole');
  bad(t, () => parseCreateSegment({ name: 's', conditions: [{ field: 'u', operator: '==', value: 'waytoolongvalue' }] }, limits), /VEXIL_MAX_VALUE_BYTES=10/, 'other values keep the byte limit');
  const c = { field: 'u', operator: '==', value: 1 };
  bad(t, () => parseUpdateSegment({ conditions: [c, c, c] }, limits), /VEXIL_MAX_CONDITIONS_PER_RULE=2/, 'conditions per segment');
  // The default: 20,000 values.
  t.ok(parseCreateSegment(inList(Array.from({ length: 20_000 }, (_, i) => i))), '20,000 values by default');
  bad(t, () => parseCreateSegment(inList(Array.from({ length: 20_001 }, (_, i) => i))), /VEXIL_MAX_SEGMENT_VALUES=20000/, '20,001 refused');
});

t.test("a rule's segments: names, duplicates, default", async (t) => {
  const base = { stage: 'p', enabled: true, defaultVariantKey: 'a', rolloutPercentage: 100 };
  const ruleWith = (segments: unknown) => ({ ...base, rules: [{ priority: 1, conditions: [], segments, allocations: [{ variantKey: 'a', percentage: 100 }] }] });
  t.same(parseUpsertFlagConfig(ruleWith(['x', 'y', 'x'])).rules?.[0].segments, ['x', 'y'], 'duplicates dropped, order kept');
  t.same(parseUpsertFlagConfig(ruleWith(null)).rules?.[0].segments, [], 'null: none');
  t.same(parseUpsertFlagConfig({ ...base, rules: [{ priority: 1, conditions: [], allocations: [{ variantKey: 'a', percentage: 100 }] }] }).rules?.[0].segments, [], 'absent: none');
  bad(t, () => parseUpsertFlagConfig(ruleWith(['ok', 'not ok'])), /rules\[0\]\.segments\[1\]/, 'a bad name');
  bad(t, () => parseUpsertFlagConfig(ruleWith('x')), /rules\[0\]\.segments/, 'not a list');
  const limits = { ...DEFAULT_TENANCY_LIMITS, maxConditionsPerRule: 1 };
  bad(t, () => parseUpsertFlagConfig(ruleWith(['a', 'b']), limits), /rules\[0\]\.segments \(2\).*VEXIL_MAX_CONDITIONS_PER_RULE=1/, 'segments per rule');
});
