/**
 * Segments in the engine (docs/evaluation.md, "Segments"), pure: a rule's segments are checked
 * with its conditions; a segment's in / not_in lists are hash sets built once, at compile time.
 */
import t from 'tap';
import type { Segment } from '../../../src/domain/types.js';
import { buildSnapshot, compileSegment, evaluateFlag, type CompiledSegment, type OrgSnapshot } from '../../../src/engine/index.js';
import { config, flag, org, req, rule, NOW } from '../../helpers/engine-fixtures.js';

const segment = (name: string, conditions: Segment['conditions'], application: string | null = null): Segment => ({
  name,
  description: null,
  application,
  conditions,
  createdAt: '2025-01-01T00:00:00.000Z',
  updatedAt: '2025-01-01T00:00:00.000Z',
});

const IDS = Array.from({ length: 20_000 }, (_, i) => `user-${i}`);

function world(segments: Segment[]): OrgSnapshot {
  const f = flag();
  const rules = [
    rule('both', 1, { conditions: [{ field: 'device', operator: '==', value: 'ios' }], segments: ['listed', 'eu'] }),
    rule('eu-only', 2, { segments: ['eu'], allocations: [{ variantKey: 'off', percentage: 100 }] }),
  ];
  return buildSnapshot(org(), [f], new Map([[f.name, [config({ rules })]]]), segments);
}

const SEGMENTS = [
  segment('listed', [{ field: 'userId', operator: 'in', value: IDS }]),
  segment('eu', [{ field: 'country', operator: 'in', value: ['NL', 'DE', 'FR'] }]),
];

const run = (s: OrgSnapshot, userId: string, context: Record<string, unknown>) =>
  evaluateFlag(s, s.flags.get('checkout')!, req({ userId, context }), NOW);

t.test('a rule matches when its conditions match and the context is in every segment', async (t) => {
  const s = world(SEGMENTS);
  t.match(run(s, 'user-19999', { device: 'ios', country: 'NL' }), { key: 'on', reason: { code: 'rule_matched', ruleId: 'both' } });
  t.match(run(s, 'user-20000', { device: 'ios', country: 'NL' }), { key: 'off', reason: { ruleId: 'eu-only' } }, 'not listed: next rule');
  t.match(run(s, 'user-1', { device: 'web', country: 'NL' }), { reason: { ruleId: 'eu-only' } }, 'condition fails: next rule');
  t.match(run(s, 'user-1', { device: 'ios', country: 'US' }), { reason: { code: 'default' } }, 'in no segment: default');
  t.match(run(s, 'user-1', { device: 'ios' }), { reason: { code: 'default' } }, 'missing field: not in the segment');
});

t.test('a segment without conditions holds everyone; an unknown segment no one', async (t) => {
  const everyone = world([segment('listed', []), segment('eu', [])]);
  t.match(run(everyone, 'anyone', { device: 'ios' }), { reason: { ruleId: 'both' } });
  const missing = world([SEGMENTS[1]]);
  t.match(run(missing, 'user-1', { device: 'ios', country: 'NL' }), { reason: { ruleId: 'eu-only' } }, "a rule naming a segment the snapshot lacks does not match");
  const none = buildSnapshot(org(), [flag()], new Map([['checkout', [config({ rules: [rule('r', 1, { segments: ['x'] })] })]]]));
  const noSegments: OrgSnapshot = { org: none.org, flags: none.flags };
  t.match(evaluateFlag(noSegments, noSegments.flags.get('checkout')!, req(), NOW), { reason: { code: 'default' } }, 'a snapshot without segments');
});

t.test('not_in: present and unlisted', async (t) => {
  const f = flag();
  const s = buildSnapshot(org(), [f], new Map([[f.name, [config({ rules: [rule('r', 1, { segments: ['outsiders'] })] })]]]), [
    segment('outsiders', [{ field: 'userId', operator: 'not_in', value: IDS }]),
  ]);
  t.equal(evaluateFlag(s, s.flags.get('checkout')!, req({ userId: 'stranger' }), NOW).key, 'on');
  t.equal(evaluateFlag(s, s.flags.get('checkout')!, req({ userId: 'user-7' }), NOW).key, 'off');
});

t.test('the in / not_in lists become hash sets when the segment is compiled, not per evaluation', async (t) => {
  const c: CompiledSegment = compileSegment(SEGMENTS[0]);
  t.equal(c.conditions[0].valueSet?.size, 20_000, 'a Set of the 20,000 values');
  const s = world(SEGMENTS);
  t.equal(s.segments?.get('listed')?.conditions[0].valueSet?.size, 20_000, 'buildSnapshot compiles each segment once');
  // Strict JSON equality still holds through the set: 1 is not "1", objects are never members.
  const numbers = compileSegment(segment('n', [{ field: 'n', operator: 'in', value: Array.from({ length: 100 }, (_, i) => i) }]));
  const snapN = buildSnapshot(org(), [flag()], new Map([['checkout', [config({ rules: [rule('r', 1, { segments: ['n'] })] })]]]), [numbers.segment]);
  const ev = (n: unknown) => evaluateFlag(snapN, snapN.flags.get('checkout')!, req({ context: { n } }), NOW).key;
  t.equal(ev(42), 'on');
  t.equal(ev('42'), 'off', '"42" is not 42');
  t.equal(ev({ a: 1 }), 'off');
  // Timing bound: 20,000 evaluations against the 20,000-id list stay far from a scan's cost
  // (a scan would be 4e8 comparisons).
  const started = process.hrtime.bigint();
  for (let i = 0; i < 20_000; i++) run(s, IDS[i], { device: 'ios', country: 'NL' });
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  t.ok(ms < 2000, `20,000 evaluations in ${ms.toFixed(1)} ms`);
});
