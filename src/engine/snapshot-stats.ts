/**
 * List maxima of an organization's snapshot: the longest list of each kind any of its flags holds
 * (variants, tags, environments, dependencies, a dependency's variants, configurations, a
 * configuration's rules, a rule's conditions, segments and allocations). The GraphQL result estimate
 * (src/graphql/result-estimate.ts; docs/graphql.md, "Limits") multiplies with them.
 *
 * Cheap to keep: computed while `buildSnapshot` compiles the flags (or, for a snapshot built some
 * other way, once on first use: one pass over its flags, ~25 ms for 100,000), and then only raised by `putFlag` when a one-flag change replaces a flag in place (the cost of that
 * flag's own lists, never a scan of the organization). A deletion or a shrinking flag leaves a
 * maximum where it was: it stays an upper bound, which is all the estimate needs, until the next
 * full reload builds a new snapshot object (and its maxima afresh).
 */
import type { CompiledFlag, OrgSnapshot } from './compiled.js';

export interface ListMaxima {
  variants: number;
  tags: number;
  /** A flag's environments. */
  environments: number;
  dependencies: number;
  /** The variants one dependency names. */
  dependencyVariants: number;
  /** A flag's configurations (every stage and clientId). */
  configs: number;
  /** A configuration's rules. */
  rules: number;
  /** A rule's conditions. */
  conditions: number;
  /** A rule's allocations. */
  allocations: number;
  /** The segments one rule names. */
  ruleSegments: number;
}

const maxima = new WeakMap<OrgSnapshot, ListMaxima>();

/** Maxima of no flag at all. */
export const noMaxima = (): ListMaxima => ({
  variants: 0,
  tags: 0,
  environments: 0,
  dependencies: 0,
  dependencyVariants: 0,
  configs: 0,
  rules: 0,
  conditions: 0,
  allocations: 0,
  ruleSegments: 0,
});

const len = (a: readonly unknown[] | null | undefined): number => (a === null || a === undefined ? 0 : a.length);

/** Raises `m` to cover one flag's lists: linear in that flag's own size. */
export function raiseMaxima(m: ListMaxima, cf: CompiledFlag): void {
  const f = cf.flag;
  if (len(f.variants) > m.variants) m.variants = len(f.variants);
  if (len(f.tags) > m.tags) m.tags = len(f.tags);
  if (len(f.environments) > m.environments) m.environments = len(f.environments);
  const deps = f.dependencies ?? [];
  if (deps.length > m.dependencies) m.dependencies = deps.length;
  for (const d of deps) if (len(d.variants) > m.dependencyVariants) m.dependencyVariants = len(d.variants);
  if (cf.configs.size > m.configs) m.configs = cf.configs.size;
  for (const cc of cf.configs.values()) {
    const rules = cc.config.rules ?? [];
    if (rules.length > m.rules) m.rules = rules.length;
    for (const r of rules) {
      if (len(r.conditions) > m.conditions) m.conditions = len(r.conditions);
      if (len(r.allocations) > m.allocations) m.allocations = len(r.allocations);
      if (len(r.segments) > m.ruleSegments) m.ruleSegments = len(r.segments);
    }
  }
}

/** The snapshot's list maxima: one pass over its flags the first time, then kept with it. */
export function listMaxima(snap: OrgSnapshot): ListMaxima {
  let m = maxima.get(snap);
  if (m === undefined) {
    m = noMaxima();
    for (const cf of snap.flags.values()) raiseMaxima(m, cf);
    maxima.set(snap, m);
  }
  return m;
}

/** Records maxima computed while the snapshot was built (buildSnapshot raises them flag by flag). */
export function keepMaxima(snap: OrgSnapshot, m: ListMaxima): void {
  maxima.set(snap, m);
}

/**
 * Puts a (re)compiled flag into an existing snapshot and keeps its maxima an upper bound. Every
 * in-place change of `snap.flags` that adds or replaces a flag goes through here.
 */
export function putFlag(snap: OrgSnapshot, cf: CompiledFlag): void {
  snap.flags.set(cf.flag.name, cf);
  const m = maxima.get(snap);
  if (m !== undefined) raiseMaxima(m, cf);
}
