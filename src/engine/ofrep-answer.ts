/**
 * Shaping an evaluation as OFREP's evaluationSuccess (docs/ofrep.md, "Answers"): Vexil's reason
 * code mapped to OFREP's reason (a matched rule that splits is SPLIT), serialised by hand. Pure.
 */
import type { EvaluationAnswer, ReasonCode } from '../domain/types.js';
import { selectConfig, type CompiledFlag, type CompiledRule } from './index.js';

export type OfrepReason = 'STATIC' | 'TARGETING_MATCH' | 'SPLIT' | 'DISABLED' | 'UNKNOWN';

/** Vexil reason code → OFREP reason (docs/ofrep.md, 'Answers') (`rule_matched` is refined by `ruleSplits`). */
export const REASON_MAP: Record<ReasonCode, OfrepReason> = {
  rule_matched: 'TARGETING_MATCH',
  default: 'STATIC',
  rollout_excluded: 'SPLIT',
  enrollment_closed: 'SPLIT',
  config_disabled: 'DISABLED',
  killswitch: 'DISABLED',
  archived: 'DISABLED',
  not_yet_active: 'DISABLED',
  expired: 'DISABLED',
  disabled_dependency: 'DISABLED',
  project_or_env_mismatch: 'UNKNOWN',
  config_missing: 'UNKNOWN',
  no_variants: 'UNKNOWN',
};

const splits = new WeakMap<CompiledRule, boolean>();

/** Whether a rule's allocations give buckets to more than one variant. */
function ruleSplits(rule: CompiledRule): boolean {
  let s = splits.get(rule);
  if (s === undefined) {
    const keys = new Set<string>();
    let prev = 0;
    for (const a of rule.allocations) {
      if (a.upTo > prev) keys.add(a.variantKey);
      prev = a.upTo;
    }
    s = keys.size > 1;
    splits.set(rule, s);
  }
  return s;
}

/** rule_matched reasons already classified: the engine shares one frozen reason object per rule. */
const ruleReasons = new WeakMap<object, OfrepReason>();

/** The OFREP reason of an evaluation of `cf` in (canonical) `stage` for `clientId` (the stage is only needed the first time a rule matches). */
export function reasonOf(ev: EvaluationAnswer, cf: CompiledFlag | undefined, stage: string | (() => string), clientId: string | null): OfrepReason {
  const code = ev.reason.code;
  if (code !== 'rule_matched' || cf === undefined) return REASON_MAP[code];
  let r = ruleReasons.get(ev.reason);
  if (r === undefined) {
    const rule = selectConfig(cf, typeof stage === 'string' ? stage : stage(), clientId)?.rules.find((x) => x.id === ev.reason.ruleId);
    r = rule !== undefined && ruleSplits(rule) ? 'SPLIT' : 'TARGETING_MATCH';
    // Only shared reasons are remembered (an answer from a worker thread is a fresh copy).
    if (Object.isFrozen(ev.reason)) ruleReasons.set(ev.reason, r);
  }
  return r;
}

export interface OfrepSuccess {
  key: string;
  value?: unknown;
  variant?: string;
  reason: OfrepReason;
  metadata: { reasonCode: ReasonCode };
}

/**
 * An evaluation as OFREP's evaluationSuccess (an OfrepSuccess), serialised by hand: the hot path
 * builds one string and no intermediate objects. An outcome without a variant leaves `value` (and
 * `variant`) out, so the client uses its code default. Reason and reason code are ASCII words.
 */
export function ofrepJson(flagKey: string, ev: EvaluationAnswer, reason: OfrepReason): string {
  const tail = `,"reason":"${reason}","metadata":{"reasonCode":"${ev.reason.code}"}}`;
  return ev.key === null
    ? `{"key":${JSON.stringify(flagKey)}${tail}`
    : `{"key":${JSON.stringify(flagKey)},"value":${JSON.stringify(ev.variant)},"variant":${JSON.stringify(ev.key)}${tail}`;
}
