/**
 * The flag list's index (docs/snapshots.md, "The flag list's index"): an organization's flags
 * sorted by name, beside its snapshot, so that a page of `GET /api/flags` or GraphQL `flags` /
 * `flagConnection` at 100,000 flags neither sorts nor scans the organization.
 *
 * - One sorted array of every flag, and one per application (keyed by its name key,
 *   domain/name-matching.ts, as application names compare case-insensitively): a page is a binary search for `after` and a
 *   slice, in the whole organization or in one application (an application-scoped key, or the
 *   `application` filter).
 * - Per array, counts by (type, archived): `X-Total-Count` without a search is a sum of at most
 *   eight numbers. With a `type` or `archived` filter a page scans forward from `after` until it
 *   has one match more than it shows (or reaches the end).
 * - A search (`q` / `search`) scans the array once over each flag's lower-cased search text
 *   (name, description and tags), built on the first search that reaches the flag and kept until
 *   the flag changes: never lower-cased again per request.
 * - Names sort by UTF-16 code unit (JavaScript `<`), which for flag names (ASCII only,
 *   FLAG_NAME_RE) is byte order.
 *
 * Keeping it current: the index belongs to one snapshot object (`flagIndexOf`, built on first use
 * and cached in a WeakMap). A whole-organization reload builds a new snapshot object, so its index
 * is built again on its first use; a one-flag change updates the snapshot in place, and the
 * registry then calls `flagChanged`, which replaces, inserts or removes that one entry: a binary
 * search and an array splice (a memmove of at most n pointers, tens of microseconds at 100,000),
 * no sort. The sort happens once per snapshot object, when its list is first asked for.
 */
import { nameKey } from '../domain/name-matching.js';
import type { Flag } from '../domain/types.js';
import type { OrgSnapshot } from '../engine/index.js';

/** What a list asks for; every field null means "any". */
export interface FlagFilter {
  /** The application's name key (domain/name-matching.ts `nameKey`: the key's scope or the `application` filter). */
  application: string | null;
  type: string | null;
  archived: boolean | null;
  /** Lower-cased search text: a substring of the name, the description or a tag. */
  search: string | null;
  /**
   * Any other test of a flag (the lifecycle status, features/insights/tracker.ts): like a search,
   * asked of every flag of the list once per query. Absent or null: none.
   */
  predicate?: ((flag: Flag) => boolean) | null;
  /**
   * With `predicate` alone (no type, archived or search filter): a key that names the predicate's
   * answers. The flags it matches are then kept per list under that key, until the list changes
   * or the key does, so that the next pages are a binary search and a slice, like an unfiltered
   * list. The caller changes the key whenever any answer may have changed.
   */
  predicateKey?: string | null;
}

export interface IndexPage {
  /** The page, sorted by name. */
  flags: Flag[];
  /** Flags matching the filter, wherever the page starts. */
  total: number;
  /** Whether more matching flags follow the page. */
  hasMore: boolean;
}

/** Separates the fields of a search text; a search can never contain it (NUL is refused). */
const SEP = '\u0000';

/** The lower-cased text a search matches: name, description and tags, NUL-separated. */
export function searchText(flag: Flag): string {
  let s = flag.name;
  if (flag.description !== null && flag.description !== '') s += SEP + flag.description;
  for (const tag of flag.tags) s += SEP + tag;
  return s.toLowerCase();
}

class Entry {
  private text: string | undefined;
  readonly name: string;
  readonly application: string;

  constructor(readonly flag: Flag) {
    this.name = flag.name;
    this.application = nameKey(flag.project);
  }

  /** Built on the first search that reaches this flag, then kept (the entry is replaced on change). */
  get searchText(): string {
    return (this.text ??= searchText(this.flag));
  }
}

/** The first index whose name is >= `name` (entries sorted by name, names unique). */
function lowerBound(entries: readonly Entry[], name: string): number {
  let lo = 0;
  let hi = entries.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (entries[mid].name < name) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The first index whose name is > `name`. */
function upperBound(entries: readonly Entry[], name: string): number {
  const i = lowerBound(entries, name);
  return i < entries.length && entries[i].name === name ? i + 1 : i;
}

/** Flags sorted by name, with their counts by (type, archived). */
class SortedFlags {
  readonly entries: Entry[];
  /** The entries matching a predicate, under its key (FlagFilter `predicateKey`); dropped on any change. */
  memo: { key: string; entries: Entry[] } | null = null;
  /** By type: [active flags, archived flags]. */
  private readonly counts: Map<string, [number, number]>;

  /** `entries` must be sorted by name and unique; `counts`, when given, are theirs (IndexBuilder). */
  constructor(entries: Entry[], counts?: Map<string, [number, number]>) {
    this.entries = entries;
    if (counts !== undefined) this.counts = counts;
    else {
      this.counts = new Map();
      for (const e of entries) this.count(e, 1);
    }
  }

  get size(): number {
    return this.entries.length;
  }

  private count(e: Entry, delta: number): void {
    countIn(this.counts, e, delta);
  }

  /** Inserts `e`, or replaces the entry of the same name; returns the replaced one. */
  put(e: Entry): Entry | undefined {
    const i = lowerBound(this.entries, e.name);
    const old = i < this.entries.length && this.entries[i].name === e.name ? this.entries[i] : undefined;
    this.memo = null;
    if (old !== undefined) {
      this.count(old, -1);
      this.entries[i] = e;
    } else {
      this.entries.splice(i, 0, e);
    }
    this.count(e, 1);
    return old;
  }

  /** Removes the entry named `name`; returns it. */
  remove(name: string): Entry | undefined {
    const i = lowerBound(this.entries, name);
    if (i >= this.entries.length || this.entries[i].name !== name) return undefined;
    const old = this.entries[i];
    this.memo = null;
    this.entries.splice(i, 1);
    this.count(old, -1);
    return old;
  }

  /** Flags of `type` (any when null) and `archived` (either when null), from the counts. */
  countOf(type: string | null, archived: boolean | null): number {
    if (type === null && archived === null) return this.entries.length;
    let n = 0;
    for (const [t, c] of this.counts) {
      if (type !== null && t !== type) continue;
      n += archived === null ? c[0] + c[1] : c[archived ? 1 : 0];
    }
    return n;
  }
}

const EMPTY = new SortedFlags([]);

/**
 * Entries added in name order, with their counts and their groups by application kept as they
 * come, so that the index is made at the end without another pass (`buildInSlices` adds a slice at
 * a time).
 */
class IndexBuilder {
  readonly entries: Entry[] = [];
  private readonly groups = new Map<string, { entries: Entry[]; counts: Map<string, [number, number]> }>();
  private readonly counts = new Map<string, [number, number]>();

  /** Adds `e`, whose name must sort after every name added before (both callers add in order). */
  add(e: Entry): void {
    const n = this.entries.length;
    if (n > 0 && !(this.entries[n - 1].name < e.name)) throw new Error(`flag index: '${e.name}' added out of order`);
    this.entries.push(e);
    let g = this.groups.get(e.application);
    if (g === undefined) this.groups.set(e.application, (g = { entries: [], counts: new Map() }));
    g.entries.push(e);
    countIn(this.counts, e, 1);
    countIn(g.counts, e, 1);
  }

  index(): FlagIndex {
    const byApplication = new Map<string, SortedFlags>();
    for (const [app, g] of this.groups) byApplication.set(app, new SortedFlags(g.entries, g.counts));
    return FlagIndex.of(new SortedFlags(this.entries, this.counts), byApplication);
  }
}

/** Counts `e` in `counts` (by type: [active flags, archived flags]), `delta` times. */
function countIn(counts: Map<string, [number, number]>, e: Entry, delta: number): void {
  let c = counts.get(e.flag.type);
  if (c === undefined) counts.set(e.flag.type, (c = [0, 0]));
  c[e.flag.isArchived ? 1 : 0] += delta;
}

export class FlagIndex {
  private constructor(
    private readonly all: SortedFlags,
    private readonly byApplication: Map<string, SortedFlags>,
  ) {}

  /** @internal IndexBuilder's. */
  static of(all: SortedFlags, byApplication: Map<string, SortedFlags>): FlagIndex {
    return new FlagIndex(all, byApplication);
  }

  /** The index of `flags` (any order; names unique, as a snapshot's are). */
  static build(flags: Iterable<Flag>): FlagIndex {
    const entries: Entry[] = [];
    for (const f of flags) entries.push(new Entry(f));
    // Rows usually arrive sorted (the store reads them `order by name collate "C"`, which is this
    // order): check first, and let the sort's run detection do the rest.
    let sorted = true;
    for (let i = 1; i < entries.length && sorted; i++) sorted = entries[i - 1].name < entries[i].name;
    if (!sorted) entries.sort(byName);
    const b = new IndexBuilder();
    for (const e of entries) b.add(e);
    return b.index();
  }

  get size(): number {
    return this.all.size;
  }

  /** Every flag, sorted by name (tests). */
  names(): string[] {
    return this.all.entries.map((e) => e.name);
  }

  /** Inserts `flag`, or replaces the flag of the same name (its application may have changed). */
  set(flag: Flag): void {
    const e = new Entry(flag);
    const old = this.all.put(e);
    if (old !== undefined && old.application !== e.application) this.removeFrom(old.application, old.name);
    let app = this.byApplication.get(e.application);
    if (app === undefined) this.byApplication.set(e.application, (app = new SortedFlags([])));
    app.put(e);
  }

  delete(name: string): void {
    const old = this.all.remove(name);
    if (old !== undefined) this.removeFrom(old.application, name);
  }

  private removeFrom(application: string, name: string): void {
    const app = this.byApplication.get(application);
    if (app === undefined) return;
    app.remove(name);
    if (app.size === 0) this.byApplication.delete(application);
  }

  /**
   * The flags matching `filter` whose names sort after `after` (from the first when null), at most
   * `limit` of them (all when null), with the number matching the filter in total.
   */
  query(filter: FlagFilter, after: string | null, limit: number | null): IndexPage {
    const list = filter.application === null ? this.all : (this.byApplication.get(filter.application) ?? EMPTY);
    const entries = list.entries;
    const start = after === null ? 0 : upperBound(entries, after);
    const max = limit ?? Number.POSITIVE_INFINITY;
    const { type, archived, search } = filter;
    const predicate = filter.predicate ?? null;

    if (type === null && archived === null && search === null && predicate === null) {
      const end = Math.min(entries.length, start + max);
      const flags: Flag[] = new Array(Math.max(0, end - start));
      for (let i = start; i < end; i++) flags[i - start] = entries[i].flag;
      return { flags, total: entries.length, hasMore: end < entries.length };
    }

    const key = filter.predicateKey ?? null;
    if (predicate !== null && key !== null && type === null && archived === null && search === null && list !== EMPTY) {
      let memo = list.memo;
      if (memo === null || memo.key !== key) list.memo = memo = { key, entries: entries.filter((e) => predicate(e.flag)) };
      const kept = memo.entries;
      const from = after === null ? 0 : upperBound(kept, after);
      const end = Math.min(kept.length, from + max);
      const flags: Flag[] = new Array(Math.max(0, end - from));
      for (let i = from; i < end; i++) flags[i - from] = kept[i].flag;
      return { flags, total: kept.length, hasMore: end < kept.length };
    }

    const matches = (e: Entry): boolean =>
      (type === null || e.flag.type === type) &&
      (archived === null || e.flag.isArchived === archived) &&
      (search === null || e.searchText.includes(search)) &&
      (predicate === null || predicate(e.flag));

    const flags: Flag[] = [];
    if (search === null && predicate === null) {
      // The total comes from the counts; scan only as far as the page and one match beyond it.
      for (let i = start; i < entries.length; i++) {
        if (!matches(entries[i])) continue;
        if (flags.length === max) return { flags, total: list.countOf(type, archived), hasMore: true };
        flags.push(entries[i].flag);
      }
      return { flags, total: list.countOf(type, archived), hasMore: false };
    }

    // A search (or a predicate) counts its matches over the whole list, and collects the page on the way.
    let total = 0;
    let hasMore = false;
    for (let i = 0; i < entries.length; i++) {
      const e = entries[i];
      if (!matches(e)) continue;
      total++;
      if (i < start) continue;
      if (flags.length < max) flags.push(e.flag);
      else hasMore = true;
    }
    return { flags, total, hasMore };
  }
}

// ---- one index per snapshot object ---------------------------------------------------------------

const indexes = new WeakMap<OrgSnapshot, FlagIndex>();

function* flagsOf(snap: OrgSnapshot): Iterable<Flag> {
  for (const c of snap.flags.values()) yield c.flag;
}

/** The index of `snap`'s flags: built on first use, then kept current by `flagChanged`. */
export function flagIndexOf(snap: OrgSnapshot): FlagIndex {
  let ix = indexes.get(snap);
  if (ix === undefined) {
    ix = FlagIndex.build(flagsOf(snap));
    indexes.set(snap, ix);
  }
  return ix;
}

// ---- built in slices, for the front thread ------------------------------------------------------

/** Flags a slice of the front's build turns into entries, or sorts: about a millisecond of its time. */
export const INDEX_SLICE = 2048;
/** Entries a slice of the front's build moves while merging sorted runs, or counts. */
const MOVE_SLICE = INDEX_SLICE * 4;
/** Snapshots whose index is being built in slices, with the names changed since the build began. */
const building = new WeakMap<OrgSnapshot, Set<string>>();

/**
 * The index of `snap` if it is built; else null, and its build in slices is started (once). The
 * front thread (features/flags/front-page.ts) asks this way: it must never stop its evaluations
 * for a whole build (about 40 ms at 100,000 flags in name order, four times that out of order), so
 * the build runs a slice at a time between its other work (`setImmediate`), and until it is done
 * the caller answers another way. A whole load reads the flags in name order (flags/store.ts
 * `listFlags`), so usually nothing is sorted; flags added one at a time since come after them,
 * and are sorted in slices too.
 */
export function readyFlagIndex(snap: OrgSnapshot): FlagIndex | null {
  const ix = indexes.get(snap);
  if (ix !== undefined) return ix;
  if (!building.has(snap)) buildInSlices(snap);
  return null;
}

function buildInSlices(snap: OrgSnapshot): void {
  const changed = new Set<string>();
  building.set(snap, changed);
  // The flags as they are now; a change made during the build is in `changed`, applied at its end.
  const steps = slices([...snap.flags.values()]);
  const step = (): void => {
    const r = steps.next();
    if (!r.done) {
      setImmediate(step);
      return;
    }
    const ix = r.value;
    for (const name of changed) {
      const c = snap.flags.get(name);
      if (c === undefined) ix.delete(name);
      else ix.set(c.flag);
    }
    building.delete(snap);
    if (!indexes.has(snap)) indexes.set(snap, ix);
  };
  setImmediate(step);
}

/** The index of `list`, one slice of work per step (each `yield` ends a slice). */
function* slices(list: readonly { flag: Flag }[]): Generator<void, FlagIndex, void> {
  const entries: Entry[] = new Array(list.length);
  let sorted = true;
  for (let i = 0; i < list.length; i++) {
    entries[i] = new Entry(list[i].flag);
    if (i > 0 && !(entries[i - 1].name < entries[i].name)) sorted = false;
    if ((i + 1) % INDEX_SLICE === 0) yield;
  }
  const ordered = sorted ? entries : yield* sortInSlices(entries);
  const b = new IndexBuilder();
  for (let i = 0; i < ordered.length; i++) {
    b.add(ordered[i]);
    if ((i + 1) % MOVE_SLICE === 0) yield;
  }
  return b.index();
}

const byName = (a: Entry, b: Entry): number => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

/** `entries` sorted by name: runs of INDEX_SLICE sorted one per slice, then merged in pairs, MOVE_SLICE moves per slice. */
function* sortInSlices(entries: Entry[]): Generator<void, Entry[], void> {
  const runs: Entry[][] = [];
  for (let i = 0; i < entries.length; i += INDEX_SLICE) {
    runs.push(entries.slice(i, i + INDEX_SLICE).sort(byName));
    yield;
  }
  let budget = MOVE_SLICE;
  while (runs.length > 1) {
    const x = runs.shift()!;
    const y = runs.shift()!;
    const out: Entry[] = new Array(x.length + y.length);
    for (let i = 0, j = 0, k = 0; k < out.length; k++) {
      out[k] = j >= y.length || (i < x.length && x[i].name < y[j].name) ? x[i++] : y[j++];
      if (--budget === 0) {
        budget = MOVE_SLICE;
        yield;
      }
    }
    runs.push(out);
  }
  return runs[0] ?? [];
}

/**
 * The snapshot registry changed the flag `name` of `snap` in place (set or deleted it in
 * `snap.flags`): brings the index up to date with that one flag, if it has been built (or notes it
 * for the build under way).
 */
export function flagChanged(snap: OrgSnapshot, name: string): void {
  building.get(snap)?.add(name);
  const ix = indexes.get(snap);
  if (ix === undefined) return;
  const c = snap.flags.get(name);
  if (c === undefined) ix.delete(name);
  else ix.set(c.flag);
}
