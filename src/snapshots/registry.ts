/**
 * The in-memory replica of each organization's flag data that evaluation reads. PostgreSQL is the
 * source of truth; this registry reloads what a change touched, one change at a time per
 * organization, so a snapshot's version only ever grows and never goes back to older data.
 *
 * A change names an organization, the version its commit produced, and what it touched: one flag
 * (that flag is reloaded), the organization's settings (its row is reloaded) or anything (all of
 * it is reloaded). A change that skips versions (a missed cluster message) reloads everything.
 * Those rules live in apply-rules.ts, shared with the evaluation workers' store (shared-store.ts).
 */
import type { Flag, FlagConfig, Organization } from '../domain/types.js';
import { buildSnapshot, compileFlag, putFlag, type OrgSnapshot } from '../engine/index.js';
import { replaces, stepFor, type Change, type Touches } from './apply-rules.js';
import { flagChanged } from './flag-index.js';

export type { Change, Touches } from './apply-rules.js';

/**
 * Where the registry reads the source of truth from (node.ts builds it from the feature stores):
 * the registry knows no SQL and no feature module.
 */
export interface SnapshotSource {
  org(orgId: string): Promise<Organization | null>;
  flag(orgId: string, name: string): Promise<Flag | null>;
  flagConfigs(orgId: string, name: string): Promise<FlagConfig[]>;
  flags(orgId: string): Promise<Flag[]>;
  orgConfigs(orgId: string): Promise<Map<string, FlagConfig[]>>;
}

/**
 * Called after each update, in order: `touches` says what changed in `snapshot` ('all' after a
 * full load); `snapshot` is null when the organization is gone.
 */
export type SnapshotListener = (orgId: string, snapshot: OrgSnapshot | null, touches: Touches) => void;

export class SnapshotRegistry {
  private readonly snapshots = new Map<string, OrgSnapshot>();
  private readonly loading = new Map<string, Promise<OrgSnapshot | null>>();
  private readonly queues = new Map<string, Promise<void>>();
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

  /** Applies a committed change; resolves once evaluations on this node see it. */
  apply(change: Change): Promise<void> {
    const prev = this.queues.get(change.orgId) ?? Promise.resolve();
    const next = prev.then(() => this.applyNow(change));
    const tail = next.catch(() => {});
    this.queues.set(change.orgId, tail);
    void tail.then(() => {
      if (this.queues.get(change.orgId) === tail) this.queues.delete(change.orgId);
    });
    return next;
  }

  private async applyNow(change: Change): Promise<void> {
    const current = this.snapshots.get(change.orgId);
    const step = stepFor(current?.org.version, change);
    // Not loaded here: nothing to update; the first use loads the latest state.
    if (current === undefined || step.kind === 'absent' || step.kind === 'stale') return;
    if (step.kind === 'reload') {
      await this.loadOrg(change.orgId, true);
      return;
    }
    if (step.kind === 'settings') {
      const org = await this.source.org(change.orgId);
      if (org === null) {
        this.snapshots.delete(change.orgId);
        this.emit(change.orgId, null, 'all');
        return;
      }
      // The row may already hold later settings; that is newer data, never older. The version
      // claims only what this change guarantees.
      current.org = { ...org, version: change.version };
      this.emit(change.orgId, current, change.touches);
      return;
    }
    // A contiguous flag change leaves the organization's settings as they are: no need to read
    // its row again.
    const name = step.name;
    const [flag, configs] = await Promise.all([this.source.flag(change.orgId, name), this.source.flagConfigs(change.orgId, name)]);
    // putFlag keeps the snapshot's list maxima (GraphQL result estimate) an upper bound; a deletion
    // may leave them above the truth, which an upper bound allows.
    if (flag === null) current.flags.delete(name);
    else putFlag(current, compileFlag(flag, configs));
    flagChanged(current, name); // the flag list's index, in the same tick (flag-index.ts)
    current.org = { ...current.org, version: change.version };
    this.emit(change.orgId, current, change.touches);
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
    const [flags, configs] = await Promise.all([this.source.flags(orgId), this.source.orgConfigs(orgId)]);
    const existing = this.snapshots.get(orgId);
    if (existing !== undefined && !replaces(existing.org.version, org.version)) return existing;
    const snap = buildSnapshot(org, flags, configs);
    this.snapshots.set(orgId, snap);
    this.emit(orgId, snap, 'all');
    return snap;
  }

  private emit(orgId: string, snap: OrgSnapshot | null, touches: Touches): void {
    for (const l of this.listeners) l(orgId, snap, touches);
  }
}
