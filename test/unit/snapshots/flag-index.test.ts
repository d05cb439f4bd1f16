/**
 * The flag list's index (src/snapshots/flag-index.ts), pure: after random one-flag inserts,
 * updates and deletes it holds exactly the flags a freshly sorted list holds, and every query
 * (application, type, archived, search, after, limit) answers what a brute-force filter over
 * that list answers. Also: the registry keeps a built index current on a one-flag change, and
 * the costs at 100,000 flags.
 */
import t from 'tap';
import fc from 'fast-check';
import { performance } from 'node:perf_hooks';
import type { Flag, FlagConfig, Organization } from '../../../src/domain/types.js';
import { compileFlag } from '../../../src/engine/index.js';
import { FlagIndex, flagChanged, flagIndexOf, INDEX_SLICE, readyFlagIndex, searchText, type FlagFilter, type IndexPage } from '../../../src/snapshots/flag-index.js';
import { SnapshotRegistry, type SnapshotSource, type Touches } from '../../../src/snapshots/registry.js';
import { flag, org, snap } from '../../helpers/engine-fixtures.js';

const TYPES = ['boolean', 'string', 'number', 'json'] as const;
const byName = (a: { name: string }, b: { name: string }) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

/** What the index must answer, computed the slow, obvious way. */
function model(flags: Iterable<Flag>, f: FlagFilter, after: string | null, limit: number | null): IndexPage {
  const matching = [...flags]
    .filter(
      (x) =>
        (f.application === null || x.project.toLowerCase() === f.application) &&
        (f.type === null || x.type === f.type) &&
        (f.archived === null || x.isArchived === f.archived) &&
        (f.search === null || [x.name, x.description ?? '', ...x.tags].some((s) => s.toLowerCase().includes(f.search!))),
    )
    .sort(byName);
  const rest = after === null ? matching : matching.filter((x) => x.name > after);
  const page = limit === null ? rest : rest.slice(0, limit);
  return { flags: page, total: matching.length, hasMore: rest.length > page.length };
}

const names = (p: IndexPage) => ({ names: p.flags.map((f) => f.name), total: p.total, hasMore: p.hasMore });

// Small alphabets, so that inserts collide with existing names (updates) and searches match.
const nameArb = fc.stringMatching(/^[A-Ca-c0-2][A-Ca-c0-2_.-]{0,3}$/);
const appArb = fc.constantFrom('web', 'WEB', 'Web', 'billing', 'mobile');
const flagArb = fc.record({
  name: nameArb,
  project: appArb,
  type: fc.constantFrom(...TYPES),
  isArchived: fc.boolean(),
  description: fc.option(fc.constantFrom('Checkout flow', 'new BILLING page', 'ab', ''), { nil: null }),
  tags: fc.array(fc.constantFrom('Team-A', 'beta', 'CB'), { maxLength: 2 }),
});
const toFlag = (r: fc.RecordValue<typeof flagArb> extends never ? never : any): Flag => flag(r as Partial<Flag>);

const opArb = fc.oneof(
  { weight: 3, arbitrary: flagArb.map((f) => ({ kind: 'set' as const, flag: toFlag(f) })) },
  { weight: 1, arbitrary: nameArb.map((name) => ({ kind: 'delete' as const, name })) },
);

const filterArb: fc.Arbitrary<FlagFilter> = fc.record({
  application: fc.option(fc.constantFrom('web', 'billing', 'mobile', 'none'), { nil: null }),
  type: fc.option(fc.constantFrom(...TYPES), { nil: null }),
  archived: fc.option(fc.boolean(), { nil: null }),
  search: fc.option(fc.constantFrom('a', 'b', 'checkout', 'billing', 'team', '-', 'x', 'c.', 'b page'), { nil: null }),
});
const afterArb = fc.option(nameArb, { nil: null });
const limitArb = fc.option(fc.integer({ min: 1, max: 12 }), { nil: null });

t.test('after random one-flag inserts, updates and deletes, the index equals a freshly sorted list', async (t) => {
  fc.assert(
    fc.property(fc.array(flagArb, { maxLength: 30 }), fc.array(opArb, { maxLength: 60 }), fc.array(fc.tuple(filterArb, afterArb, limitArb), { minLength: 1, maxLength: 8 }), (initial, ops, queries) => {
      const live = new Map<string, Flag>();
      for (const r of initial) live.set(r.name, toFlag(r));
      const ix = FlagIndex.build(live.values());
      for (const op of ops) {
        if (op.kind === 'set') {
          live.set(op.flag.name, op.flag);
          ix.set(op.flag);
        } else {
          live.delete(op.name);
          ix.delete(op.name);
        }
        if (ix.size !== live.size) return false;
      }
      const sorted = [...live.keys()].sort();
      if (JSON.stringify(ix.names()) !== JSON.stringify(sorted)) return false;
      // A fresh build of the same flags answers the same.
      const fresh = FlagIndex.build(live.values());
      for (const [f, after, limit] of queries) {
        const want = JSON.stringify(names(model(live.values(), f, after, limit)));
        if (JSON.stringify(names(ix.query(f, after, limit))) !== want) return false;
        if (JSON.stringify(names(fresh.query(f, after, limit))) !== want) return false;
      }
      return true;
    }),
    { numRuns: 400 },
  );
  t.pass('400 random histories');
});

t.test('paging through every page with any page size gives the whole filtered list once', async (t) => {
  fc.assert(
    fc.property(fc.array(flagArb, { maxLength: 40 }), filterArb, fc.integer({ min: 1, max: 7 }), (list, f, size) => {
      const live = new Map(list.map((r) => [r.name, toFlag(r)] as const));
      const ix = FlagIndex.build(live.values());
      const all = model(live.values(), f, null, null);
      const seen: string[] = [];
      let after: string | null = null;
      for (let pages = 0; pages < 100; pages++) {
        const p = ix.query(f, after, size);
        if (p.total !== all.total) return false;
        seen.push(...p.flags.map((x) => x.name));
        if (!p.hasMore) break;
        if (p.flags.length !== size) return false; // a page before the last one is full
        after = p.flags[p.flags.length - 1].name;
      }
      return JSON.stringify(seen) === JSON.stringify(all.flags.map((x) => x.name));
    }),
    { numRuns: 300 },
  );
  t.pass('300 random pagings');
});

t.test('examples', async (t) => {
  const ix = FlagIndex.build([
    flag({ name: 'b', project: 'web' }),
    flag({ name: 'B', project: 'Mobile', isArchived: true }),
    flag({ name: 'a-1', project: 'web', type: 'boolean', description: 'Checkout FLOW', tags: ['Team-X'] }),
    flag({ name: 'a.1', project: 'WEB', type: 'json' }),
    flag({ name: 'a_1', project: 'billing' }),
  ]);
  t.same(ix.names(), ['B', 'a-1', 'a.1', 'a_1', 'b'], 'byte order: upper case first, then - . _');
  const any: FlagFilter = { application: null, type: null, archived: null, search: null };
  t.same(names(ix.query(any, null, 2)), { names: ['B', 'a-1'], total: 5, hasMore: true });
  t.same(names(ix.query(any, 'a-1', 2)), { names: ['a.1', 'a_1'], total: 5, hasMore: true });
  t.same(names(ix.query(any, 'a_1', 2)), { names: ['b'], total: 5, hasMore: false });
  t.same(names(ix.query(any, 'a0', null)), { names: ['a_1', 'b'], total: 5, hasMore: false }, 'after need not exist');
  t.same(names(ix.query(any, 'zzz', 3)), { names: [], total: 5, hasMore: false });
  t.same(names(ix.query({ ...any, application: 'web' }, null, null)), { names: ['a-1', 'a.1', 'b'], total: 3, hasMore: false }, 'application compares case-insensitively');
  t.same(names(ix.query({ ...any, application: 'nope' }, null, null)), { names: [], total: 0, hasMore: false });
  t.same(names(ix.query({ ...any, archived: true }, null, null)), { names: ['B'], total: 1, hasMore: false });
  t.same(names(ix.query({ ...any, archived: false, type: 'string' }, null, 1)), { names: ['a_1'], total: 2, hasMore: true });
  t.same(names(ix.query({ ...any, search: 'flow' }, null, null)), { names: ['a-1'], total: 1, hasMore: false }, 'description');
  t.same(names(ix.query({ ...any, search: 'team-x' }, null, null)), { names: ['a-1'], total: 1, hasMore: false }, 'tag');
  t.same(names(ix.query({ ...any, search: 'a' }, 'a-1', 1)), { names: ['a.1'], total: 3, hasMore: true }, 'a search counts the whole list, pages after `after`');
  t.same(names(ix.query({ ...any, search: 'flowteam' }, null, null)).total, 0, 'a search never spans two fields');
  t.equal(searchText(flag({ name: 'N', description: 'D', tags: ['T'] })), 'n\u0000d\u0000t');

  // An update that moves a flag to another application moves it between the per-application lists.
  ix.set(flag({ name: 'a_1', project: 'web' }));
  t.same(names(ix.query({ ...any, application: 'billing' }, null, null)).total, 0);
  t.same(names(ix.query({ ...any, application: 'web' }, null, null)).names, ['a-1', 'a.1', 'a_1', 'b']);
  ix.delete('a_1');
  ix.delete('not-there');
  t.same(ix.names(), ['B', 'a-1', 'a.1', 'b']);
  // The search text follows an update.
  ix.set(flag({ name: 'a-1', project: 'web', description: 'renamed' }));
  t.same(names(ix.query({ ...any, search: 'flow' }, null, null)).total, 0);
  t.same(names(ix.query({ ...any, search: 'renamed' }, null, null)).names, ['a-1']);
});

t.test('flagIndexOf / flagChanged: one index per snapshot object, kept current one flag at a time', async (t) => {
  const s = snap(org(), [flag({ name: 'x' }), flag({ name: 'm' })]);
  const ix = flagIndexOf(s);
  t.equal(flagIndexOf(s), ix, 'built once, then reused');
  s.flags.set('a', compileFlag(flag({ name: 'a' }), []));
  flagChanged(s, 'a');
  s.flags.delete('x');
  flagChanged(s, 'x');
  t.same(flagIndexOf(s).names(), ['a', 'm']);
  const other = snap(org(), [flag({ name: 'q' })]);
  flagChanged(other, 'q'); // no index yet: nothing to do
  t.same(flagIndexOf(other).names(), ['q'], 'another snapshot object has its own index');
});

t.test('the registry updates a built index when it applies a one-flag change', async (t) => {
  const o: Organization = org({ id: 'o1', version: 1 });
  const stored = new Map<string, Flag>([['b', flag({ name: 'b' })]]);
  // The change log: what each version touched (the database's org_changes).
  const log = new Map<number, Touches>();
  const source: SnapshotSource = {
    org: async () => ({ ...o }),
    flags: async () => [...stored.values()],
    orgConfigs: async () => new Map(),
    changesSince: async (_id, held) => {
      const changes = [...log].filter(([v]) => v > held && v <= o.version).map(([version, touches]) => ({ version, touches }));
      const flags = new Map<string, { flag: Flag; configs: FlagConfig[] }>();
      for (const c of changes) {
        const name = typeof c.touches === 'object' ? c.touches.flag : null;
        const f = name === null ? undefined : stored.get(name);
        if (f !== undefined) flags.set(f.name, { flag: f, configs: [] });
      }
      return { org: { ...o }, changes, flags };
    },
  };
  const write = (touches: Touches) => log.set(++o.version, touches);
  const reg = new SnapshotRegistry(source);
  const s = (await reg.get('o1'))!;
  t.same(flagIndexOf(s).names(), ['b']);
  stored.set('a', flag({ name: 'a', description: 'new one' }));
  write({ flag: 'a' });
  await reg.apply({ orgId: 'o1', version: 2, touches: { flag: 'a' } });
  t.equal(reg.peek('o1'), s, 'a flag change updates the snapshot in place');
  t.same(flagIndexOf(s).names(), ['a', 'b'], 'insert');
  stored.delete('b');
  write({ flag: 'b' });
  await reg.apply({ orgId: 'o1', version: 3, touches: { flag: 'b' } });
  t.same(flagIndexOf(s).names(), ['a'], 'delete');
  stored.set('a', flag({ name: 'a', description: 'edited' }));
  write({ flag: 'a' });
  await reg.apply({ orgId: 'o1', version: 4, touches: { flag: 'a' } });
  const any: FlagFilter = { application: null, type: null, archived: null, search: 'edited' };
  t.same(flagIndexOf(s).query(any, null, null).flags.map((f) => f.name), ['a'], 'update');
  stored.set('c', flag({ name: 'c' }));
  o.version = 9; // versions 5-9 are not in the log: a gap, so the organization is reloaded
  await reg.apply({ orgId: 'o1', version: 9, touches: 'all' });
  const s2 = reg.peek('o1')!;
  t.not(s2, s, 'a whole-organization reload makes a new snapshot object');
  t.same(flagIndexOf(s2).names(), ['a', 'c'], 'whose index is built afresh');
});

t.test('costs at 100,000 flags', async (t) => {
  const N = 100_000;
  const apps = ['web', 'billing', 'mobile', 'search'];
  const flags: Flag[] = [];
  for (let i = 0; i < N; i++) {
    // Not in name order, as the database's collation may hand them over.
    const n = (i * 7919) % N;
    flags.push(
      flag({
        name: `flag-${String(n).padStart(6, '0')}`,
        project: apps[n % 4],
        type: TYPES[n % 4],
        isArchived: n % 10 === 0,
        description: n % 3 === 0 ? `Description of feature ${n}` : null,
        tags: n % 5 === 0 ? ['team-a', 'beta'] : [],
      }),
    );
  }
  const time = (fn: () => void, runs = 1): number => {
    const t0 = performance.now();
    for (let i = 0; i < runs; i++) fn();
    return (performance.now() - t0) / runs;
  };
  let ix!: FlagIndex;
  const build = time(() => (ix = FlagIndex.build(flags)));
  const any: FlagFilter = { application: null, type: null, archived: null, search: null };
  const mid = 'flag-050000';
  const page = time(() => ix.query(any, mid, 50), 2000);
  const scoped = time(() => ix.query({ ...any, application: 'billing' }, mid, 50), 2000);
  const typed = time(() => ix.query({ ...any, type: 'json', archived: false }, mid, 50), 2000);
  ix.query({ ...any, search: 'warm' }, null, 50); // builds the search texts once
  const search = time(() => ix.query({ ...any, search: 'feature 7' }, null, 50), 20);
  let k = 0;
  const insert = time(() => ix.set(flag({ name: `flag-${String(k++).padStart(6, '0')}x` })), 1000);
  k = 0;
  const update = time(() => ix.set(flag({ name: `flag-${String(k++ * 50).padStart(6, '0')}`, description: 'changed' })), 1000);
  k = 0;
  const del = time(() => ix.delete(`flag-${String(k++).padStart(6, '0')}x`), 1000);
  t.equal(ix.size, N);
  t.comment(
    `build ${build.toFixed(1)} ms; page of 50: plain ${(page * 1000).toFixed(1)} µs, one application ${(scoped * 1000).toFixed(1)} µs, ` +
      `type+archived ${(typed * 1000).toFixed(1)} µs; search ${search.toFixed(2)} ms; one-flag insert ${(insert * 1000).toFixed(1)} µs, ` +
      `update ${(update * 1000).toFixed(1)} µs, delete ${(del * 1000).toFixed(1)} µs`,
  );
  // Loose bounds (a shared machine): each is orders of magnitude below a sort or a scan.
  t.ok(page < 0.5 && scoped < 0.5 && typed < 0.5, 'a page is a binary search and a slice');
  t.ok(insert < 1 && update < 1 && del < 1, 'a one-flag change costs well under a millisecond');
  t.ok(search < 100, 'a search scans precomputed text');
  t.ok(build < 2000, 'the build sorts once');
});

// ---- built in slices (the front thread's index) ------------------------------------------------

/** A snapshot of `flags` in the order given (as a whole load puts them). */
const snapshotOf = (flags: Flag[]) => snap(org(), flags);
const turns = async (n: number) => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
};

t.test('readyFlagIndex: null until the slices are done, then the index a whole build makes; changes during the build are in it', async (t) => {
  const N = INDEX_SLICE * 3 + 17;
  const flags = Array.from({ length: N }, (_, i) => flag({ name: `f-${String(i).padStart(6, '0')}`, project: i % 3 === 0 ? 'web' : 'billing', type: i % 5 === 0 ? 'string' : 'boolean' }));
  const s = snapshotOf(flags);
  t.equal(readyFlagIndex(s), null, 'the first ask starts the build and answers null');
  t.equal(readyFlagIndex(s), null, 'so does the next, in the same turn (one build)');
  await turns(1);
  t.equal(readyFlagIndex(s), null, 'one slice later: still building');
  // Changes made in place during the build, as the registry makes them.
  const changed = flag({ name: 'f-000003', project: 'web', type: 'json' });
  s.flags.set(changed.name, compileFlag(changed, []));
  flagChanged(s, changed.name);
  s.flags.delete('f-000004');
  flagChanged(s, 'f-000004');
  const added = flag({ name: 'f-zzz', project: 'web' });
  s.flags.set(added.name, compileFlag(added, []));
  flagChanged(s, added.name);
  await turns(5);
  const ix = readyFlagIndex(s);
  t.ok(ix !== null, 'built after four slices');
  const fresh = FlagIndex.build([...s.flags.values()].map((c) => c.flag));
  t.same(ix!.names(), fresh.names(), 'the names, with the changes made during the build');
  for (const f of [
    { application: null, type: null, archived: null, search: null },
    { application: 'web', type: null, archived: null, search: null },
    { application: 'billing', type: 'string', archived: null, search: null },
    { application: null, type: 'json', archived: false, search: null },
  ] satisfies FlagFilter[]) {
    t.same(names(ix!.query(f, 'f-000002', 5)), names(fresh.query(f, 'f-000002', 5)), `a page of ${JSON.stringify(f)}`);
    t.same(ix!.query(f, null, null).total, fresh.query(f, null, null).total, `the total of ${JSON.stringify(f)}`);
  }
  t.equal(flagIndexOf(s), ix, 'the same index flagIndexOf answers');
});

t.test('readyFlagIndex: flags out of name order (added one at a time after a load) are sorted in slices', async (t) => {
  const N = INDEX_SLICE * 5 + 3;
  // Creation order, as a node that took its flags one write at a time holds them: f-10 before f-2.
  const created = Array.from({ length: N }, (_, i) => flag({ name: `f-${i}`, project: i % 2 === 0 ? 'web' : 'billing', isArchived: i % 7 === 0 }));
  const s = snapshotOf(created);
  t.equal(readyFlagIndex(s), null, 'building');
  let turnsTaken = 0;
  while (readyFlagIndex(s) === null && turnsTaken < 200) {
    await turns(1);
    turnsTaken++;
  }
  const ix = readyFlagIndex(s);
  t.ok(ix !== null, `built, in ${turnsTaken} turns`);
  t.ok(turnsTaken > 6, 'over several slices (entries, sorted runs, merges, counts)');
  const fresh = FlagIndex.build(created);
  t.same(ix!.names(), fresh.names(), 'in name order');
  t.same(ix!.names(), created.map((f) => f.name).sort(), 'every flag once');
  for (const f of [
    { application: 'web', type: null, archived: null, search: null },
    { application: null, type: null, archived: true, search: null },
  ] satisfies FlagFilter[]) {
    t.same(names(ix!.query(f, 'f-1000', 7)), names(fresh.query(f, 'f-1000', 7)), `a page of ${JSON.stringify(f)}`);
  }
});
