/**
 * Which environments a write would change what evaluation answers in, and which of those its
 * policies protect (CONTRACT 17; docs/change-requests.md, "What protection covers"). Pure: the
 * guard (features/policies/guard.ts) gathers the facts inside the write's transaction and asks
 * these two functions; every service's write goes through that guard.
 */
import { findName, nameKey, sameName } from './name-matching.js';
import type { KillSwitchRule } from './types.js';

/** What a write changes, in the terms that decide which environments' answers it can move. */
export type WriteEffect =
  /** A configuration of `stage` (upsert, enable, disable, delete), or a schedule for it. */
  | { kind: 'config'; stage: string }
  /**
   * A flag's own fields (update, archive, restore, delete). `usedIn`: the stages where the flag or
   * a flag depending on it (transitively) has a configuration. `fields`: the fields the write sets
   * (null: the whole flag, a delete); description, tags and purpose alone change no answer.
   */
  | { kind: 'flag'; usedIn: readonly string[]; fields: readonly string[] | null }
  /** A flag's environments replaced: each environment added or removed changes its answers there. */
  | { kind: 'flagEnvironments'; changed: readonly string[] }
  /** A segment's change or delete; `usedIn`: the stages of the configurations whose rules name it. */
  | { kind: 'segment'; usedIn: readonly string[] }
  /** The kill switch replaced: a rule added or removed changes its environment (null: every one). */
  | { kind: 'killSwitch'; before: readonly KillSwitchRule[]; after: readonly KillSwitchRule[] }
  /**
   * The organization's applications changed (added, removed or renamed; not reordered): a clientId
   * `<application>:<client>` belongs to an application by name (engine.ts, project_or_env_mismatch),
   * so answers can change in every environment.
   */
  | { kind: 'applications' }
  /** The organization's environments replaced or renamed: each removed or renamed one changes. */
  | { kind: 'environments'; removed: readonly string[]; renamed: readonly string[] };

/** Flag fields that change no evaluation answer. */
const INERT_FLAG_FIELDS = new Set(['description', 'tags', 'purpose']);

/**
 * A kill-switch rule as evaluation matches it (engine.ts `killSwitchMatches`): the flag by its exact
 * name, the application and the environment ignoring case.
 */
const ruleKey = (r: KillSwitchRule): string => JSON.stringify([r.flag ?? null, r.application == null ? null : nameKey(r.application), r.environment == null ? null : nameKey(r.environment)]);

/**
 * The kill-switch rules a replacement adds or removes (those of `before` no rule of `after` matches
 * like, then those of `after` no rule of `before` does): the one diff of the protection check, a
 * change request's environments and its preview's flags. A rule only respelled in the case of its
 * application or environment matches the same evaluations and is no change.
 */
export function changedKillSwitchRules(before: readonly KillSwitchRule[], after: readonly KillSwitchRule[]): KillSwitchRule[] {
  const b = new Set(before.map(ruleKey));
  const a = new Set(after.map(ruleKey));
  return [...before.filter((r) => !a.has(ruleKey(r))), ...after.filter((r) => !b.has(ruleKey(r)))];
}

/** Adds `name` to `out` in the organization's spelling (a name it does not know is kept as given). */
function add(out: string[], environments: readonly string[], name: string): void {
  const canonical = findName(environments, name) ?? name;
  if (!out.some((o) => sameName(o, canonical))) out.push(canonical);
}

/**
 * The environments whose evaluation answers `effect` could change, in the organization's spelling
 * (`environments`: its environments), each once.
 */
export function affectedStages(effect: WriteEffect, environments: readonly string[]): string[] {
  const out: string[] = [];
  switch (effect.kind) {
    case 'config':
      add(out, environments, effect.stage);
      break;
    case 'flag':
      if (effect.fields !== null && effect.fields.every((f) => INERT_FLAG_FIELDS.has(f))) break;
      for (const s of effect.usedIn) add(out, environments, s);
      break;
    case 'segment':
      for (const s of effect.usedIn) add(out, environments, s);
      break;
    case 'flagEnvironments':
      for (const s of effect.changed) add(out, environments, s);
      break;
    case 'killSwitch': {
      for (const r of changedKillSwitchRules(effect.before, effect.after)) {
        if (r.environment === null) for (const e of environments) add(out, environments, e);
        else add(out, environments, r.environment);
      }
      break;
    }
    case 'applications':
      for (const e of environments) add(out, environments, e);
      break;
    case 'environments':
      for (const s of [...effect.removed, ...effect.renamed]) add(out, environments, s);
      break;
  }
  return out;
}

/** The policy settings the decision reads (features/policies/store.ts `EnvironmentPolicy`). */
export interface PolicyView {
  requiredApprovals: number;
  allowBypass: boolean;
}

/** How the write asks to pass. */
export interface WriteAuthority {
  /** The write applies an approved change request: its approvals stand for the review. */
  viaChangeRequest: boolean;
  /** The request's `x-vexil-bypass-review` reason, or null. */
  bypassReason: string | null;
  /** The writing key has Admin. */
  isAdmin: boolean;
}

export type ProtectionDecision =
  /** No protected environment is affected, or a change request's apply. */
  | { kind: 'allow' }
  /** Protected environments affected, and an Admin's bypass every one of them allows: allowed, audited. */
  | { kind: 'bypass'; environments: string[]; reason: string }
  /** 409 CONFLICT, `reason: "review_required"`, naming `environments`. */
  | { kind: 'review_required'; environments: string[] }
  /** A bypass sent by a key without Admin: 403 FORBIDDEN. */
  | { kind: 'bypass_forbidden'; environments: string[] };

/** The protected ones among `stages`: those whose policy requires at least one approval. */
export function protectedStages(stages: readonly string[], policies: ReadonlyMap<string, PolicyView>): string[] {
  const byKey = new Map<string, PolicyView>();
  for (const [stage, p] of policies) byKey.set(stage.toLowerCase(), p);
  return stages.filter((s) => (byKey.get(s.toLowerCase())?.requiredApprovals ?? 0) > 0);
}

/**
 * The decision for a write affecting `stages`. A bypass passes only when the key has Admin and the
 * policy of every protected environment affected allows bypass; a bypass without Admin is 403; a
 * bypass where a policy does not allow it is review_required like no bypass at all.
 */
export function decideProtection(stages: readonly string[], policies: ReadonlyMap<string, PolicyView>, who: WriteAuthority): ProtectionDecision {
  const guarded = protectedStages(stages, policies);
  if (guarded.length === 0 || who.viaChangeRequest) return { kind: 'allow' };
  if (who.bypassReason === null) return { kind: 'review_required', environments: guarded };
  if (!who.isAdmin) return { kind: 'bypass_forbidden', environments: guarded };
  const byKey = new Map<string, PolicyView>();
  for (const [stage, p] of policies) byKey.set(stage.toLowerCase(), p);
  if (guarded.every((s) => byKey.get(s.toLowerCase())!.allowBypass)) return { kind: 'bypass', environments: guarded, reason: who.bypassReason };
  return { kind: 'review_required', environments: guarded };
}
