/**
 * The in-memory replica of each organization's flag data that evaluation reads. PostgreSQL is the
 * source of truth; this registry brings an organization up to date one step at a time, so a
 * snapshot's version only ever grows and never goes back to older data.
 *
 * A change (a node's own write, a bus message, a version poll) only says "organization X may have
 * a version above N": it is a hint. At or below the version held it is ignored with no I/O (the
 * snapshot already holds every change up to its version, read from the database); above it, the
 * registry reads in one statement the organization's row, its version, what each version since the
 * one held touched (the change log) and those flags' data (`SnapshotSource.changesSince`), and
 * applies that: the version claimed is the database's, never the message's, so no message can
 * make a node claim a version whose data it does not hold, or skip a real change. Only when the
 * log cannot say what changed (a version that touched everything, or a range the log no longer
 * covers) is the whole organization reloaded. Requests for the same organization coalesce: one
 * read not yet started serves every hint that arrives before it starts.
 *
 * Listeners hear one update per version, in order (what it touched), so the evaluation workers'
 * store (shared-store.ts) can write one flag, one segment or the organization's row for each; the
 * rules for that are apply-rules.ts.
 */
import type { Flag, FlagConfig, Organization, Segment } from '../domain/types.js';
import { buildSnapshot, compileFlag, compileSegment, putFlag, type CompiledSegment, type OrgSnapshot } from '../engine/index.js';
import { replaces, type Change, type Touches } from './apply-rules.js';
import { flagChanged } from './flag-index.js';

export type { Change, Touches } from './apply-rules.js';

/** What changed in an organization since a version, read together (features/changes-since.ts). */
export interface OrgDelta {
  /** The organization's row; its `version` is the version every other field is at. */
  org: Organization;
  /** What each version after the one held touched, in order (incomplete: reload). */
  changes: { version: number; touches: Touches }[];
  /** The flags `changes` name, with their configurations; a name missing here was deleted. */
  flags: Map<string, { flag: Flag; configs: FlagConfig[] }>;
  /** The segments `changes` name; a name missing here was deleted (absent: no segment changed). */
  segments?: Map<string, Segment>;
}

/**
 * Where the registry reads the source of truth from (features/snapshot-source.ts builds it from
 * the feature stores): the registry knows no SQL and no feature module.
 */
export interface SnapshotSource {
  org(orgId: string): Promise<Organization | null>;
  flags(orgId: string): Promise<Flag[]>;
  orgConfigs(orgId: string): Promise<Map<string, FlagConfig[]>>;
  /** The organization's segments (absent: a source without segments). */
  segments?(orgId: string): Promise<Segment[]>;
  /** The organization's row, change log after `held` and the flags it names, read together; null when it is gone. */
  changesSince(orgId: string, held: number, maxChanges: number): Promise<OrgDelta | null>;
}

/** Versions a node catches up by reading what changed; further behind, it reloads the organization. */
export const MAX_DELTA = 1000;

/**
 * Called after each update, in order: `touches` says what changed in `snapshot` ('all' after a
 * full load); `snapshot` is null when the organization is gone.
 */
export type SnapshotListener = (orgId: string, snapshot: OrgSnapshot | null, touches: Touches) => void;

export class SnapshotRegistry {
  private readonly snapshots = new Map<string, OrgSnapshot>();
  private readonly loading = new Map<string, Promise<OrgSnapshot | null>>();
  private readonly queues = new Map<string, Promise<void>>();
  /** Per organization, the catch-up queued and not yet started. */
  private readonly waiting = new Map<string, Promise<void>>();
  private readonly listeners: SnapshotListener[] = [];

  constructor(private readonly source: SnapshotSource) {}

  /** The snapshot if loaded, without I/O (the evaluation hot path). */
  peek(orgId: string): OrgSnapshot | undefined {
    return this.snapshots.get(orgId);
  }

  /** The snapshot, loading it on first use; null when the organization does not exist. */
  get(orgId: string): OrgSnapshot | null | Promise<OrgSnapshot | null> {
    const snap = this.snapshots.get(orgId);
    if (snap !== undefined) return snap;
    let pending = this.loading.get(orgId);
    if (pending === undefined) {
      pending = this.loadOrg(orgId).finally(() => this.loading.delete(orgId));
      this.loading.set(orgId, pending);
    }
    return pending;
  }

  loadedOrgIds(): string[] {
    return [...this.snapshots.keys()];
  }

  onChange(listener: SnapshotListener): void {
    this.listeners.push(listener);
  }

  /**
   * A hint that `change.orgId` may be past `change.version - 1`: resolves once this node's snapshot
   * holds what the database held when it was read (at least `change.version` for a real change,
   * since changes are announced after their commit), so the writing node evaluates with its write
   * before it answers.
   */
  apply(change: Change): Promise<void> {
    const { orgId } = change;
    const current = this.snapshots.get(orgId);
    if (current === undefined) {
      // Being loaded for the first time: bring it up to date once loaded. Not loaded: nothing to
      // update; its first use loads the latest state.
      const loading = this.loading.get(orgId);
      return loading === undefined ? Promise.resolve() : loading.then(() => this.apply(change), () => {});
    }
    // Already held: the snapshot's version was read together with its data.
    if (change.version <= current.org.version) return Promise.resolve();
    const waiting = this.waiting.get(orgId);
    if (waiting !== undefined) return waiting; // a read that has not started yet covers this hint too
    const prev = this.queues.get(orgId) ?? Promise.resolve();
    const next = prev.then(() => {
      this.waiting.delete(orgId);
      return this.catchUp(orgId);
    });
    this.waiting.set(orgId, next);
    const tail = next.catch(() => {});
    this.queues.set(orgId, tail);
    void tail.then(() => {
      if (this.queues.get(orgId) === tail) this.queues.delete(orgId);
    });
    return next;
  }

  /** Reads what changed since the version held and applies it (or reloads when the log cannot tell). */
  private async catchUp(orgId: string): Promise<void> {
    const current = this.snapshots.get(orgId);
    if (current === undefined) return;
    const held = current.org.version;
    const delta = await this.source.changesSince(orgId, held, MAX_DELTA);
    if (this.snapshots.get(orgId) !== current) return; // replaced meanwhile: that state is newer
    if (delta === null) {
      this.snapshots.delete(orgId);
      this.emit(orgId, null, 'all');
      return;
    }
    const target = delta.org.version;
    if (target <= held) return; // nothing newer in the database (a late, replayed or forged hint)
    const { changes } = delta;
    if (changes.length !== target - held || changes.some((c) => c.touches === 'all')) {
      await this.loadOrg(orgId, true);
      return;
    }
    const done = new Set<string>();
    const doneSegments = new Set<string>();
    for (const c of changes) {
      const t = c.touches;
      if (typeof t === 'object' && 'segment' in t) {
        if (doneSegments.has(t.segment)) continue;
        doneSegments.add(t.segment);
        // Compiled once here (its in / not_in hash sets), never per request.
        const got = delta.segments?.get(t.segment);
        if (got === undefined) segmentMap(current).delete(t.segment);
        else segmentMap(current).set(t.segment, compileSegment(got));
      } else if (typeof t === 'object' && !done.has(t.flag)) {
        done.add(t.flag);
        const got = delta.flags.get(t.flag);
        // putFlag keeps the snapshot's list maxima (GraphQL result estimate) an upper bound; a
        // deletion may leave them above the truth, which an upper bound allows.
        if (got === undefined) current.flags.delete(t.flag);
        else putFlag(current, compileFlag(got.flag, got.configs));
        flagChanged(current, t.flag); // the flag list's index, in the same tick (flag-index.ts)
      }
    }
    // Every flag the versions up to `target` touched now holds its data at `target` (newer data,
    // never older), and so does the row. Listeners hear each version in turn.
    for (const c of changes) {
      current.org = { ...delta.org, version: c.version };
      this.emit(orgId, current, c.touches);
    }
  }

  private async loadOrg(orgId: string, notifyDrop = false): Promise<OrgSnapshot | null> {
    // Read the version first: data read afterwards is at least that new, so the snapshot never
    // claims a version its data does not include.
    const org = await this.source.org(orgId);
    if (org === null) {
      this.snapshots.delete(orgId);
      if (notifyDrop) this.emit(orgId, null, 'all');
      return null;
    }
    const [flags, configs, segments] = await Promise.all([
      this.source.flags(orgId),
      this.source.orgConfigs(orgId),
      this.source.segments?.(orgId) ?? [],
    ]);
    const existing = this.snapshots.get(orgId);
    if (existing !== undefined && !replaces(existing.org.version, org.version)) return existing;
    const snap = buildSnapshot(org, flags, configs, segments);
    this.snapshots.set(orgId, snap);
    this.emit(orgId, snap, 'all');
    return snap;
  }

  private emit(orgId: string, snap: OrgSnapshot | null, touches: Touches): void {
    for (const l of this.listeners) l(orgId, snap, touches);
  }
}

/** The snapshot's segments as a Map the registry may change in place (buildSnapshot makes one). */
function segmentMap(snap: OrgSnapshot): Map<string, CompiledSegment> {
  if (!(snap.segments instanceof Map)) snap.segments = new Map();
  return snap.segments as Map<string, CompiledSegment>;
}
