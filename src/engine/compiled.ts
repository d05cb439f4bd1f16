/**
 * The compiled shapes the engine reads: an organization's snapshot, its flags, their configurations,
 * rules and allocations, with the reasons precomputed for the hot path. Types only; snapshot.ts
 * builds them, snapshot-stats.ts keeps their list maxima, engine.ts evaluates them.
 */
import type { EvaluationReason, Flag, FlagConfig, Organization, Segment, Variant } from '../domain/types.js';
import type { CompiledCondition } from './conditions.js';

/** A cumulative allocation range: the variant serves allocation buckets below `upTo`. */
export interface CompiledAllocation {
  variantKey: string;
  /** Exclusive upper bound in buckets; thresholds are increasing and the last one is 10000. */
  upTo: number;
  /** Key answered (null when variantKey names no variant of the flag). */
  key: string | null;
  /** Value answered (null when variantKey names no variant of the flag). */
  value: unknown;
  /** `Evaluation.index` answered: the variant's position in `CompiledFlag.variants`, or -1 (no variant). */
  index: number;
}

export interface CompiledRule {
  id: string;
  priority: number;
  conditions: CompiledCondition[];
  /** Names of the segments the context must be in (resolved per evaluation in `OrgSnapshot.segments`). */
  segments: readonly string[];
  /** Cumulative allocation thresholds in buckets. Empty: the rule serves the default variant. */
  allocations: CompiledAllocation[];
  /** Shared, frozen `rule_matched` reason ("Matched rule r1 at priority 2"). */
  reason: EvaluationReason;
}

/** Shared, frozen reasons of the hot-path outcomes of one configuration. */
export interface ConfigReasons {
  configDisabled: EvaluationReason;
  notYetActive: EvaluationReason;
  expired: EvaluationReason;
  rolloutExcluded: EvaluationReason;
  enrollmentClosed: EvaluationReason;
  default: EvaluationReason;
}

export interface CompiledConfig {
  config: FlagConfig;
  /** Sorted by priority ascending; equal priorities keep their stored order. */
  rules: CompiledRule[];
  /** Math.round(rolloutPercentage * 100), clamped to 0..10000: buckets below it are in the rollout. */
  rolloutUpTo: number;
  /** Math.round(enrollmentCutoff * 100) clamped to 0..10000, or null when enrollment is open. */
  cutoffUpTo: number | null;
  activeFromMs: number | null;
  activeUntilMs: number | null;
  /** The terminal variant: defaultVariantKey when it names a variant, else null/null. */
  defaultKey: string | null;
  defaultValue: unknown;
  /** `Evaluation.index` of the terminal variant: its position in `CompiledFlag.variants`, or -1 (null key). */
  defaultIndex: number;
  reasons: ConfigReasons;
}

/** The configurations of one stage, keyed for allocation-free lookup. */
export interface StageConfigs {
  base: CompiledConfig | null;
  byClient: Map<string, CompiledConfig> | null;
}

export interface CompiledFlag {
  flag: Flag;
  /**
   * The flag's variants by key, the first of each key in `flag.variants` order. That order numbers
   * them: `Evaluation.index` is a position in it (fixed for this compiled flag).
   */
  variants: Map<string, Variant>;
  /** By configKey(stage, clientId). */
  configs: Map<string, CompiledConfig>;
  /** By exact stage spelling and by its name key (domain/name-matching.ts): the engine's lookup path. */
  stages: Map<string, StageConfigs>;
  /** flag.environments, exact spellings and name keys. */
  environments: Set<string>;
  /**
   * This thread's evaluation counters of the flag (the server's insights/counter.ts `FlagCells`),
   * made on its first counted evaluation; the engine never reads it.
   */
  insights?: { readonly owner: object };
  /**
   * This thread's sampled evaluation requests of the flag (the server's samples/sampler.ts rings,
   * VEXIL_CONTEXT_SAMPLE), made on its first sampled evaluation; the engine never reads it.
   */
  samples?: { readonly owner: object };
}

/**
 * A segment compiled once per change of it: its conditions with their `in` / `not_in` hash sets
 * (conditions.ts `compileCondition`), so that a 20,000-value list is a lookup, not a scan.
 */
export interface CompiledSegment {
  segment: Segment;
  conditions: CompiledCondition[];
}

/** What the engine reads of an organization's segments: a lookup by name. */
export interface SegmentLookup {
  get(name: string): CompiledSegment | undefined;
}

export interface OrgSnapshot {
  org: Organization;
  /**
   * The organization's segments by name (a Map on the front thread and in the management actor; an
   * on-demand view in an evaluation worker, src/snapshots/shared-store.ts). Absent: no segments.
   */
  segments?: SegmentLookup;
  /**
   * By flag name. A flag added or replaced in place goes through `putFlag` (snapshot-stats.ts),
   * which keeps the snapshot's list maxima an upper bound.
   */
  flags: Map<string, CompiledFlag>;
}
