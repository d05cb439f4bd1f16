/**
 * The in-memory replica of each organization's flag data that evaluation reads. PostgreSQL is the
 * source of truth; this registry brings an organization up to date one step at a time, so a
 * snapshot's version only ever grows and never goes back to older data.
 *
 * A node has two replicas and reads the database for them once: the management actor's registry
 * *reads* (it has a `SnapshotSource`), the front thread's *follows* it (`SnapshotRegistry.following`):
 * every update the reader applies (`OrgUpdate`: the data it read, as it read it) crosses to the
 * front, which applies the same update with `accept` and never reads the database for a snapshot
 * itself (docs/cluster.md, "Snapshots and versions").
 *
 * A change (a node's own write, a bus message, a version poll) only says "organization X may have
 * a version above N": it is a hint. At or below the version held it is ignored with no I/O (the
 * snapshot already holds every change up to its version, read from the database); above it, the
 * reader reads in one statement the organization's row, its version, what each version since the
 * one held touched (the change log) and those flags' data (`SnapshotSource.changesSince`), and
 * applies that: the version claimed is the database's, never the message's, so no message can
 * make a node claim a version whose data it does not hold, or skip a real change. Only when the
 * log cannot say what changed (a version that touched everything, or a range the log no longer
 * covers) is the whole organization reloaded. Requests for the same organization coalesce: one
 * read not yet started serves every hint that arrives before it starts. A follower passes hints
 * to its upstream (the actor), whose reader reads and sends back what it applied.
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
 * One step a replica applied, with the data it was read with: what the management actor's replica
 * hands to the front's (mailbox.ts `update`), so that the front applies the same read.
 * - `delta`: every version after `from` up to `delta.org.version`, complete (one per version);
 * - `load`: the organization whole (its row first: the data is at least as new as its version);
 * - `gone`: the organization no longer exists.
 */
export type OrgUpdate =
  | { kind: 'delta'; orgId: string; from: number; delta: OrgDelta }
  | { kind: 'load'; orgId: string; org: Organization; flags: Flag[]; configs: Map<string, FlagConfig[]>; segments: Segment[] }
  | { kind: 'gone'; orgId: string };

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

/** What a reader's statement read: what changed since a version (one statement), or part of a whole organization. */
export type SnapshotReadKind = 'changes' | 'organization';

/**
 * A follower's reader (the front's: the management actor, handle.ts). Both calls resolve after
 * the updates they caused have been handed to `accept`.
 */
export interface SnapshotUpstream {
  /** Read the organization whole (one read, which the upstream applies too). */
  load(orgId: string): Promise<void>;
  /** A hint above the version held: the upstream brings its replica up to it. */
  hint(change: Change): Promise<void>;
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
  private readonly updateListeners: ((update: OrgUpdate) => void)[] = [];
  private readonly upstream: SnapshotUpstream | null;

  /** A reader: it reads the database through `source`. */
  constructor(source: SnapshotSource);
  constructor(source: SnapshotSource | null, upstream: SnapshotUpstream);
  constructor(
    private readonly source: SnapshotSource | null,
    upstream?: SnapshotUpstream,
  ) {
    this.upstream = upstream ?? null;
  }

  /** A follower: it reads nothing itself, and applies what `upstream`'s reader read (`accept`). */
  static following(upstream: SnapshotUpstream): SnapshotRegistry {
    return new SnapshotRegistry(null, upstream);
  }

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
      const load = this.upstream !== null ? this.upstream.load(orgId).then(() => this.snapshots.get(orgId) ?? null) : this.loadOrg(orgId);
      pending = load.finally(() => this.loading.delete(orgId));
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

  /** Called with every update this registry applies, in order, with the data it applied. */
  onUpdate(listener: (update: OrgUpdate) => void): void {
    this.updateListeners.push(listener);
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
    // A follower's upstream coalesces hints with its own reads.
    if (this.upstream !== null) return this.upstream.hint(change);
    const waiting = this.waiting.get(orgId);
    if (waiting !== undefined) return waiting; // a read that has not started yet covers this hint too
    return this.enqueue(orgId, () => {
      this.waiting.delete(orgId);
      return this.catchUp(orgId);
    }, true);
  }

  /**
   * Reads the organization whole (after any read already queued for it) and applies it: the
   * front's first use of an organization this reader already holds (mailbox.ts `load`), so the
   * front gets all of it from one read that both replicas apply.
   */
  reload(orgId: string): Promise<void> {
    if (this.upstream !== null) return this.upstream.load(orgId);
    if (!this.snapshots.has(orgId)) return Promise.resolve(this.get(orgId)).then(() => {});
    return this.enqueue(orgId, () => this.loadOrg(orgId).then(() => {}), false);
  }

  /** Runs `step` after the steps queued for `orgId`; `waits`: it is the catch-up hints may join. */
  private enqueue(orgId: string, step: () => Promise<void>, waits: boolean): Promise<void> {
    const prev = this.queues.get(orgId) ?? Promise.resolve();
    const next = prev.then(step);
    if (waits) this.waiting.set(orgId, next);
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
    const delta = await this.source!.changesSince(orgId, held, MAX_DELTA);
    if (delta === null) {
      this.accept({ kind: 'gone', orgId });
      return;
    }
    const target = delta.org.version;
    if (target <= held) return; // nothing newer in the database (a late, replayed or forged hint)
    if (!complete(held, delta)) {
      await this.loadOrg(orgId);
      return;
    }
    this.accept({ kind: 'delta', orgId, from: held, delta });
  }

  private async loadOrg(orgId: string): Promise<OrgSnapshot | null> {
    // Read the version first: data read afterwards is at least that new, so the snapshot never
    // claims a version its data does not include.
    const source = this.source!;
    const org = await source.org(orgId);
    if (org === null) {
      this.accept({ kind: 'gone', orgId });
      return null;
    }
    const [flags, configs, segments] = await Promise.all([source.flags(orgId), source.orgConfigs(orgId), source.segments?.(orgId) ?? []]);
    this.accept({ kind: 'load', orgId, org, flags, configs, segments });
    return this.snapshots.get(orgId) ?? null;
  }

  /**
   * Applies an update read from the database (by this registry, or by the reader a follower
   * follows), if it is not older than what is held; listeners hear it. Synchronous, so updates
   * apply in the order they arrive. Update listeners (the actor's post to the front) hear it
   * before it is applied here, so the front compiles it while this replica does.
   */
  accept(update: OrgUpdate): void {
    const { orgId } = update;
    const current = this.snapshots.get(orgId);
    if (update.kind === 'gone') {
      if (current === undefined) return;
      this.tell(update);
      this.snapshots.delete(orgId);
      this.emit(orgId, null, 'all');
    } else if (update.kind === 'load') {
      if (current !== undefined && !replaces(current.org.version, update.org.version)) return;
      // A follower holds that version already, with its data: a restarted actor's warm load, say.
      // Rebuilding it (100,000 flags: seconds of the front's time) would change nothing.
      if (current !== undefined && this.upstream !== null && current.org.version === update.org.version) return;
      this.tell(update);
      const snap = buildSnapshot(update.org, update.flags, update.configs, update.segments);
      this.snapshots.set(orgId, snap);
      this.emit(orgId, snap, 'all');
    } else {
      // Not held: its first use loads it whole.
      if (current === undefined) return;
      const held = current.org.version;
      const { delta, from } = update;
      if (delta.org.version <= held) return; // already held
      if (from > held || !complete(from, delta)) {
        // A gap (a follower that missed an update): read the organization whole instead.
        void this.reload(orgId).catch(() => {});
        return;
      }
      this.tell(update);
      applyDelta(current, held, delta, (touches) => this.emit(orgId, current, touches));
    }
  }

  private tell(update: OrgUpdate): void {
    for (const l of this.updateListeners) l(update);
  }

  private emit(orgId: string, snap: OrgSnapshot | null, touches: Touches): void {
    for (const l of this.listeners) l(orgId, snap, touches);
  }
}

/** Whether a delta read after `from` names every version up to its own, and only one-item ones. */
function complete(from: number, delta: OrgDelta): boolean {
  const { changes } = delta;
  return changes.length === delta.org.version - from && !changes.some((c) => c.touches === 'all');
}

/**
 * Applies a complete delta read after some version at or below `held` to a snapshot at `held`:
 * every flag and segment it names takes its data at the delta's version (newer data, never
 * older), then the row; `announce` hears each version above `held` in turn.
 */
function applyDelta(current: OrgSnapshot, held: number, delta: OrgDelta, announce: (touches: Touches) => void): void {
  const done = new Set<string>();
  const doneSegments = new Set<string>();
  for (const c of delta.changes) {
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
      // A written flag gets the new object read (never a change in place): the flag list keeps
      // each flag's JSON by its object (features/flags/list-body.ts).
      if (got === undefined) current.flags.delete(t.flag);
      else putFlag(current, compileFlag(got.flag, got.configs));
      flagChanged(current, t.flag); // the flag list's index, in the same tick (flag-index.ts)
    }
  }
  // Every flag the versions up to the delta's touched now holds its data at that version, and so
  // does the row. Listeners hear each version not yet held in turn.
  for (const c of delta.changes) {
    if (c.version <= held) continue;
    current.org = { ...delta.org, version: c.version };
    announce(c.touches);
  }
}

/** The snapshot's segments as a Map the registry may change in place (buildSnapshot makes one). */
function segmentMap(snap: OrgSnapshot): Map<string, CompiledSegment> {
  if (!(snap.segments instanceof Map)) snap.segments = new Map();
  return snap.segments as Map<string, CompiledSegment>;
}
