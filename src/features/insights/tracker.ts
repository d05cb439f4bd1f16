/**
 * Flag statuses in memory (docs/insights.md, "Lifecycle"): the management actor of every node
 * keeps each flag's status, so that `GET /api/flags?status=` and GraphQL `flagConnection(status:)`
 * page at 100,000 flags by a map lookup per flag, never an aggregate over the count tables per
 * request.
 *
 * What it holds, per organization: the settings, each flag's usage folded over stages and
 * applications (first and last evaluation, last evaluation per variant, `status.ts` `Usage`), each
 * flag's computed status with the time it stays valid (`validUntil`), the flags counted by status
 * (kept with the statuses, never counted by a walk), the status last recorded in `flag_lifecycle`,
 * and the flags a round must look at (`dirty`, or `all`).
 *
 * A round (every VEXIL_INSIGHTS_STATUS_MS, 1 s by default, and soon after the counting half
 * flushes on this node) reads, on PostgreSQL always, on the embedded database only when something
 * on this node may have changed what it reads (a flush, a settings or flag write, SQL from outside;
 * storage/poll-gate.ts: no other process writes there) or the full read is due:
 * - every organization's settings (one short row each);
 * - the usage rows evaluated since the previous read's start less a margin (`USAGE_MARGIN_MS`,
 *   which covers a flush that committed later than the evaluations it stamps; an index range scan,
 *   sql/011), merged in (first evaluations only move earlier, last ones later); once in
 *   `FULL_READ_ROUNDS` rounds all rows, read afresh, so that a late report (a provider that was
 *   offline sends evaluations stamped in the past) or a row removed is caught up too;
 * then looks at the flags that may have changed, and only those: the flags whose usage moved (in
 * a full read: whose usage or recorded status differs from what was held), the flags the snapshot
 * registry says a write touched, and those a previous round had no budget left to record. It
 * walks every flag of an organization only when any of them may have changed: its first round, a
 * settings change, its snapshot loaded or replaced whole, or a status's `validUntil` passed
 * (`roundExpiry`). Each flag looked at gets its status (computed again only when its flag,
 * settings or usage changed or its validity ran out), and is recorded when that differs from the
 * recorded one (`settle`). An idle round therefore looks at no flag: its cost is
 * two short reads (none on the embedded database) and one line per organization
 * (`stats.examined` counts the flags looked at).
 *
 * Recording a status is decided in the database, not from memory: in one transaction, the flag's
 * `flag_lifecycle` row is locked, its usage read again and its status computed from that; only if
 * it differs from the recorded one is it written, and a turn to `stale` or `unused` is the audit
 * event `flag.stale` in the same transaction. A restart, or every node of a cluster doing the
 * same, therefore records each turn once.
 */
import type { AuditActor, Flag, FlagStatus, StatusReason } from '../../domain/types.js';
import { FLAG_STATUSES } from '../../domain/types.js';
import type { OrgSnapshot } from '../../engine/index.js';
import type { ActorRuntime } from '../../runtime.js';
import { pollGate, type PollGate } from '../../storage/poll-gate.js';
import type { Touches } from '../../snapshots/registry.js';
import { insertEvent } from '../audit/store.js';
import { outboxTransaction } from '../webhooks/outbox.js';
import { DEFAULT_SETTINGS, normaliseSettings, settingsMs, type InsightsSettings, type SettingsMs } from './settings.js';
import { flagStatus, NO_USAGE, usageOf, type FlagStatusResult, type Usage } from './status.js';
import * as store from './store.js';

/** Recorded changes are made by the service itself. */
export const SYSTEM: AuditActor = { system: true };

/** How far before the previous read's start a round reads usage again. */
export const USAGE_MARGIN_MS = 30_000;
/** A round reads every usage row afresh once in this many rounds (60 s at the default 1 s). */
export const FULL_READ_ROUNDS = 60;
/** Statuses recorded per round at most (the rest wait for the next round). */
const SETTLE_PER_ROUND = 2000;

interface MutableUsage {
  firstAt: number | null;
  lastAt: number | null;
  variantsLastAt: Map<string, number>;
}

interface StatusEntry extends FlagStatusResult {
  /** The flag object it was computed for (the snapshot replaces it when the flag changes). */
  flag: Flag;
  /** The settings it was computed with. */
  settings: SettingsMs;
}

const noCounts = (): Record<FlagStatus, number> => Object.fromEntries(FLAG_STATUSES.map((s) => [s, 0])) as Record<FlagStatus, number>;

class OrgLifecycle {
  settings: InsightsSettings = DEFAULT_SETTINGS;
  ms: SettingsMs = settingsMs(DEFAULT_SETTINGS);
  usage = new Map<string, MutableUsage>();
  /** Each flag's status; only `put` and `forget` change it, so that `counts` stays its tally. */
  readonly statuses = new Map<string, StatusEntry>();
  /** The entries of `statuses` by status (`vexil_flags{status}`). */
  counts = noCounts();
  recorded = new Map<string, FlagStatus>();
  /**
   * Bumped whenever a status may have changed: a usage or settings change, a status computed
   * anew, a status's validity running out (`nextExpiry`). The list's filter key carries it.
   */
  gen = 0;
  /** The soonest `validUntil` of the statuses held (a time bound of the filter key). */
  nextExpiry = Number.POSITIVE_INFINITY;
  /**
   * The soonest `validUntil` of the statuses held, for the rounds: a round at or past it walks
   * every flag. Apart from `nextExpiry`, which a request's `filterKey` moves on.
   */
  roundExpiry = Number.POSITIVE_INFINITY;
  /** Flags the next round looks at (usage moved, a write touched them, not recorded yet). */
  dirty = new Set<string>();
  /** The next round walks every flag. */
  all = true;
  /** The snapshot the last round walked (null: none yet, or the organization is gone). */
  snap: OrgSnapshot | null = null;

  put(name: string, e: StatusEntry): void {
    const was = this.statuses.get(name);
    if (was !== undefined) this.counts[was.status]--;
    this.counts[e.status]++;
    this.statuses.set(name, e);
  }

  forget(name: string): void {
    const was = this.statuses.get(name);
    if (was === undefined) return;
    this.counts[was.status]--;
    this.statuses.delete(name);
  }

  /** Every status forgotten: the next round computes them all again. */
  clear(): void {
    this.statuses.clear();
    this.counts = noCounts();
    this.all = true;
  }
}

const emptyUsage = (): MutableUsage => ({ firstAt: null, lastAt: null, variantsLastAt: new Map() });

function merge(u: MutableUsage, r: store.UsageRow): boolean {
  let changed = false;
  if (u.firstAt === null || r.firstAt < u.firstAt) (u.firstAt = r.firstAt), (changed = true);
  if (u.lastAt === null || r.lastAt > u.lastAt) (u.lastAt = r.lastAt), (changed = true);
  const v = u.variantsLastAt.get(r.variant);
  if (v === undefined || r.lastAt > v) u.variantsLastAt.set(r.variant, r.lastAt), (changed = true);
  return changed;
}

function sameUsage(a: MutableUsage | undefined, b: MutableUsage): boolean {
  if (a === undefined || a.firstAt !== b.firstAt || a.lastAt !== b.lastAt || a.variantsLastAt.size !== b.variantsLastAt.size) return false;
  for (const [variant, at] of b.variantsLastAt) if (a.variantsLastAt.get(variant) !== at) return false;
  return true;
}

export interface StatusCounts {
  orgName: string;
  counts: Record<FlagStatus, number>;
}

export class LifecycleTracker {
  private readonly orgs = new Map<string, OrgLifecycle>();
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = false;
  private lastReadStart: number | null = null;
  private lastFullRead = 0;
  private readonly intervalMs: number;

  private lastCounts = '';
  private listening = false;
  /**
   * Whether a round reads settings and usage (storage/poll-gate.ts): on the embedded database only
   * after a flush, a settings write or a flag write on this node (or SQL from outside); the rounds
   * between settle statuses that turn with time from what the tracker holds. Made on first use
   * (`reads`): a tracker asked only for statuses needs no database.
   */
  private gate: PollGate | null = null;

  /**
   * The last round's work: `examined`, the flags it looked at (0 when nothing changed; every flag
   * of an organization when it walked it whole). Tests and `docs/insights.md` read it.
   */
  readonly stats = { examined: 0 };

  constructor(
    private readonly rt: ActorRuntime,
    /** Told the counts after each round that changed them (the front's `vexil_flags` gauges). */
    private readonly onCounts: (counts: StatusCounts[]) => void = () => {},
    intervalMs?: number,
  ) {
    this.intervalMs = intervalMs ?? rt.config.insightsStatusMs ?? 1000;
  }

  private get reads(): PollGate {
    return (this.gate ??= pollGate(this.rt.db));
  }

  /** The first round (awaited: statuses are known before the first request), then one per interval. */
  async start(): Promise<void> {
    if (!this.listening) {
      this.listening = true;
      this.rt.snapshots.onChange((orgId, snap, touches) => this.snapshotChanged(orgId, snap, touches));
    }
    await this.round();
    this.schedule();
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.round().finally(() => this.schedule()), this.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== null) clearTimeout(this.timer);
  }

  /** Counts were flushed on this node: a round soon, not at the next interval. */
  usageFlushed(): void {
    this.reads.touch();
    if (this.stopped) return;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.round().finally(() => this.schedule()), 10);
    this.timer.unref();
  }

  /** One round; a round asked for while one runs runs after it. */
  round(): Promise<void> {
    if (this.running !== null) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      try {
        do {
          this.again = false;
          await this.once();
        } while (this.again && !this.stopped);
      } catch (err) {
        this.rt.log.warn('flag status round failed', { err: err as Error });
      } finally {
        this.running = null;
      }
    })();
    return this.running;
  }

  private org(orgId: string): OrgLifecycle {
    let o = this.orgs.get(orgId);
    if (o === undefined) this.orgs.set(orgId, (o = new OrgLifecycle()));
    return o;
  }

  private async once(): Promise<void> {
    // The full read comes at its time whatever the gate says: a late report flushed here stamps
    // evaluations before the window an ordinary read covers.
    const full = this.lastReadStart === null || this.rt.now() - this.lastFullRead >= FULL_READ_ROUNDS * this.intervalMs;
    if (this.reads.shouldRead() || full) await this.read(full);
    await this.settleAll();
    const counts = this.counts();
    const text = JSON.stringify(counts);
    if (text !== this.lastCounts) {
      this.lastCounts = text;
      this.onCounts(counts);
    }
  }

  /** A round's reads: every organization's settings, and the usage written since the last read (`full`: all of it). */
  private async read(full: boolean): Promise<void> {
    const db = this.rt.db;
    const start = this.rt.now();
    // Settings: every organization's (a write on another node reaches this one).
    const stored = await store.readAllSettings(db);
    for (const orgId of new Set([...this.orgs.keys(), ...stored.keys()])) this.applySettings(orgId, normaliseSettings(stored.get(orgId) ?? null));
    // Usage.
    const rows = await store.readUsage(db, full ? null : this.lastReadStart! - USAGE_MARGIN_MS);
    if (full) {
      this.replaceAll(rows, await store.readRecorded(db));
      this.lastFullRead = start;
    } else this.noteUsage(rows);
    this.lastReadStart = start;
  }

  /** Merges usage rows into what this node has read (a round's reads). */
  noteUsage(rows: Iterable<store.UsageRow>): void {
    for (const r of rows) {
      const o = this.org(r.orgId);
      let u = o.usage.get(r.flag);
      if (u === undefined) o.usage.set(r.flag, (u = emptyUsage()));
      if (merge(u, r)) this.usageChanged(o, r.flag);
    }
  }

  /**
   * A full read: every usage row and recorded status, read afresh, replace what this node holds.
   * Only the flags whose usage or recorded status differ from what it held are looked at (a late
   * report, a row removed, a turn recorded by another node), not every flag.
   */
  private replaceAll(rows: Iterable<store.UsageRow>, recorded: Map<string, Map<string, FlagStatus>>): void {
    const fresh = new Map<string, Map<string, MutableUsage>>();
    for (const r of rows) {
      let m = fresh.get(r.orgId);
      if (m === undefined) fresh.set(r.orgId, (m = new Map()));
      let u = m.get(r.flag);
      if (u === undefined) m.set(r.flag, (u = emptyUsage()));
      merge(u, r);
    }
    for (const orgId of new Set([...this.orgs.keys(), ...fresh.keys(), ...recorded.keys()])) {
      const o = this.org(orgId);
      const usage = fresh.get(orgId) ?? new Map<string, MutableUsage>();
      for (const [name, u] of usage) if (!sameUsage(o.usage.get(name), u)) this.usageChanged(o, name);
      for (const name of o.usage.keys()) if (!usage.has(name)) this.usageChanged(o, name);
      o.usage = usage;
      const rec = recorded.get(orgId) ?? new Map<string, FlagStatus>();
      for (const [name, s] of rec) if (o.recorded.get(name) !== s) o.dirty.add(name);
      for (const name of o.recorded.keys()) if (!rec.has(name)) o.dirty.add(name);
      o.recorded = rec;
    }
  }

  /** The flag's usage changed: its status is computed again, by the next round at the latest. */
  private usageChanged(o: OrgLifecycle, name: string): void {
    o.forget(name);
    o.dirty.add(name);
    o.gen++;
  }

  /** Settings read from the database or written on this node. */
  applySettings(orgId: string, s: InsightsSettings): void {
    const o = this.org(orgId);
    if (JSON.stringify(s) === JSON.stringify(o.settings)) return;
    o.settings = s;
    o.ms = settingsMs(s);
    o.clear();
    o.gen++;
  }

  /**
   * The snapshot registry applied an update (registry.ts `SnapshotListener`): the flag a write
   * touched is looked at next round; a whole load, or the organization gone, walks every flag.
   * Segments and the organization's row do not change a status.
   */
  private snapshotChanged(orgId: string, snap: OrgSnapshot | null, touches: Touches): void {
    // A flag written or deleted may have had its usage rows changed with it: the next round reads.
    this.reads.touch();
    const o = this.org(orgId);
    if (snap === null) {
      o.clear();
      o.snap = null;
    } else if (touches === 'all') o.all = true;
    else if (typeof touches === 'object' && 'flag' in touches) o.dirty.add(touches.flag);
  }

  /**
   * Settings written (committed) on this node: the next round reads them. Not applied from here:
   * a round under way may have read the settings before the write, and applying both in turn
   * could flip the statuses back and forth (and record turns twice).
   */
  settingsChanged(): void {
    this.reads.touch();
    void this.round();
  }

  /**
   * The flag's status now, from what this node has read: computed again only when the flag, the
   * settings or its usage changed, or its `validUntil` passed (a map lookup otherwise).
   */
  statusOf(orgId: string, flag: Flag, now = this.rt.now()): StatusEntry {
    const o = this.org(orgId);
    const e = o.statuses.get(flag.name);
    if (e !== undefined && e.flag === flag && e.settings === o.ms && e.validUntil > now) return e;
    const u = o.usage.get(flag.name);
    const r = flagStatus({
      createdAt: Date.parse(flag.createdAt),
      lifetimeMs: o.ms.lifetimes[flag.purpose ?? 'release'],
      unusedAfterMs: o.ms.unusedAfter,
      usage: u === undefined ? NO_USAGE : (u as Usage),
      now,
    });
    // A literal in a fixed order, not `{ ...r, flag, settings }`: V8 gave each spread copy a hidden
    // class of its own (100,000 maps, about 11 MB, at 100,000 flags: docs/insights.md).
    const entry: StatusEntry = { status: r.status, reasons: r.reasons, validUntil: r.validUntil, flag, settings: o.ms };
    if (e === undefined || e.status !== entry.status) o.gen++;
    if (entry.validUntil < o.nextExpiry) o.nextExpiry = entry.validUntil;
    if (entry.validUntil < o.roundExpiry) o.roundExpiry = entry.validUntil;
    o.put(flag.name, entry);
    return entry;
  }

  /** A predicate for the flag list's `status` filter (one lookup per flag it is asked about). */
  statusFilter(orgId: string, status: FlagStatus, now = this.rt.now()): (flag: Flag) => boolean {
    const o = this.org(orgId);
    const statuses = o.statuses;
    return (flag) => {
      // The common case inline: one map lookup.
      const e = statuses.get(flag.name);
      if (e !== undefined && e.flag === flag && e.settings === o.ms && e.validUntil > now) return e.status === status;
      return this.statusOf(orgId, flag, now).status === status;
    };
  }

  /**
   * The key of `statusFilter(orgId, status)`'s answers now (flag-index.ts `predicateKey`): it
   * changes whenever a status may have, so that pages after the first come from the kept matches.
   */
  filterKey(orgId: string, status: FlagStatus, now = this.rt.now()): string {
    const o = this.org(orgId);
    if (now >= o.nextExpiry) {
      // A status ran out of validity: every kept answer goes; the statuses that expired are
      // computed again as the next scan asks for them (and lower `nextExpiry` again).
      o.gen++;
      let next = Number.POSITIVE_INFINITY;
      for (const e of o.statuses.values()) if (e.validUntil > now && e.validUntil < next) next = e.validUntil;
      o.nextExpiry = next;
    }
    return `${status}\n${o.gen}`;
  }

  /**
   * Flags by status in each loaded organization (`vexil_flags{status}`), as its last walk left
   * them: kept with the statuses (`OrgLifecycle.put`, `forget`), never counted by a walk.
   */
  counts(): StatusCounts[] {
    const out: StatusCounts[] = [];
    for (const orgId of this.rt.snapshots.loadedOrgIds()) {
      const snap = this.rt.snapshots.peek(orgId);
      const o = this.orgs.get(orgId);
      if (snap === undefined || snap === null || o === undefined || o.snap === null) continue; // not walked yet
      out.push({ orgName: snap.org.name, counts: { ...o.counts } });
    }
    return out;
  }

  /**
   * Looks at each organization's flags that may have changed (every flag when `all`, or when a
   * status's validity ran out), and records each status that differs from the recorded one, at
   * most SETTLE_PER_ROUND a round: the rest stay for the next round. Flags gone from the snapshot
   * are forgotten.
   */
  private async settleAll(): Promise<void> {
    const now = this.rt.now();
    let budget = SETTLE_PER_ROUND;
    let examined = 0;
    for (const orgId of this.rt.snapshots.loadedOrgIds()) {
      const snap = this.rt.snapshots.peek(orgId);
      if (snap === undefined || snap === null) continue;
      const o = this.org(orgId);
      const all = o.all || o.snap !== snap || now >= o.roundExpiry;
      // What changes while this walk waits for the database goes to the next round's set.
      const dirty = o.dirty;
      o.dirty = new Set();
      o.all = false;
      o.snap = snap;
      if (all) {
        for (const name of o.statuses.keys()) if (!snap.flags.has(name)) this.gone(o, name);
        // Lowered again below by every status held, so the soonest one that runs out.
        o.roundExpiry = Number.POSITIVE_INFINITY;
      }
      for (const name of all ? snap.flags.keys() : dirty) {
        examined++;
        const c = snap.flags.get(name);
        if (c === undefined) {
          this.gone(o, name);
          continue;
        }
        const e = this.statusOf(orgId, c.flag, now);
        if (e.validUntil < o.roundExpiry) o.roundExpiry = e.validUntil;
        if (e.status === (o.recorded.get(name) ?? 'new')) continue;
        if (budget <= 0 || this.stopped) {
          o.dirty.add(name);
          continue;
        }
        budget--;
        await this.settle(orgId, c.flag);
        // settle read the flag's usage afresh: its status again, from that. Still not what is
        // recorded (the flag deleted meanwhile, a bound crossed since): the next round again.
        const after = this.statusOf(orgId, c.flag);
        if (after.status !== (o.recorded.get(name) ?? 'new')) o.dirty.add(name);
      }
    }
    this.stats.examined = examined;
  }

  /** A flag no longer in the snapshot: its status, and its recorded one (its row is deleted with it). */
  private gone(o: OrgLifecycle, name: string): void {
    o.forget(name);
    o.recorded.delete(name);
  }

  /** Decides and records the flag's status in one transaction (see the file's comment). */
  async settle(orgId: string, flag: Flag): Promise<void> {
    const o = this.org(orgId);
    // Its `flag.stale` event wakes the webhook dispatcher after the commit, like any audited write.
    await outboxTransaction(this.rt.db, async (tx) => {
      const recorded = await store.lockRecorded(tx, orgId, flag.name);
      if (recorded === null) return; // deleted meanwhile
      const rows = await store.readFlagUsage(tx, orgId, flag.name);
      // What the database holds now replaces what this node had read of the flag.
      const u = emptyUsage();
      for (const r of rows) merge(u, r);
      if (rows.length > 0) o.usage.set(flag.name, u);
      else o.usage.delete(flag.name);
      o.forget(flag.name);
      const fresh = flagStatus({
        createdAt: Date.parse(flag.createdAt),
        lifetimeMs: o.ms.lifetimes[flag.purpose ?? 'release'],
        unusedAfterMs: o.ms.unusedAfter,
        usage: usageOf(rows),
        now: this.rt.now(),
      });
      const next = { status: fresh.status, reasons: fresh.reasons };
      if (await store.recordStatus(tx, orgId, flag.name, next)) {
        if ((next.status === 'stale' || next.status === 'unused') && recorded.status !== next.status) {
          await insertEvent(tx, orgId, SYSTEM, staleEvent(flag, recorded, next));
        }
      }
      o.recorded.set(flag.name, next.status);
    });
  }
}

/** `flag.stale`: the flag turned `stale` or `unused`; before and after are its statuses and reasons. */
export const staleEvent = (flag: Flag, before: { status: FlagStatus; reasons: StatusReason[] }, after: { status: FlagStatus; reasons: StatusReason[] }) => ({
  action: 'flag.stale' as const,
  target: { type: 'flag' as const, name: flag.name },
  application: flag.project,
  before: { status: before.status, reasons: before.reasons },
  after: { status: after.status, reasons: after.reasons },
});

// ---- the actor's tracker ------------------------------------------------------------------------------

let current: LifecycleTracker | null = null;

/** The management actor's tracker (one per actor process), set when it starts. */
export function setTracker(t: LifecycleTracker | null): void {
  current = t;
}

export function tracker(): LifecycleTracker | null {
  return current;
}
