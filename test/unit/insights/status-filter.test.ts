/**
 * `GET /api/flags?status=` at 100,000 flags (docs/insights.md, "Where statuses are computed"): the
 * flag list's index with the tracker's status predicate pages in milliseconds like the other
 * filters, and counts exactly. A tracker on no database: only its in-memory half runs.
 */
import t from 'tap';
import type { Flag } from '../../../src/domain/types.js';
import { LifecycleTracker } from '../../../src/features/insights/tracker.js';
import { FlagIndex } from '../../../src/snapshots/flag-index.js';
import type { ActorRuntime } from '../../../src/runtime.js';

const N = 100_000;
const created = new Date(Date.now() - 3_600_000).toISOString();
const flags: Flag[] = Array.from({ length: N }, (_, i) => ({
  name: `flag-${String(i).padStart(6, '0')}`,
  project: i % 2 === 0 ? 'web' : 'billing',
  type: 'boolean',
  description: null,
  tags: [],
  isArchived: false,
  variants: [],
  environments: ['production'],
  dependencies: [],
  // Every third flag is operational; with a 1 s operational lifetime those are stale by age.
  purpose: i % 3 === 0 ? 'operational' : 'release',
  createdAt: created,
  updatedAt: created,
}));

t.test('?status= over 100,000 flags pages in milliseconds', async (t) => {
  const rt = { now: Date.now, config: { insightsStatusMs: 1000 }, log: { warn() {} } } as unknown as ActorRuntime;
  const tracker = new LifecycleTracker(rt);
  tracker.applySettings('o', {
    lifetimes: { release: null, experiment: null, operational: 'PT1S', killSwitch: null, permission: null },
    unusedAfter: 'P7D',
  });
  // Every flag evaluated in production with two variants over the last minute, except every fifth (never: new).
  const now = Date.now();
  tracker.noteUsage(flags.flatMap((f, i) => (i % 5 === 0 ? [] : ['on', 'off'].map((variant) => ({ orgId: 'o', flag: f.name, stage: 'production', variant, firstAt: now - 60_000, lastAt: now - 1000 })))));
  const index = FlagIndex.build(flags);
  const page = (status: 'new' | 'stale', after: string | null) =>
    index.query({ application: null, type: null, archived: null, search: null, predicate: tracker.statusFilter('o', status), predicateKey: tracker.filterKey('o', status) }, after, 100);

  let t0 = performance.now();
  const first = page('stale', null);
  const firstMs = performance.now() - t0;
  const expected = flags.filter((_, i) => i % 3 === 0 && i % 5 !== 0).length;
  t.equal(first.total, expected, 'every evaluated operational flag is stale (age)');
  t.equal(first.flags.length, 100);
  t.ok(first.flags.every((f) => f.purpose === 'operational'), 'only operational flags');
  const runs = 20;
  // The first page of another status scans the list once (the statuses are known by now) ...
  t0 = performance.now();
  let next = page('new', null);
  const scanMs = performance.now() - t0;
  // ... and keeps its matches: the pages after it are a binary search and a slice.
  t0 = performance.now();
  for (let i = 0; i < runs; i++) next = page('new', next.flags[next.flags.length - 1].name);
  const pageMs = (performance.now() - t0) / runs;
  t.equal(next.flags.length, 100);
  t.equal(next.total, N / 5, 'the flags never evaluated are new');
  // A change of usage changes the key: the answer is computed again, and right.
  tracker.noteUsage([{ orgId: 'o', flag: flags[0].name, stage: 'production', variant: 'on', firstAt: now - 1000, lastAt: now - 500 }]);
  t.equal(page('new', null).total, N / 5 - 1, 'a new flag evaluated is no longer new');
  // A flag changed in the index (a new object, as a write makes) drops the kept matches.
  const changed = { ...flags[5], purpose: 'killSwitch' as const };
  index.set(changed);
  t.equal(page('new', null).total, N / 5 - 1, 'still right after a change in the index');
  index.delete(flags[10].name);
  t.equal(page('new', null).total, N / 5 - 2, 'a deleted new flag is gone from the kept matches');
  // The same scan with a search (the other filter that reads every flag), for comparison.
  for (let i = 0; i < 5; i++) index.query({ application: null, type: null, archived: null, search: 'flag-', predicate: null }, null, 100);
  t0 = performance.now();
  for (let i = 0; i < runs; i++) index.query({ application: null, type: null, archived: null, search: 'flag-', predicate: null }, null, 100);
  const searchMs = (performance.now() - t0) / runs;
  t.comment(`first query (computes 100,000 statuses): ${firstMs.toFixed(1)} ms; first page of another status (one scan): ${scanMs.toFixed(1)} ms; a next page: ${pageMs.toFixed(3)} ms; a page of a search: ${searchMs.toFixed(2)} ms`);
  // Generous bounds for a shared, busy machine; the figures are in the comment above.
  t.ok(firstMs < 10_000, `first query ${firstMs.toFixed(0)} ms`);
  t.ok(pageMs < 20, `a next page ${pageMs.toFixed(2)} ms`);
});
