/**
 * The OpenFeature context as the engine reads it (src/engine/openfeature-context.ts): the reserved
 * properties (`targetingKey`, `stage`, `clientId`) are not evaluation context, and the in-process
 * provider hands the engine the context as it is only for flags that `readsReservedContext` clears:
 * for those, every answer equals the answer for `evaluationContextOf` of the context.
 */
import t from 'tap';
import type { Segment } from '../../../src/domain/types.js';
import { buildSnapshot, evaluateFlag, type OrgSnapshot } from '../../../src/engine/index.js';
import { evaluationContextOf, isPlainContext, readsReservedContext } from '../../../src/engine/openfeature-context.js';
import { config, flag, org, rule, NOW } from '../../helpers/engine-fixtures.js';

const segment = (name: string, conditions: Segment['conditions']): Segment => ({
  name,
  description: null,
  application: null,
  conditions,
  createdAt: '2025-01-01T00:00:00.000Z',
  updatedAt: '2025-01-01T00:00:00.000Z',
});

/** Flags: `plain` reads only ordinary fields; the others read a reserved one, directly, through a segment, a client configuration or a parent. */
function world(): OrgSnapshot {
  const split = [
    { variantKey: 'on', percentage: 50 },
    { variantKey: 'off', percentage: 50 },
  ];
  const flags = [
    flag({ name: 'plain' }),
    flag({ name: 'direct' }),
    flag({ name: 'via-segment' }),
    flag({ name: 'via-client' }),
    flag({ name: 'parent' }),
    flag({ name: 'child', dependencies: [{ flag: 'parent', variants: ['on'] }] }),
    flag({ name: 'loop-a', dependencies: [{ flag: 'loop-b', variants: null }] }),
    flag({ name: 'loop-b', dependencies: [{ flag: 'loop-a', variants: null }] }),
  ];
  const configs = new Map([
    ['plain', [config({ rules: [rule('p', 1, { conditions: [{ field: 'plan', operator: '==', value: 'pro' }], allocations: split }), rule('o', 2, { segments: ['pros'] })] })]],
    ['direct', [config({ rules: [rule('d', 1, { conditions: [{ field: 'targetingKey', operator: '==', value: 'user-1' }] })] })]],
    ['via-segment', [config({ rules: [rule('s', 1, { segments: ['staged'] })] })]],
    ['via-client', [config(), config({ clientId: 'ios', rules: [rule('c', 1, { conditions: [{ field: 'clientId.x', operator: '==', value: 1 }] })] })]],
    ['parent', [config({ rules: [rule('r', 1, { conditions: [{ field: 'stage', operator: '==', value: 'production' }] })] })]],
    ['child', [config({ defaultVariantKey: 'on' })]],
    ['loop-a', [config()]],
    ['loop-b', [config()]],
  ]);
  return buildSnapshot(org(), flags, configs, [
    segment('pros', [{ field: 'plan', operator: 'in', value: ['pro', 'team'] }]),
    segment('staged', [{ field: 'stage', operator: '!=', value: 'x' }]),
  ]);
}

t.test('readsReservedContext finds a reserved field in rules, segments, client configurations and parents', async (t) => {
  const s = world();
  const reads = (name: string) => readsReservedContext(s, s.flags.get(name)!);
  t.equal(reads('plain'), false, 'ordinary fields only');
  t.equal(reads('direct'), true, 'a rule reads targetingKey');
  t.equal(reads('via-segment'), true, 'a segment reads stage');
  t.equal(reads('via-client'), true, 'a clientId configuration reads clientId.x');
  t.equal(reads('parent'), true, 'a rule reads stage');
  t.equal(reads('child'), true, 'its parent reads stage');
  t.equal(reads('loop-a'), false, 'a dependency cycle ends');
});

t.test('for a flag that reads no reserved field, the context as it is answers as evaluationContextOf of it', async (t) => {
  const s = world();
  const cf = s.flags.get('plain')!;
  let n = 0;
  for (let i = 0; i < 400; i++) {
    const c: Record<string, unknown> = { targetingKey: `user-${i}`, stage: 'x', clientId: 'ios' };
    if (i % 2 === 0) c.plan = ['pro', 'team', 'free'][i % 3];
    if (i % 5 === 0) c.country = 'NL';
    for (const context of [c, Object.freeze({ ...c }), Object.assign(Object.create(null), c)]) {
      t.ok(isPlainContext(context));
      const req = { userId: `user-${i}`, stage: 'production', clientId: null };
      const raw = evaluateFlag(s, cf, { ...req, context }, NOW);
      const copied = evaluateFlag(s, cf, { ...req, context: evaluationContextOf(context) }, NOW);
      if (JSON.stringify(raw) !== JSON.stringify(copied)) t.fail(`differs for ${JSON.stringify(c)}`);
      n++;
    }
  }
  t.pass(`${n} contexts answer the same`);
  // Where a reserved field is read, the copy matters: `stage` is not evaluation context.
  const parent = s.flags.get('parent')!;
  const c = { targetingKey: 'user-1', stage: 'production' };
  t.equal(evaluateFlag(s, parent, { userId: 'user-1', stage: 'production', clientId: null, context: evaluationContextOf(c) }, NOW).reason.code, 'default');
  t.equal(evaluateFlag(s, parent, { userId: 'user-1', stage: 'production', clientId: null, context: c }, NOW).reason.code, 'rule_matched', 'the context as it is would match');
});

t.test('isPlainContext: only objects whose prototype is Object.prototype or null', async (t) => {
  t.equal(isPlainContext({ a: 1 }), true);
  t.equal(isPlainContext(Object.create(null)), true);
  t.equal(isPlainContext(Object.create({ plan: 'pro' })), false, 'inherited properties are copied by for…in, not read by the engine');
  t.equal(isPlainContext(new (class C {})()), false);
  t.equal(isPlainContext(new Map()), false);
});
