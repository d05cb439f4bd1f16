/**
 * The rules for applying a committed change to a replica of an organization's flag data, owned
 * here and nowhere else: the front thread's registry (registry.ts) and the shared store
 * (shared-store.ts) decide with them what they may write, and the evaluation workers, which read
 * that store, whether they may answer an item.
 *
 * - A replica's version never goes back: data older than what it holds is ignored.
 * - A change one version ahead that touched one flag applies that flag only, one that touched one
 *   segment that segment only; one that touched the organization's settings replaces the
 *   organization row only.
 * - A change that touched anything, or that skips versions, reloads everything.
 * - A reader holding a version older than what an item needs answers "retry", never older data.
 *
 * What a version touched is the database's change log (`org_changes`), read by the registry
 * together with the data; a bus message's `touches` and `version` are only hints (registry.ts).
 */

/** What a committed write touched: one flag, one segment, only the organization's settings, or anything. */
export type Touches = { flag: string } | { segment: string } | 'settings' | 'all';

export interface Change {
  orgId: string;
  version: number;
  touches: Touches;
}

/** What to do with a change, given the version the replica holds. */
export type Step =
  /** The replica does not hold the organization: nothing to update (its first use loads it). */
  | { kind: 'absent' }
  /** The replica already holds this version or a later one. */
  | { kind: 'stale' }
  | { kind: 'reload' }
  | { kind: 'settings' }
  | { kind: 'flag'; name: string }
  | { kind: 'segment'; name: string };

export function stepFor(held: number | undefined, change: Change): Step {
  if (held === undefined) return { kind: 'absent' };
  if (held >= change.version) return { kind: 'stale' };
  const t = change.touches;
  if (t === 'all' || change.version !== held + 1) return { kind: 'reload' };
  if (t === 'settings') return { kind: 'settings' };
  return 'segment' in t ? { kind: 'segment', name: t.segment } : { kind: 'flag', name: t.flag };
}

/** Whether a complete snapshot at `incoming` may replace what the replica holds (never older data). */
export function replaces(held: number | undefined, incoming: number): boolean {
  return held === undefined || incoming >= held;
}

/** Whether a replica at `held` may answer an item that needs at least `needed`. */
export function serves(held: number | undefined, needed: number): boolean {
  return held !== undefined && held >= needed;
}
