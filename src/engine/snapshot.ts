/**
 * Builds the compiled, immutable-per-version form of an organization's flags that the engine reads
 * (its shapes are in compiled.ts). Built once per change (compileFlag / buildSnapshot), never per
 * request: everything the hot path needs (sorted rules, cumulative thresholds, parsed times,
 * resolved variants, reason objects) is precomputed here.
 */
import {
  NO_VARIANT_INDEX,
  type EvaluationReason,
  type Flag,
  type FlagConfig,
  type Organization,
  type Segment,
  type Variant,
} from '../domain/types.js';
import { nameKey } from '../domain/name-matching.js';
import { BUCKETS } from './hash.js';
import { compileCondition, type CompiledCondition } from './conditions.js';
import type {
  CompiledAllocation,
  CompiledConfig,
  CompiledFlag,
  CompiledRule,
  CompiledSegment,
  ConfigReasons,
  OrgSnapshot,
  StageConfigs,
} from './compiled.js';
import { keepMaxima, noMaxima, raiseMaxima } from './snapshot-stats.js';

/**
 * Key of a configuration in CompiledFlag.configs. Stages compare as names (domain/name-matching.ts: filed
 * under their name key); clientIds exactly. A null or empty clientId is the stage's base configuration.
 */
export function configKey(stage: string, clientId: string | null): string {
  const s = nameKey(stage);
  return clientId === null || clientId === '' ? s : s + '\u0000' + clientId;
}

function clampBuckets(n: number): number {
  if (!(n > 0)) return 0; // also NaN
  return n > BUCKETS ? BUCKETS : n;
}

function parseTime(iso: string | null | undefined): number | null {
  if (iso === null || iso === undefined) return null;
  const ms = Date.parse(iso);
  return Number.isNaN(ms) ? null : ms;
}

function reason(code: EvaluationReason['code'], message: string, ruleId?: string): EvaluationReason {
  return Object.freeze(ruleId === undefined ? { code, message } : { code, message, ruleId });
}

function pct(n: number): string {
  return `${Number.isFinite(n) ? Math.round(n * 100) / 100 : n}%`;
}

function describeConfig(c: FlagConfig): string {
  return c.clientId === null || c.clientId === ''
    ? `stage '${c.stage}'`
    : `stage '${c.stage}', client '${c.clientId}'`;
}

/** A variant of the flag by key, with its position in the compiled flag's variants (`Evaluation.index`). */
type IndexedVariants = Map<string, { v: Variant; index: number }>;

function compileRule(
  rule: FlagConfig['rules'][number],
  variants: IndexedVariants,
): CompiledRule {
  const conditions = compileConditions(rule.conditions);
  const segments = rule.segments === undefined || rule.segments === null || rule.segments.length === 0 ? NO_SEGMENTS : rule.segments;
  const allocations: CompiledAllocation[] = [];
  const list = rule.allocations ?? [];
  let cumulative = 0;
  for (let i = 0; i < list.length; i++) {
    const a = list[i];
    cumulative += Number.isFinite(a.percentage) && a.percentage > 0 ? a.percentage : 0;
    // The last allocation absorbs rounding so the thresholds end at exactly 10000.
    const upTo = i === list.length - 1 ? BUCKETS : clampBuckets(Math.round(cumulative * 100));
    const iv = variants.get(a.variantKey);
    allocations.push({
      variantKey: a.variantKey,
      upTo,
      key: iv === undefined ? null : iv.v.key,
      value: iv === undefined ? null : iv.v.value,
      index: iv === undefined ? NO_VARIANT_INDEX : iv.index,
    });
  }
  return new Rule(rule.id, rule.priority, conditions, segments, allocations);
}

const NO_SEGMENTS: readonly string[] = Object.freeze([]);

function compileConditions(list: readonly { field: string; operator: string; value: unknown }[] | null | undefined): CompiledCondition[] {
  const out: CompiledCondition[] = [];
  for (const c of list ?? []) out.push(compileCondition(c.field, c.operator, c.value));
  return out;
}

/**
 * Compiles a segment once per change of it: every `in` / `not_in` list becomes a hash set here
 * (docs/evaluation.md, "Segments"), never per request.
 */
export function compileSegment(segment: Segment): CompiledSegment {
  return { segment, conditions: compileConditions(segment.conditions) };
}

/**
 * A compiled rule. Its `rule_matched` reason is built on first use and then shared: with 100,000
 * flags most reasons are never asked for, and eager messages would cost tens of MiB.
 */
class Rule implements CompiledRule {
  private cached: EvaluationReason | undefined;
  constructor(
    readonly id: string,
    readonly priority: number,
    readonly conditions: CompiledCondition[],
    readonly segments: readonly string[],
    readonly allocations: CompiledAllocation[],
  ) {}

  get reason(): EvaluationReason {
    return (this.cached ??= reason('rule_matched', `Matched rule ${this.id} at priority ${this.priority}`, this.id));
  }
}

/** The terminal reasons of one configuration, each built on first use and then shared (see Rule). */
class Reasons implements ConfigReasons {
  private c: (EvaluationReason | undefined)[] = [];
  constructor(
    private readonly config: FlagConfig,
    private readonly activeFromMs: number | null,
    private readonly activeUntilMs: number | null,
    private readonly defaultKey: string | null,
  ) {}

  private get where(): string {
    return describeConfig(this.config);
  }

  get configDisabled(): EvaluationReason {
    return (this.c[0] ??= reason('config_disabled', `Configuration for ${this.where} is disabled`));
  }

  get notYetActive(): EvaluationReason {
    const at = this.activeFromMs === null ? '?' : new Date(this.activeFromMs).toISOString();
    return (this.c[1] ??= reason('not_yet_active', `Configuration for ${this.where} is not active until ${at}`));
  }

  get expired(): EvaluationReason {
    const at = this.activeUntilMs === null ? '?' : new Date(this.activeUntilMs).toISOString();
    return (this.c[2] ??= reason('expired', `Configuration for ${this.where} expired at ${at}`));
  }

  get rolloutExcluded(): EvaluationReason {
    return (this.c[3] ??= reason('rollout_excluded', `User is outside the ${pct(this.config.rolloutPercentage)} rollout`));
  }

  get enrollmentClosed(): EvaluationReason {
    const cutoff = pct(this.config.enrollmentCutoff ?? 100);
    return (this.c[4] ??= reason('enrollment_closed', `Enrollment is closed at ${cutoff}: the user was not enrolled before the cut-off`));
  }

  get default(): EvaluationReason {
    return (this.c[5] ??= reason(
      'default',
      this.defaultKey === null
        ? `No rule matched; default variant '${this.config.defaultVariantKey}' does not exist`
        : `No rule matched; serving default variant '${this.defaultKey}'`,
    ));
  }
}

function compileConfig(config: FlagConfig, variants: IndexedVariants): CompiledConfig {
  const indexed = (config.rules ?? []).map((r, i) => ({ r, i }));
  indexed.sort((a, b) => a.r.priority - b.r.priority || a.i - b.i);
  const rules = indexed.map(({ r }) => compileRule(r, variants));
  const rolloutUpTo = clampBuckets(Math.round(config.rolloutPercentage * 100));
  const cutoff = config.enrollmentCutoff;
  const cutoffUpTo = cutoff === null || cutoff === undefined ? null : clampBuckets(Math.round(cutoff * 100));
  const activeFromMs = parseTime(config.activeFrom);
  const activeUntilMs = parseTime(config.activeUntil);
  const dv = variants.get(config.defaultVariantKey);
  const defaultKey = dv === undefined ? null : dv.v.key;
  const reasons = new Reasons(config, activeFromMs, activeUntilMs, defaultKey);
  return {
    config,
    rules,
    rolloutUpTo,
    cutoffUpTo,
    activeFromMs,
    activeUntilMs,
    defaultKey,
    defaultValue: dv === undefined ? null : dv.v.value,
    defaultIndex: dv === undefined ? NO_VARIANT_INDEX : dv.index,
    reasons,
  };
}

/** Compiles a flag and its configurations (all stages, all clientIds) into the engine's form. */
export function compileFlag(flag: Flag, configs: FlagConfig[]): CompiledFlag {
  const variants = new Map<string, Variant>();
  const indexed: IndexedVariants = new Map();
  for (const v of flag.variants) {
    if (variants.has(v.key)) continue;
    indexed.set(v.key, { v, index: variants.size });
    variants.set(v.key, v);
  }
  const compiled = new Map<string, CompiledConfig>();
  const stages = new Map<string, StageConfigs>();
  for (const config of configs) {
    const cc = compileConfig(config, indexed);
    compiled.set(configKey(config.stage, config.clientId), cc);
    for (const stageKey of [config.stage, nameKey(config.stage)]) {
      let sc = stages.get(stageKey);
      if (sc === undefined) {
        sc = { base: null, byClient: null };
        stages.set(stageKey, sc);
      }
      if (config.clientId === null || config.clientId === '') {
        // An exact spelling wins over a case variant of it under the name key.
        if (sc.base === null || stageKey === config.stage) sc.base = cc;
      } else {
        if (sc.byClient === null) sc.byClient = new Map();
        if (!sc.byClient.has(config.clientId) || stageKey === config.stage) sc.byClient.set(config.clientId, cc);
      }
    }
  }
  const environments = new Set<string>();
  for (const e of flag.environments) {
    environments.add(e);
    environments.add(nameKey(e));
  }
  return { flag, variants, configs: compiled, stages, environments, insights: undefined, samples: undefined };
}

/**
 * Compiles every flag and segment of an organization. `configs` maps a flag name to its
 * configurations.
 */
export function buildSnapshot(
  org: Organization,
  flags: Flag[],
  configs: Map<string, FlagConfig[]>,
  segments: readonly Segment[] = [],
): OrgSnapshot {
  const map = new Map<string, CompiledFlag>();
  const maxima = noMaxima();
  for (const f of flags) {
    const cf = compileFlag(f, configs.get(f.name) ?? []);
    map.set(f.name, cf);
    raiseMaxima(maxima, cf);
  }
  const segmentMap = new Map<string, CompiledSegment>();
  for (const s of segments) segmentMap.set(s.name, compileSegment(s));
  const snap: OrgSnapshot = { org, flags: map, segments: segmentMap };
  // Kept with the snapshot (snapshot-stats.ts): its first GraphQL estimate scans nothing.
  keepMaxima(snap, maxima);
  return snap;
}
