/**
 * One copy of every organization's flag data per node, in shared memory, for the evaluation
 * workers (docs/snapshots.md).
 *
 * The front thread writes each change once (`SharedStoreWriter`, fed by the snapshot registry);
 * every worker reads the same bytes (`SharedStoreReader`) and compiles a flag only when it is
 * asked for, into a bounded per-worker cache. Nothing is copied per worker, a one-flag change
 * writes that flag's record and one index slot, and a worker that (re)starts receives references
 * to the memory, not the data.
 *
 * Layout, per organization and "generation" (a generation is rewritten from scratch: on a full
 * load, when its index is half full, when its data area is full, or to reclaim dead records):
 *
 *   table (SharedArrayBuffer, fixed size)
 *     bytes 0..7    version (BigInt64, Atomics): the snapshot version whose data is all written
 *     bytes 8..11   location of the organization row's record (Int32, Atomics)
 *     bytes 64..    open-addressing hash index, `capacity` (a power of two) slots of two Int32:
 *                   [hash of the flag name, record location]; location 0 = empty slot (ends a
 *                   probe), -1 = deleted flag (probing continues). Linear probing; a slot, once
 *                   given to a name, stays that name's (deleted slots are not reused), so a reader
 *                   racing a writer sees for a name either its old or its new record.
 *   data (growable SharedArrayBuffer, append only)
 *     records at 8-byte aligned offsets; location = offset / 8 (offset 0 is never used):
 *     [Int32 payload bytes][Int32 name bytes][name, UTF-8][JSON of {flag, configs}, UTF-8]
 *     (the organization row: an empty name and the Organization as JSON; a segment: its name
 *     after SEGMENT_PREFIX, which no flag name can start with, and the Segment as JSON).
 *
 * A writer appends the record, then points the slot (or the row field) at it with Atomics.store,
 * then stores the version: a reader that loads version v sees all of v's data. Then it posts a
 * 'version' notification (a few dozen bytes): a worker serves an item that needs version v once it
 * has been told about v, so a slow channel delays an answer ("retry") but never serves older data,
 * and what a worker may answer follows the order in which the front thread applied the changes
 * (the same guarantee the replicated snapshots gave). A record is never
 * changed once written; a changed flag is a new record at a new location, which is also the key of
 * the readers' compiled-flag cache. Dead records (replaced or deleted flags, old rows) are counted;
 * when they outweigh the live ones (and exceed `compactMinBytes`), the organization is rewritten
 * into a fresh generation and the old memory is freed once no thread references it.
 *
 * The rules for what a change does (version ordering, contiguous flag or segment change, gap or
 * 'all' → everything, 'settings' → the row) are apply-rules.ts, the same the registry follows.
 */
import type { Flag, FlagConfig, Organization, Segment } from '../domain/types.js';
import { compileFlag, compileSegment, type CompiledFlag, type CompiledSegment, type OrgSnapshot } from '../engine/index.js';
import { serves, stepFor, type Touches } from './apply-rules.js';

/** Messages from the front thread to the workers (BroadcastChannel): references and versions, never data. */
export type StoreMessage =
  /** Use this generation of the organization from now on (a new one, or a replay after 'hello'). */
  | { type: 'org'; orgId: string; gen: number; version: number; table: SharedArrayBuffer; data: SharedArrayBuffer }
  /** The generation now holds `version` (a flag or settings change): a worker may serve it. */
  | { type: 'version'; orgId: string; gen: number; version: number }
  | { type: 'drop'; orgId: string; gen: number }
  /** Sent by a worker that has just started: the front thread answers with one 'org' per organization. */
  | { type: 'hello' };

const HEADER_BYTES = 64;
/** Segment records share the flags' index under this prefix: flag names start with a letter or digit. */
const SEGMENT_PREFIX = '@';
const ROW_FIELD = 2; // Int32 index of the row location (bytes 8..11)
const EMPTY = 0;
const DELETED = -1;
const MIN_CAPACITY = 16;
/** Data areas reserve address space up to this (virtual, not resident: pages are touched as written). */
const MAX_DATA_BYTES = 2 ** 31 - 8;

/** FNV-1a over UTF-16 code units: the same on every thread, no allocation. */
export function nameHash(name: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 0x01000193);
  // 0 and -1 stay free as slot hashes are compared only after a location is found: any value works.
  return h | 0;
}

/**
 * Growable SharedArrayBuffer (ES2024; V8 in every Node this project supports). A worker's views see
 * the growth through `byteLength`: the data area never needs a new reference to grow.
 */
interface Growable extends SharedArrayBuffer {
  readonly maxByteLength: number;
  grow(newLength: number): void;
}
const growable = (bytes: number, max: number): Growable =>
  new (SharedArrayBuffer as unknown as new (n: number, o: { maxByteLength: number }) => Growable)(bytes, { maxByteLength: max });

const pow2AtLeast = (n: number): number => {
  let c = MIN_CAPACITY;
  while (c < n) c *= 2;
  return c;
};

const align8 = (n: number): number => (n + 7) & ~7;

/** A record's stored form: a flag and its configurations (the organization row is stored alone). */
interface FlagRecord {
  flag: Flag;
  configs: FlagConfig[];
}

const recordOf = (c: CompiledFlag): FlagRecord => ({ flag: c.flag, configs: [...c.configs.values()].map((cc) => cc.config) });

/** Views over one generation's memory, shared by writer and readers. */
class Generation {
  readonly version: BigInt64Array;
  readonly meta: Int32Array;
  readonly slots: Int32Array;
  readonly capacity: number;
  private buf: Buffer;

  constructor(
    readonly gen: number,
    readonly table: SharedArrayBuffer,
    readonly data: SharedArrayBuffer,
  ) {
    this.version = new BigInt64Array(table, 0, 1);
    this.meta = new Int32Array(table, 0, HEADER_BYTES / 4);
    this.capacity = (table.byteLength - HEADER_BYTES) / 8;
    this.slots = new Int32Array(table, HEADER_BYTES, this.capacity * 2);
    this.buf = Buffer.from(data);
  }

  static create(gen: number, capacity: number, dataBytes: number, maxDataBytes: number): Generation {
    const table = new SharedArrayBuffer(HEADER_BYTES + capacity * 8);
    const max = Math.min(MAX_DATA_BYTES, Math.max(maxDataBytes, dataBytes));
    const data = growable(dataBytes, max);
    return new Generation(gen, table, data);
  }

  /** The data area's bytes, re-viewed when another thread has grown it. */
  bytes(end: number): Buffer {
    if (end > this.buf.length) this.buf = Buffer.from(this.data);
    return this.buf;
  }

  loadVersion(): number {
    return Number(Atomics.load(this.version, 0));
  }

  /** The slot index holding `name`, or -1 - (the empty slot that ends its probe). */
  find(name: string, hash: number): number {
    const mask = this.capacity - 1;
    for (let i = hash & mask; ; i = (i + 1) & mask) {
      const loc = Atomics.load(this.slots, 2 * i + 1);
      if (loc === EMPTY) return -1 - i;
      if (this.slots[2 * i] === hash && this.nameIs(loc, i, name)) return i;
    }
  }

  /** Whether the record a slot points at is `name`'s (a deleted slot's name is known to the writer only). */
  private nameIs(loc: number, slot: number, name: string): boolean {
    if (loc === DELETED) return this.deletedNames.get(slot) === name;
    const off = loc * 8;
    const b = this.bytes(off + 8);
    const nameLen = b.readInt32LE(off + 4);
    // Flag names are ASCII in practice: compare in place, without decoding a string per probe.
    if (nameLen === name.length) {
      let i = 0;
      const start = off + 8;
      for (; i < nameLen; i++) {
        const c = name.charCodeAt(i);
        if (c >= 0x80 || b[start + i] !== c) break;
      }
      if (i === nameLen) return true;
      if (name.charCodeAt(i) < 0x80) return false;
    }
    return b.toString('utf8', off + 8, off + 8 + nameLen) === name;
  }

  /**
   * Names of deleted slots, kept by the writer only (a re-created flag takes its old slot back).
   * Readers never need them: a deleted slot answers "not found" whatever its name.
   */
  readonly deletedNames = new Map<number, string>();

  recordSize(loc: number): number {
    const off = loc * 8;
    return align8(8 + this.bytes(off + 8).readInt32LE(off));
  }

  readPayload(loc: number): string {
    const off = loc * 8;
    const b = this.bytes(off + 8);
    const len = b.readInt32LE(off);
    const nameLen = b.readInt32LE(off + 4);
    return this.bytes(off + 8 + len).toString('utf8', off + 8 + nameLen, off + 8 + len);
  }
}

export interface WriterOptions {
  /** Dead bytes below which an organization is never compacted (tests lower it). */
  compactMinBytes?: number;
}

export interface WriterStats {
  /** Record bytes written into shared memory (headers and padding included). */
  bytesWritten: number;
  recordsWritten: number;
  /** Messages posted to the workers, and how many of them were replays for a starting worker. */
  messages: number;
  replays: number;
  /** Generations written from scratch (full loads, index growth, compactions). */
  generations: number;
  compactions: number;
}

interface OrgState {
  g: Generation;
  /** Next free offset of the data area. */
  end: number;
  live: number;
  dead: number;
  used: number;
}

/** The front thread's side: writes each change once. */
export class SharedStoreWriter {
  private readonly orgs = new Map<string, OrgState>();
  private nextGen = 1;
  private readonly compactMinBytes: number;
  readonly stats: WriterStats = { bytesWritten: 0, recordsWritten: 0, messages: 0, replays: 0, generations: 0, compactions: 0 };

  constructor(
    private readonly post: (msg: StoreMessage) => void,
    opts: WriterOptions = {},
  ) {
    this.compactMinBytes = opts.compactMinBytes ?? 4 * 1024 * 1024;
  }

  /** The version stored for an organization (undefined: not stored). */
  version(orgId: string): number | undefined {
    return this.orgs.get(orgId)?.g.loadVersion();
  }

  /** Shared memory held by the current generations (bytes), for diagnostics. */
  sharedBytes(): number {
    let n = 0;
    for (const s of this.orgs.values()) n += s.g.table.byteLength + s.g.data.byteLength;
    return n;
  }

  /**
   * A snapshot registry update (registry.ts SnapshotListener): `snap` is the organization's state
   * after a change that touched `touches`; null when the organization is gone.
   */
  update(orgId: string, snap: OrgSnapshot | null, touches: Touches): void {
    const s = this.orgs.get(orgId);
    if (snap === null) {
      if (s !== undefined) {
        this.orgs.delete(orgId);
        this.send({ type: 'drop', orgId, gen: s.g.gen });
      }
      return;
    }
    const step = stepFor(s?.g.loadVersion(), { orgId, version: snap.org.version, touches });
    switch (step.kind) {
      case 'stale':
        // A full load at the version already stored still replaces it (the registry reloaded it).
        if (touches === 'all' && s !== undefined && s.g.loadVersion() === snap.org.version) this.writeAll(orgId, snap);
        return;
      case 'absent':
      case 'reload':
        this.writeAll(orgId, snap);
        return;
      case 'settings':
      case 'flag':
      case 'segment':
        if (!this.writeStep(s!, step, snap)) {
          // The index or the data area is full: a fresh generation, which also drops dead records.
          this.writeAll(orgId, snap);
          return;
        }
        break;
    }
    Atomics.store(s!.g.version, 0, BigInt(snap.org.version));
    if (s!.dead > s!.live && s!.dead >= this.compactMinBytes) {
      this.stats.compactions++;
      this.writeAll(orgId, snap);
      return;
    }
    this.send({ type: 'version', orgId, gen: s!.g.gen, version: snap.org.version });
  }

  /** Writes what one step changed. False when a fresh generation is needed. */
  private writeStep(s: OrgState, step: { kind: 'settings' } | { kind: 'flag' | 'segment'; name: string }, snap: OrgSnapshot): boolean {
    if (step.kind === 'settings') return this.writeRow(s, snap.org);
    if (step.kind === 'flag') {
      const compiled = snap.flags.get(step.name);
      return compiled === undefined ? this.remove(s, step.name) : this.put(s, step.name, JSON.stringify(recordOf(compiled)));
    }
    const seg = snap.segments?.get(step.name);
    const key = SEGMENT_PREFIX + step.name;
    return seg === undefined ? this.remove(s, key) : this.put(s, key, JSON.stringify(seg.segment));
  }

  /**
   * Answers a starting reader: the references of every organization's current generation, posted
   * to every reader (`to` absent) or to that one reader alone.
   */
  replay(to?: (msg: StoreMessage) => void): void {
    for (const [orgId, s] of this.orgs) {
      this.stats.replays++;
      this.send({ type: 'org', orgId, gen: s.g.gen, version: s.g.loadVersion(), table: s.g.table, data: s.g.data }, to);
    }
  }

  private send(msg: StoreMessage, to: (msg: StoreMessage) => void = this.post): void {
    this.stats.messages++;
    to(msg);
  }

  /**
   * Rewrites the organization into a fresh generation and tells the workers to switch to it. Each
   * record is serialised and written in turn: holding every flag's JSON at once would grow the
   * front thread's heap by the size of the organization (≈ 75 MiB at 100,000 flags) and keep it.
   */
  private writeAll(orgId: string, snap: OrgSnapshot, scale = 1): void {
    const segments = snap.segments instanceof Map ? (snap.segments as Map<string, CompiledSegment>) : new Map<string, CompiledSegment>();
    let segmentBytes = 0;
    for (const [name, c] of segments) segmentBytes += align8(8 + Buffer.byteLength(SEGMENT_PREFIX + name) + Buffer.byteLength(JSON.stringify(c.segment)));
    const n = snap.flags.size + segments.size;
    // The data area's size is estimated from a sample; it grows as needed up to 4× the estimate
    // (or 64 MiB), and a (rare) miss starts over with more room.
    let sampled = 0;
    let sampleBytes = 0;
    for (const [name, c] of snap.flags) {
      if (sampled === 32) break;
      sampleBytes += align8(8 + Buffer.byteLength(name) + Buffer.byteLength(JSON.stringify(recordOf(c))));
      sampled++;
    }
    const rowBytes = align8(8 + Buffer.byteLength(JSON.stringify(snap.org)));
    const estimate = align8(Math.ceil(8 + rowBytes + segmentBytes + (sampled === 0 ? 0 : (sampleBytes / sampled) * snap.flags.size * 1.1 * scale) + 4096));
    const g = Generation.create(this.nextGen++, pow2AtLeast(2 * n + 2), estimate, Math.max(64 * 1024 * 1024, 4 * estimate));
    const s: OrgState = { g, end: 8, live: 0, dead: 0, used: 0 };
    this.writeRow(s, snap.org);
    for (const [name, c] of snap.flags) {
      if (!this.put(s, name, JSON.stringify(recordOf(c)))) {
        // The data area could not grow enough (flags far larger than the sample): again, with more room.
        this.writeAll(orgId, snap, scale * 4);
        return;
      }
    }
    for (const [name, c] of segments) {
      if (!this.put(s, SEGMENT_PREFIX + name, JSON.stringify(c.segment))) {
        this.writeAll(orgId, snap, scale * 4);
        return;
      }
    }
    Atomics.store(g.version, 0, BigInt(snap.org.version));
    this.stats.generations++;
    this.orgs.set(orgId, s);
    this.send({ type: 'org', orgId, gen: g.gen, version: snap.org.version, table: g.table, data: g.data });
  }

  /** Appends the organization row and points the row field at it. False when the data area is full. */
  private writeRow(s: OrgState, org: Organization): boolean {
    const old = Atomics.load(s.g.meta, ROW_FIELD);
    const loc = this.append(s, '', JSON.stringify(org));
    if (loc === null) return false;
    if (old !== EMPTY) {
      const size = s.g.recordSize(old);
      s.dead += size;
      s.live -= size;
    }
    Atomics.store(s.g.meta, ROW_FIELD, loc);
    return true;
  }

  /** Marks the record under `name` (a flag, or a prefixed segment) deleted. */
  private remove(s: OrgState, name: string): boolean {
    const i = s.g.find(name, nameHash(name));
    if (i < 0) return true;
    const old = Atomics.load(s.g.slots, 2 * i + 1);
    if (old === DELETED) return true;
    const size = s.g.recordSize(old);
    s.dead += size;
    s.live -= size;
    s.g.deletedNames.set(i, name);
    Atomics.store(s.g.slots, 2 * i + 1, DELETED);
    return true;
  }

  /** Appends a flag's record and points its slot at it. False when the index or data area is full. */
  private put(s: OrgState, name: string, json: string): boolean {
    const hash = nameHash(name);
    const i = s.g.find(name, hash);
    if (i < 0 && (s.used + 1) * 2 > s.g.capacity) return false;
    const loc = this.append(s, name, json);
    if (loc === null) return false;
    if (i >= 0) {
      const old = Atomics.load(s.g.slots, 2 * i + 1);
      if (old !== DELETED) {
        const size = s.g.recordSize(old);
        s.dead += size;
        s.live -= size;
      }
      s.g.deletedNames.delete(i);
      Atomics.store(s.g.slots, 2 * i + 1, loc);
    } else {
      const slot = -1 - i;
      // The hash first: a reader that sees the location sees its hash.
      Atomics.store(s.g.slots, 2 * slot, hash);
      Atomics.store(s.g.slots, 2 * slot + 1, loc);
      s.used++;
    }
    return true;
  }

  /** Appends one record; its location, or null when the data area cannot grow enough. */
  private append(s: OrgState, name: string, json: string): number | null {
    const nameLen = Buffer.byteLength(name);
    const payload = nameLen + Buffer.byteLength(json);
    const size = align8(8 + payload);
    const off = s.end;
    const data = s.g.data as Growable;
    if (off + size > data.byteLength) {
      if (off + size > data.maxByteLength) return null;
      data.grow(Math.min(data.maxByteLength, Math.max(off + size, data.byteLength * 2)));
    }
    const b = s.g.bytes(off + size);
    b.writeInt32LE(payload, off);
    b.writeInt32LE(nameLen, off + 4);
    b.write(name, off + 8, 'utf8');
    b.write(json, off + 8 + nameLen, 'utf8');
    s.end = off + size;
    s.live += size;
    this.stats.bytesWritten += size;
    this.stats.recordsWritten++;
    return off / 8;
  }
}

/**
 * A bounded least-recently-used cache of compiled flags, keyed by generation and record location
 * (a changed flag is a new record, so an entry never goes stale: it only stops being asked for).
 */
export class FlagCache {
  private readonly map = new Map<number, { c: CompiledFlag; used: number }>();
  /** Counts lookups: an entry's `used` is the tick of its last promotion. */
  private tick = 0;
  hits = 0;
  misses = 0;

  constructor(readonly max: number) {}

  get size(): number {
    return this.map.size;
  }

  get(key: number): CompiledFlag | undefined {
    const e = this.map.get(key);
    this.tick++;
    if (e === undefined) return undefined;
    // Most recently used last (a Map iterates in insertion order). Re-inserting costs more than the
    // lookup itself, so an entry is moved only once it has aged by a quarter of the bound: the
    // order is approximate, but an entry survives at least 3/4 × max lookups after its last use
    // (each lookup inserts or moves at most one entry).
    if (this.tick - e.used > this.max >> 2) {
      e.used = this.tick;
      this.map.delete(key);
      this.map.set(key, e);
    }
    return e.c;
  }

  set(key: number, c: CompiledFlag): void {
    if (this.max <= 0) return;
    this.map.set(key, { c, used: this.tick });
    if (this.map.size > this.max) this.map.delete(this.map.keys().next().value!);
  }
}

/** One organization as a worker sees it: the shared generation, read on demand. */
export class OrgView {
  private rowLoc = EMPTY;
  private rowVersion = -1;
  private parsed: Organization | undefined;
  private row: Organization | undefined;
  /** The latest version the front thread has told this worker about (what it may serve). */
  private notified: number;
  /** What the engine and the GraphQL resolvers read: `org` and `flags.get(name)`, through the cache. */
  readonly snapshot: OrgSnapshot;

  constructor(
    private readonly g: Generation,
    private readonly cache: FlagCache,
    version: number,
  ) {
    this.notified = version;
    const view = this;
    const flags = {
      get: (name: string) => view.flag(name),
      has: (name: string) => view.flag(name) !== undefined,
    };
    const segments = { get: (name: string) => view.segment(name) };
    // The engine reads `snapshot.org`, `snapshot.flags.get` (dependencies included) and
    // `snapshot.segments.get` only; the evaluation-only documents a worker runs resolve nothing else. A Map of every flag is what this
    // module exists to avoid, hence the narrow object behind the OrgSnapshot type.
    this.snapshot = {
      get org() {
        return view.org();
      },
      flags,
      segments,
    } as unknown as OrgSnapshot;
  }

  get gen(): number {
    return this.g.gen;
  }

  /** The version written to shared memory (at least what this worker was told). */
  version(): number {
    return this.g.loadVersion();
  }

  notify(version: number): void {
    if (version > this.notified) this.notified = version;
  }

  /** Whether this view may answer an item that needs `needed` (apply-rules.ts). */
  serves(needed: number): boolean {
    return serves(this.notified, needed);
  }

  /** The organization row, with the stored version (a flag change moves the version, not the row). */
  org(): Organization {
    const loc = Atomics.load(this.g.meta, ROW_FIELD);
    const version = this.version();
    if (loc !== this.rowLoc || this.parsed === undefined) {
      // Parsed once per row record: its kill-switch rules stay the same objects (the engine keys
      // their reasons by them).
      this.parsed = JSON.parse(this.g.readPayload(loc)) as Organization;
      this.rowLoc = loc;
      this.row = undefined;
    }
    if (this.row === undefined || version !== this.rowVersion) {
      this.row = { ...this.parsed, version: Math.max(version, this.parsed.version) };
      this.rowVersion = version;
    }
    return this.row;
  }

  /**
   * A segment, compiled (its in / not_in hash sets built) once per record: the cache holds one
   * entry per segment name, replaced when the segment's record changes.
   */
  segment(name: string): CompiledSegment | undefined {
    const key = SEGMENT_PREFIX + name;
    const i = this.g.find(key, nameHash(key));
    if (i < 0) return undefined;
    const loc = Atomics.load(this.g.slots, 2 * i + 1);
    if (loc === DELETED) {
      this.segments.delete(name);
      return undefined;
    }
    const cached = this.segments.get(name);
    if (cached !== undefined && cached.loc === loc) return cached.c;
    const c = compileSegment(JSON.parse(this.g.readPayload(loc)) as Segment);
    this.segments.set(name, { loc, c });
    return c;
  }

  private readonly segments = new Map<string, { loc: number; c: CompiledSegment }>();

  flag(name: string): CompiledFlag | undefined {
    if (name.startsWith(SEGMENT_PREFIX)) return undefined; // a segment's record, never a flag
    const i = this.g.find(name, nameHash(name));
    if (i < 0) return undefined;
    const loc = Atomics.load(this.g.slots, 2 * i + 1);
    if (loc === DELETED) return undefined;
    // Generations count up from 1 and locations stay below 2^28: the key is exact.
    const key = this.g.gen * 2 ** 28 + loc;
    let c = this.cache.get(key);
    if (c === undefined) {
      this.cache.misses++;
      const r = JSON.parse(this.g.readPayload(loc)) as FlagRecord;
      c = compileFlag(r.flag, r.configs);
      this.cache.set(key, c);
    } else this.cache.hits++;
    return c;
  }
}

/** A worker's side: the organizations' current generations and the compiled-flag cache. */
export class SharedStoreReader {
  private readonly orgs = new Map<string, OrgView>();
  readonly cache: FlagCache;

  constructor(cacheMax: number) {
    this.cache = new FlagCache(cacheMax);
  }

  receive(msg: StoreMessage): void {
    if (msg.type === 'org') {
      const cur = this.orgs.get(msg.orgId);
      // Generations only move forward (one writer, posted in order); a replay repeats the current one.
      if (cur !== undefined && cur.gen >= msg.gen) {
        if (cur.gen === msg.gen) cur.notify(msg.version);
        return;
      }
      this.orgs.set(msg.orgId, new OrgView(new Generation(msg.gen, msg.table, msg.data), this.cache, msg.version));
    } else if (msg.type === 'version') {
      const cur = this.orgs.get(msg.orgId);
      if (cur !== undefined && cur.gen === msg.gen) cur.notify(msg.version);
    } else if (msg.type === 'drop') {
      const cur = this.orgs.get(msg.orgId);
      if (cur !== undefined && cur.gen <= msg.gen) this.orgs.delete(msg.orgId);
    }
  }

  view(orgId: string): OrgView | undefined {
    return this.orgs.get(orgId);
  }
}
