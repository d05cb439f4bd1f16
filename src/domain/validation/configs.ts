/** Stage configurations of a flag: rules, conditions, allocations, time window. */
import { z } from 'zod';
import { badRequest } from '../errors.js';
import type { Flag } from '../types.js';
import { OPERATORS, isOperator, isValidFieldPath } from '../condition-syntax.js';
import {
  ID_MAX,
  dedupe,
  describeType,
  finite,
  flagName,
  isJsonValue,
  name,
  optionalNonNull,
  parseInput,
  percentage,
  quote,
  variantKey,
} from './common.js';
import { checkConfigLimits, DEFAULT_TENANCY_LIMITS, type TenancyLimits } from './tenancy-limits.js';
import { parseDateTime } from './datetime.js';

export interface ConditionInput {
  field: string;
  operator: string;
  value?: unknown;
}

export interface AllocationInput {
  variantKey: string;
  percentage: number;
}

export interface RuleInput {
  id?: string | null;
  priority: number;
  conditions: ConditionInput[];
  /** Segment names (docs/evaluation.md, "Segments"); absent or null: none. */
  segments?: string[] | null;
  allocations: AllocationInput[];
}

export interface UpsertFlagConfigInput {
  stage: string;
  clientId?: string | null;
  enabled: boolean;
  defaultVariantKey: string;
  rolloutPercentage: number;
  rules?: RuleInput[];
  activeFrom?: string | null;
  activeUntil?: string | null;
  enrollmentCutoff?: number | null;
}

const DATE_TIME_OR_NULL = { anyOf: [{ type: 'string', format: 'date-time' }, { type: 'null' }] };

export const conditionSchema = z.strictObject({
  field: z.string(),
  operator: z.string(),
  value: z.unknown().optional(),
});

const allocationSchema = z.strictObject({
  variantKey,
  percentage,
});

const ruleSchema = z.strictObject({
  id: z.string().min(1).max(ID_MAX).nullable().optional(),
  // GraphQL's Int is 32-bit: a priority must round-trip through both APIs.
  priority: finite.int().min(-2147483648).max(2147483647),
  conditions: z.array(conditionSchema),
  // Segment names follow flag names' pattern; whether each exists is checked by the write.
  segments: optionalNonNull(z.array(flagName)),
  allocations: z.array(allocationSchema).min(1),
});

export const upsertConfigSchema = z.strictObject({
  stage: name,
  clientId: z.string().min(1).max(ID_MAX).nullable().optional(),
  enabled: z.boolean(),
  defaultVariantKey: variantKey,
  rolloutPercentage: percentage,
  rules: optionalNonNull(z.array(ruleSchema)),
  // Checked by parseDateTime (ISO 8601 with a time zone); the meta describes it to OpenAPI.
  activeFrom: z.unknown().optional().meta(DATE_TIME_OR_NULL),
  activeUntil: z.unknown().optional().meta(DATE_TIME_OR_NULL),
  enrollmentCutoff: percentage.nullable().optional(),
});

const ARRAY_OPERATORS = new Set(['in', 'not_in']);
const STRING_OPERATORS = new Set(['starts_with', 'ends_with']);
const NUMBER_OPERATORS = new Set(['<', '<=', '>', '>=']);

/**
 * One condition's syntax (src/domain/condition-syntax.ts) and the value its operator needs; `at`
 * names it in messages. Rules' conditions and segments' conditions alike.
 */
export function checkCondition(c: ConditionInput, at: string): void {
  if (typeof c.field !== 'string' || !isValidFieldPath(c.field))
    throw badRequest(`${at}.field: invalid path ${quote(c.field)} (dot-separated names of letters, digits and underscores)`);
  if (!isOperator(c.operator))
    throw badRequest(`${at}.operator: expected one of ${OPERATORS.join(', ')}, got ${quote(c.operator)}`);
  const value = c.value === undefined ? null : c.value;
  if (!isJsonValue(value)) throw badRequest(`${at}.value: not a JSON value`);
  if (ARRAY_OPERATORS.has(c.operator) && !Array.isArray(value))
    throw badRequest(`${at}.value: operator '${c.operator}' needs an array value, got ${describeType(value)}`);
  if (STRING_OPERATORS.has(c.operator) && typeof value !== 'string')
    throw badRequest(`${at}.value: operator '${c.operator}' needs a string value, got ${describeType(value)}`);
  if (NUMBER_OPERATORS.has(c.operator) && typeof value !== 'number')
    throw badRequest(`${at}.value: operator '${c.operator}' needs a number value, got ${describeType(value)}`);
}

/** A condition as stored: every field present, an absent value null. */
export const normaliseCondition = (c: ConditionInput): { field: string; operator: string; value: unknown } => ({
  field: c.field,
  operator: c.operator,
  value: c.value === undefined ? null : c.value,
});

/** Checks of a configuration that need no flag; shared by parse and validateConfigAgainstFlag. */
function checkConfigShape(input: UpsertFlagConfigInput): void {
  const inRange = (v: unknown) => typeof v === 'number' && Number.isFinite(v) && v >= 0 && v <= 100;
  if (!inRange(input.rolloutPercentage))
    throw badRequest(`rolloutPercentage: must be a number between 0 and 100, got ${String(input.rolloutPercentage)}`);
  if (input.enrollmentCutoff != null && !inRange(input.enrollmentCutoff))
    throw badRequest(`enrollmentCutoff: must be a number between 0 and 100 or null, got ${String(input.enrollmentCutoff)}`);
  const from = input.activeFrom == null ? null : parseDateTime(input.activeFrom, 'activeFrom');
  const until = input.activeUntil == null ? null : parseDateTime(input.activeUntil, 'activeUntil');
  if (from !== null && until !== null && Date.parse(from) >= Date.parse(until))
    throw badRequest(`activeFrom: must be before activeUntil (${from} is not before ${until})`);
  const ids = new Map<string, number>();
  (input.rules ?? []).forEach((rule, r) => {
    const at = `rules[${r}]`;
    if (!Number.isInteger(rule.priority) || rule.priority < -2147483648 || rule.priority > 2147483647)
      throw badRequest(`${at}.priority: expected an integer between -2147483648 and 2147483647, got ${String(rule.priority)}`);
    if (rule.id != null) {
      const prev = ids.get(rule.id);
      if (prev !== undefined)
        throw badRequest(`${at}.id: duplicate rule id '${rule.id}' (see rules[${prev}])`);
      ids.set(rule.id, r);
    }
    rule.conditions.forEach((c, i) => checkCondition(c, `${at}.conditions[${i}]`));
    if (rule.allocations.length === 0) throw badRequest(`${at}.allocations: must not be empty`);
    let sum = 0;
    const keys = new Map<string, number>();
    rule.allocations.forEach((a, i) => {
      if (!inRange(a.percentage))
        throw badRequest(`${at}.allocations[${i}].percentage: must be a number between 0 and 100`);
      const prev = keys.get(a.variantKey);
      if (prev !== undefined)
        throw badRequest(
          `${at}.allocations[${i}].variantKey: duplicate variant '${a.variantKey}' (see allocations[${prev}])`,
        );
      keys.set(a.variantKey, i);
      sum += a.percentage;
    });
    if (Math.abs(sum - 100) > 1e-9)
      throw badRequest(`${at}.allocations: percentages must sum to 100, got ${sum}`);
  });
}

/**
 * `POST /api/flags/{name}/configs`, GraphQL `upsertFlagConfig`. Returns every field filled in
 * (clientId, activeFrom, activeUntil, enrollmentCutoff null; rules [], a rule's segments []; condition values null when
 * absent; date-times normalised). Checks everything that does not need the flag; the caller then
 * runs validateConfigAgainstFlag.
 */
export function parseUpsertFlagConfig(data: unknown, limits: TenancyLimits = DEFAULT_TENANCY_LIMITS): UpsertFlagConfigInput {
  const p = parseInput(upsertConfigSchema, data, 'flag configuration');
  checkConfigLimits(p, limits);
  const out: UpsertFlagConfigInput = {
    stage: p.stage,
    clientId: p.clientId ?? null,
    enabled: p.enabled,
    defaultVariantKey: p.defaultVariantKey,
    rolloutPercentage: p.rolloutPercentage,
    rules: (p.rules ?? []).map((r) => ({
      id: r.id ?? null,
      priority: r.priority,
      conditions: r.conditions.map(normaliseCondition),
      segments: r.segments == null ? [] : dedupe(r.segments),
      allocations: r.allocations.map((a) => ({ variantKey: a.variantKey, percentage: a.percentage })),
    })),
    activeFrom: p.activeFrom == null ? null : parseDateTime(p.activeFrom, 'activeFrom'),
    activeUntil: p.activeUntil == null ? null : parseDateTime(p.activeUntil, 'activeUntil'),
    enrollmentCutoff: p.enrollmentCutoff ?? null,
  };
  checkConfigShape(out);
  return out;
}

/**
 * Semantic checks of a configuration against its flag: defaultVariantKey and every allocation
 * key name a variant of the flag, plus every flag-independent rule of parseUpsertFlagConfig
 * (allocations non-empty and summing to 100, unique rule ids, integer priorities, valid condition
 * paths and operators, array values for in/not_in, percentages in [0, 100], ordered time window).
 */
export function validateConfigAgainstFlag(flag: Flag, input: UpsertFlagConfigInput): void {
  checkConfigShape(input);
  const keys = new Set(flag.variants.map((v) => v.key));
  const known = () =>
    flag.variants.length === 0 ? 'the flag has no variants' : `variants: ${flag.variants.map((v) => v.key).join(', ')}`;
  if (!keys.has(input.defaultVariantKey))
    throw badRequest(
      `defaultVariantKey: '${input.defaultVariantKey}' is not a variant of flag '${flag.name}' (${known()})`,
    );
  (input.rules ?? []).forEach((rule, r) =>
    rule.allocations.forEach((a, i) => {
      if (!keys.has(a.variantKey))
        throw badRequest(
          `rules[${r}].allocations[${i}].variantKey: '${a.variantKey}' is not a variant of flag '${flag.name}' (${known()})`,
        );
    }),
  );
}
