/**
 * Segments in the evaluation workers' shared store (src/snapshots/shared-store.ts), pure: a
 * segment change (touches `{segment}`) writes that segment's record only, and a worker's view
 * evaluates a rule naming it exactly as the front thread's snapshot does.
 */
import t from 'tap';
import type { Segment } from '../../../src/domain/types.js';
import { buildSnapshot, compileSegment, evaluateFlag, type CompiledSegment, type OrgSnapshot } from '../../../src/engine/index.js';
import { stepFor } from '../../../src/snapshots/apply-rules.js';
import { SharedStoreReader, SharedStoreWriter, type StoreMessage } from '../../../src/snapshots/shared-store.js';
import { config, flag, org, req, rule, NOW } from '../../helpers/engine-fixtures.js';

const seg = (name: string, values: string[]): Segment => ({
  name,
  description: null,
  application: null,
  conditions: [{ field: 'userId', operator: 'in', value: values }],
  createdAt: '2025-01-01T00:00:00.000Z',
  updatedAt: '2025-01-01T00:00:00.000Z',
});

t.test('stepFor: a segment change one version ahead applies that segment only', async (t) => {
  t.same(stepFor(4, { orgId: 'o', version: 5, touches: { segment: 's' } }), { kind: 'segment', name: 's' });
  t.same(stepFor(3, { orgId: 'o', version: 5, touches: { segment: 's' } }), { kind: 'reload' }, 'a gap reloads');
});

t.test('writer and reader: segments written once, read and compiled by the worker', async (t) => {
  const posted: StoreMessage[] = [];
  const writer = new SharedStoreWriter((m) => posted.push(m));
  const reader = new SharedStoreReader(16);
  const deliver = () => {
    for (const m of posted.splice(0)) reader.receive(m);
  };
  const ids = Array.from({ length: 20_000 }, (_, i) => `u${i}`);
  const f = flag();
  const front: OrgSnapshot = buildSnapshot(org({ version: 5 }), [f], new Map([[f.name, [config({ rules: [rule('r', 1, { segments: ['vip'] })] })]]]), [
    seg('vip', ids),
    seg('other', ['x']),
  ]);
  writer.update('org-1', front, 'all');
  deliver();
  const view = reader.view('org-1')!.snapshot;
  const both = (userId: string) => {
    const a = evaluateFlag(front, front.flags.get('checkout')!, req({ userId }), NOW);
    const b = evaluateFlag(view, view.flags.get('checkout')!, req({ userId }), NOW);
    t.same(b, a, `${userId}: the worker answers what the front answers (${a.key})`);
    return b.key;
  };
  t.equal(both('u19999'), 'on');
  t.equal(both('nobody'), 'off');
  const compiled = view.segments?.get('vip');
  t.equal(compiled?.conditions[0].valueSet?.size, 20_000, 'the worker compiles the hash set once per record');
  t.equal(view.segments?.get('vip'), compiled, 'and keeps it while the record stands');
  t.equal(view.flags.get('@vip'), undefined, 'a segment record is never a flag');

  // A segment change: one record, one version step.
  const segments = front.segments as Map<string, CompiledSegment>;
  segments.set('vip', compileSegment(seg('vip', ['nobody'])));
  front.org = { ...front.org, version: 6 };
  const before = writer.stats.recordsWritten;
  writer.update('org-1', front, { segment: 'vip' });
  t.equal(writer.stats.recordsWritten - before, 1, 'only the segment was written');
  deliver();
  t.ok(reader.view('org-1')!.serves(6), 'the worker may serve version 6');
  t.equal(both('nobody'), 'on', 'the changed segment holds');
  t.equal(both('u19999'), 'off');

  // A deletion.
  segments.delete('vip');
  front.org = { ...front.org, version: 7 };
  writer.update('org-1', front, { segment: 'vip' });
  deliver();
  t.equal(view.segments?.get('vip'), undefined, 'deleted');
  t.equal(both('nobody'), 'off', 'a rule naming a deleted segment matches no one');
  t.ok(view.segments?.get('other'), 'the other segment stays');
});
