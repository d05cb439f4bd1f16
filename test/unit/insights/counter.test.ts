/**
 * src/insights/counter.ts, `InsightsCounter.count`: the cell of an evaluation is found by the
 * engine's `Evaluation.index` (slot index + 1 of the stage's cells), not by comparing keys. Counting
 * by index must give exactly the counts that counting by the served key gives, for every flag,
 * stage and variant (no variant: ''), across drains.
 */
import t, { type Test } from 'tap';
import fc from 'fast-check';
import type { Evaluation } from '../../../src/domain/types.js';
import { evaluateFlag } from '../../../src/engine/index.js';
import { InsightsCounter, ROW_STRIDE, type InsightsRows } from '../../../src/insights/counter.js';
import { NOW, org, flag, config, rule, req, snap } from '../../helpers/engine-fixtures.js';

const variants = ['a', 'b', 'c'].map((key) => ({ key, value: key.toUpperCase(), valueType: 'string' as const }));
const stages = ['production', 'staging'];
const o = org();
const split = (stage: string) =>
  config({
    stage,
    defaultVariantKey: 'c',
    rolloutPercentage: 80, // 20 % rollout_excluded: the default
    rules: [
      rule('split', 1, {
        conditions: [{ field: 'plan', operator: '==', value: 'pro' }],
        allocations: [
          { variantKey: 'a', percentage: 40 },
          { variantKey: 'b', percentage: 40 },
          { variantKey: 'ghost', percentage: 20 }, // no variant: key null
        ],
      }),
    ],
  });
const s = snap(
  o,
  [flag({ name: 'f1', variants }), flag({ name: 'f2', variants: [...variants].reverse() }), flag({ name: 'none', variants: [] })],
  { f1: stages.map(split), f2: stages.map(split), none: stages.map(split) },
);
const names = ['f1', 'f2', 'none'];

/** Adds drained rows into `into`, by flag/stage/variant; checks each (flag, stage, variant) is at most one row per drain. */
function addRows(t: Test, rows: InsightsRows, into: Map<string, number>): void {
  const once = new Set<string>();
  for (let i = 0; i < rows.length; i += ROW_STRIDE) {
    const [orgId, f, stage, application, variant, count] = rows.slice(i, i + 6) as [string, string, string, string, string, number];
    t.equal(orgId, o.id);
    t.equal(application, 'web');
    const k = `${f}/${stage}/${variant}`;
    if (once.has(k)) t.fail(`${k} twice in one drain`);
    once.add(k);
    into.set(k, (into.get(k) ?? 0) + count);
  }
}

t.test('property: counting by index gives the counts by served key, across drains', async (t) => {
  fc.assert(
    fc.property(
      fc.array(fc.record({ flag: fc.nat(2), stage: fc.nat(1), user: fc.nat(999), pro: fc.boolean(), drain: fc.nat(9) }), { minLength: 1, maxLength: 300 }),
      (steps) => {
        const counter = new InsightsCounter();
        const byKey = new Map<string, number>();
        const drained = new Map<string, number>();
        for (const st of steps) {
          const cf = s.flags.get(names[st.flag])!;
          const stage = stages[st.stage];
          const ev = evaluateFlag(s, cf, req({ userId: `u${st.user}`, stage, context: { plan: st.pro ? 'pro' : 'free' } }), NOW);
          counter.count(s, cf, stage, ev);
          const k = `${cf.flag.name}/${stage}/${ev.key ?? ''}`;
          byKey.set(k, (byKey.get(k) ?? 0) + 1);
          if (st.drain === 0) addRows(t, counter.drain([], 1), drained);
        }
        addRows(t, counter.drain([], 2), drained);
        t.notOk(counter.pending);
        const sorted = (m: Map<string, number>) => [...m].sort(([a], [b]) => (a < b ? -1 : 1));
        if (JSON.stringify(sorted(drained)) !== JSON.stringify(sorted(byKey))) {
          throw new Error(`by index ${JSON.stringify(sorted(drained))}, by key ${JSON.stringify(sorted(byKey))}`);
        }
      },
    ),
    { numRuns: 200, seed: 31 },
  );
});

t.test('every kind of served variant has its cell: each variant, none, a flag without variants', async (t) => {
  const counter = new InsightsCounter();
  const seen = new Set<string>();
  for (let u = 0; u < 400; u++) {
    for (const name of names) {
      const cf = s.flags.get(name)!;
      const ev = evaluateFlag(s, cf, req({ userId: `u${u}`, context: { plan: 'pro' } }), NOW);
      counter.count(s, cf, 'production', ev);
      seen.add(`${name}/${ev.key ?? ''}/${ev.index}`);
    }
  }
  t.same([...seen].sort(), ['f1//-1', 'f1/a/0', 'f1/b/1', 'f1/c/2', 'f2//-1', 'f2/a/2', 'f2/b/1', 'f2/c/0', 'none//-1'], 'both orders of the variants, and no variant');
  const rows = counter.drain([], 1);
  const total = new Map<string, number>();
  addRows(t, rows, total);
  t.equal([...total.values()].reduce((a, b) => a + b, 0), 1200, 'every evaluation counted once');
  t.same([...total.keys()].sort(), ['f1/production/', 'f1/production/a', 'f1/production/b', 'f1/production/c', 'f2/production/', 'f2/production/a', 'f2/production/b', 'f2/production/c', 'none/production/']);
});

t.test('an index outside the flag\'s variants is a bug: refused, no cell made', async (t) => {
  const counter = new InsightsCounter();
  const cf = s.flags.get('f1')!;
  const bad: Evaluation = { key: 'a', variant: 'A', reason: { code: 'default', message: 'm' }, index: 3 };
  t.throws(() => counter.count(s, cf, 'production', bad), RangeError);
  t.throws(() => counter.count(s, cf, 'production', { ...bad, index: -2 }), RangeError);
  t.notOk(counter.pending, 'nothing counted');
  counter.count(s, cf, 'production', { ...bad, index: 0 });
  t.same(counter.drain([], 5).slice(4, 6), ['a', 1]);
});
