/**
 * Tenancy limits (docs/limits.md, "Tenancy limits"). Pure: the limits come from the caller
 * (`Config.tenancyLimits`), defaulting to the documented defaults.
 *
 * - Size limits (rules, conditions, variants, value bytes) are checked here: one over is 400
 *   `BAD_REQUEST` naming the setting and its value.
 * - Count limits (flags, keys, configurations, segments, pending schedules) need stored state: the writes check them inside
 *   their transaction with `quotaError`, 409 `QUOTA_EXCEEDED`.
 */
import { badRequest, quotaExceeded, type VexilError } from '../errors.js';

export interface TenancyLimits {
  /** VEXIL_MAX_FLAGS_PER_ORG */
  maxFlagsPerOrg: number;
  /** VEXIL_MAX_KEYS_PER_ORG (disabled keys count) */
  maxKeysPerOrg: number;
  /** VEXIL_MAX_CONFIGS_PER_FLAG (clientId configurations included) */
  maxConfigsPerFlag: number;
  /** VEXIL_MAX_RULES_PER_CONFIG */
  maxRulesPerConfig: number;
  /** VEXIL_MAX_CONDITIONS_PER_RULE */
  maxConditionsPerRule: number;
  /** VEXIL_MAX_VARIANTS_PER_FLAG */
  maxVariantsPerFlag: number;
  /** VEXIL_MAX_VALUE_BYTES: one variant value or condition value, as JSON text (UTF-8 bytes). */
  maxValueBytes: number;
  /** VEXIL_MAX_SEGMENTS_PER_ORG */
  maxSegmentsPerOrg: number;
  /**
   * VEXIL_MAX_SEGMENT_VALUES: items of one `in` / `not_in` list of a segment condition; such a list
   * is bounded by this (and the 1 MiB body), each item by maxValueBytes, not the list as a whole.
   */
  maxSegmentValues: number;
  /** VEXIL_MAX_PENDING_SCHEDULES_PER_FLAG: pending scheduled changes of one flag */
  maxPendingSchedulesPerFlag: number;
  /** VEXIL_MAX_PENDING_SCHEDULES_PER_ORG: pending scheduled changes in one organization */
  maxPendingSchedulesPerOrg: number;
}

export const DEFAULT_TENANCY_LIMITS: Readonly<TenancyLimits> = Object.freeze({
  maxFlagsPerOrg: 200_000,
  maxKeysPerOrg: 1000,
  maxConfigsPerFlag: 100,
  maxRulesPerConfig: 200,
  maxConditionsPerRule: 50,
  maxVariantsPerFlag: 100,
  maxValueBytes: 32_768,
  maxSegmentsPerOrg: 1000,
  maxSegmentValues: 20_000,
  maxPendingSchedulesPerFlag: 100,
  maxPendingSchedulesPerOrg: 10_000,
});

/** The setting that sets each limit, as clients see it named in errors. */
export const LIMIT_SETTING: Readonly<Record<keyof TenancyLimits, string>> = Object.freeze({
  maxFlagsPerOrg: 'VEXIL_MAX_FLAGS_PER_ORG',
  maxKeysPerOrg: 'VEXIL_MAX_KEYS_PER_ORG',
  maxConfigsPerFlag: 'VEXIL_MAX_CONFIGS_PER_FLAG',
  maxRulesPerConfig: 'VEXIL_MAX_RULES_PER_CONFIG',
  maxConditionsPerRule: 'VEXIL_MAX_CONDITIONS_PER_RULE',
  maxVariantsPerFlag: 'VEXIL_MAX_VARIANTS_PER_FLAG',
  maxValueBytes: 'VEXIL_MAX_VALUE_BYTES',
  maxSegmentsPerOrg: 'VEXIL_MAX_SEGMENTS_PER_ORG',
  maxSegmentValues: 'VEXIL_MAX_SEGMENT_VALUES',
  maxPendingSchedulesPerFlag: 'VEXIL_MAX_PENDING_SCHEDULES_PER_FLAG',
  maxPendingSchedulesPerOrg: 'VEXIL_MAX_PENDING_SCHEDULES_PER_ORG',
});

const WHAT: Readonly<Record<keyof TenancyLimits, string>> = {
  maxFlagsPerOrg: 'flags in this organization',
  maxKeysPerOrg: 'management keys in this organization',
  maxConfigsPerFlag: 'configurations of one flag',
  maxRulesPerConfig: 'rules in one configuration',
  maxConditionsPerRule: 'conditions (or segments) in one rule or segment',
  maxVariantsPerFlag: 'variants of one flag',
  maxValueBytes: 'bytes of JSON in one value',
  maxSegmentsPerOrg: 'segments in this organization',
  maxSegmentValues: "values in one segment condition's list",
  maxPendingSchedulesPerFlag: 'pending scheduled changes of one flag',
  maxPendingSchedulesPerOrg: 'pending scheduled changes in this organization',
};

/** "at most 3 flags in this organization (VEXIL_MAX_FLAGS_PER_ORG=3)" */
export const describeLimit = (limits: TenancyLimits, which: keyof TenancyLimits): string =>
  `at most ${limits[which]} ${WHAT[which]} (${LIMIT_SETTING[which]}=${limits[which]})`;

/** 409 QUOTA_EXCEEDED for a count limit. */
export const quotaError = (
  limits: TenancyLimits,
  which: 'maxFlagsPerOrg' | 'maxKeysPerOrg' | 'maxConfigsPerFlag' | 'maxSegmentsPerOrg' | 'maxPendingSchedulesPerFlag' | 'maxPendingSchedulesPerOrg',
): VexilError =>
  quotaExceeded(`Quota exceeded: ${describeLimit(limits, which)}`);

const sizeError = (limits: TenancyLimits, which: keyof TenancyLimits, at: string): VexilError =>
  badRequest(`${at}: over the limit of ${describeLimit(limits, which)}`);

/** The size of a value as JSON text, in UTF-8 bytes (null/undefined: 4, "null"). */
export function jsonBytes(value: unknown): number {
  const text = JSON.stringify(value === undefined ? null : value) ?? 'null';
  return Buffer.byteLength(text, 'utf8');
}

function checkValue(limits: TenancyLimits, value: unknown, at: string): void {
  // A quick bound first: a short string can't be over (each UTF-16 unit is at most 3 UTF-8 bytes, escapes at most 6).
  if (typeof value === 'string' && value.length * 6 + 2 <= limits.maxValueBytes) return;
  if (jsonBytes(value) > limits.maxValueBytes) throw sizeError(limits, 'maxValueBytes', at);
}

/** Variants of one flag: their count and each value's size. */
export function checkVariantLimits(variants: readonly { value?: unknown }[], limits: TenancyLimits = DEFAULT_TENANCY_LIMITS): void {
  if (variants.length > limits.maxVariantsPerFlag) throw sizeError(limits, 'maxVariantsPerFlag', `variants (${variants.length})`);
  variants.forEach((v, i) => checkValue(limits, v.value, `variants[${i}].value`));
}

/** One configuration: its rules, each rule's conditions and segments, and each condition value's size. */
export function checkConfigLimits(
  config: { rules?: readonly { conditions: readonly { value?: unknown }[]; segments?: readonly string[] | null }[] | null },
  limits: TenancyLimits = DEFAULT_TENANCY_LIMITS,
): void {
  const rules = config.rules ?? [];
  if (rules.length > limits.maxRulesPerConfig) throw sizeError(limits, 'maxRulesPerConfig', `rules (${rules.length})`);
  rules.forEach((r, i) => {
    if (r.conditions.length > limits.maxConditionsPerRule) {
      throw sizeError(limits, 'maxConditionsPerRule', `rules[${i}].conditions (${r.conditions.length})`);
    }
    const segments = r.segments?.length ?? 0;
    if (segments > limits.maxConditionsPerRule) throw sizeError(limits, 'maxConditionsPerRule', `rules[${i}].segments (${segments})`);
    r.conditions.forEach((c, j) => checkValue(limits, c.value, `rules[${i}].conditions[${j}].value`));
  });
}

/**
 * One segment's conditions (docs/limits.md, "Segments"): their count, and each value's size, except
 * that an `in` / `not_in` list may hold up to maxSegmentValues items, each within maxValueBytes.
 */
export function checkSegmentLimits(
  conditions: readonly { operator: string; value?: unknown }[],
  limits: TenancyLimits = DEFAULT_TENANCY_LIMITS,
): void {
  if (conditions.length > limits.maxConditionsPerRule) {
    throw sizeError(limits, 'maxConditionsPerRule', `conditions (${conditions.length})`);
  }
  conditions.forEach((c, i) => {
    const at = `conditions[${i}].value`;
    if ((c.operator === 'in' || c.operator === 'not_in') && Array.isArray(c.value)) {
      if (c.value.length > limits.maxSegmentValues) throw sizeError(limits, 'maxSegmentValues', `${at} (${c.value.length} items)`);
      c.value.forEach((v, j) => checkValue(limits, v, `${at}[${j}]`));
    } else checkValue(limits, c.value, at);
  });
}
