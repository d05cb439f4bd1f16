/** Flag create / update bodies, their variants and dependencies. */
import { z } from 'zod';
import { badRequest } from '../errors.js';
import { FLAG_PURPOSES, VALUE_TYPES, type FlagPurpose, type ValueType, type Variant } from '../types.js';
import {
  DESCRIPTION_MAX,
  EXPECTED,
  VARIANT_KEY_MAX,
  assertUniqueCI,
  dedupe,
  describeType,
  flagName,
  isJsonValue,
  isPlainObject,
  name,
  optionalNonNull,
  parseInput,
  quote,
  tagsSchema,
  variantKey,
} from './common.js';
import { checkVariantLimits, DEFAULT_TENANCY_LIMITS, type TenancyLimits } from './tenancy-limits.js';

export interface VariantInput {
  key: string;
  value?: unknown;
  valueType: ValueType;
}

export interface FlagDependencyInput {
  flag: string;
  variants?: string[] | null;
}

export interface CreateFlagInput {
  name: string;
  project: string;
  type: ValueType;
  description?: string | null;
  tags?: string[];
  variants: VariantInput[];
  /** Absent: the flag uses every environment of its organization. */
  environments?: string[];
  dependencies?: FlagDependencyInput[];
  /** Absent: `release`. */
  purpose?: FlagPurpose;
}

export interface UpdateFlagInput {
  type?: ValueType;
  description?: string | null;
  tags?: string[];
  variants?: VariantInput[];
  isArchived?: boolean;
  dependencies?: FlagDependencyInput[];
  purpose?: FlagPurpose;
}

const variantSchema = z.strictObject({
  key: variantKey,
  value: z.unknown().optional(),
  valueType: z.enum(VALUE_TYPES),
});

const dependencySchema = z.strictObject({
  flag: flagName,
  variants: optionalNonNull(z.array(variantKey)),
});

export const createFlagSchema = z.strictObject({
  name: flagName,
  project: name,
  type: z.enum(VALUE_TYPES),
  description: z.string().max(DESCRIPTION_MAX).nullable().optional(),
  tags: optionalNonNull(tagsSchema),
  variants: z.array(variantSchema),
  environments: optionalNonNull(z.array(name)),
  dependencies: optionalNonNull(z.array(dependencySchema)),
  purpose: optionalNonNull(z.enum(FLAG_PURPOSES)),
});

export const updateFlagSchema = z.strictObject({
  type: optionalNonNull(z.enum(VALUE_TYPES)),
  description: z.string().max(DESCRIPTION_MAX).nullable().optional(),
  tags: optionalNonNull(tagsSchema),
  variants: optionalNonNull(z.array(variantSchema)),
  isArchived: optionalNonNull(z.boolean()),
  dependencies: optionalNonNull(z.array(dependencySchema)),
  purpose: optionalNonNull(z.enum(FLAG_PURPOSES)),
});

function normaliseDependencies(
  deps: readonly { flag: string; variants?: string[] | null }[],
  selfName: string | null,
): { flag: string; variants: string[] | null }[] {
  const seen = new Map<string, number>();
  return deps.map((d, i) => {
    if (selfName !== null && d.flag === selfName)
      throw badRequest(`dependencies[${i}].flag: a flag cannot depend on itself`);
    const prev = seen.get(d.flag);
    if (prev !== undefined)
      throw badRequest(`dependencies[${i}].flag: duplicate dependency on '${d.flag}' (see dependencies[${prev}])`);
    seen.set(d.flag, i);
    return { flag: d.flag, variants: d.variants == null ? null : dedupe(d.variants) };
  });
}

/**
 * `POST /api/flags`, GraphQL `createFlag`. Returns defaults filled in (description null, tags [],
 * dependencies [] with variants null when absent); `environments` stays absent when not given.
 * Variants are checked against `type` with validateVariants.
 */
export function parseCreateFlag(data: unknown, limits: TenancyLimits = DEFAULT_TENANCY_LIMITS): CreateFlagInput {
  const p = parseInput(createFlagSchema, data, 'flag');
  checkVariantLimits(p.variants, limits);
  const out: CreateFlagInput = {
    name: p.name,
    project: p.project,
    type: p.type,
    description: p.description ?? null,
    tags: p.tags == null ? [] : dedupe(p.tags),
    variants: validateVariants(p.type, p.variants),
    dependencies: p.dependencies == null ? [] : normaliseDependencies(p.dependencies, p.name),
    purpose: p.purpose ?? 'release',
  };
  if (p.environments != null) {
    assertUniqueCI(p.environments, 'environments');
    out.environments = p.environments;
  }
  return out;
}

/**
 * `PUT /api/flags/{name}`, GraphQL `updateFlag`: partial, absent (or null, except description)
 * fields are kept. When both `type` and `variants` are given the variants are checked against
 * that type here; otherwise the caller runs validateVariants against the stored flag's type or
 * variants.
 */
export function parseUpdateFlag(data: unknown, limits: TenancyLimits = DEFAULT_TENANCY_LIMITS): UpdateFlagInput {
  const p = parseInput(updateFlagSchema, data, 'flag update');
  if (p.variants != null) checkVariantLimits(p.variants, limits);
  const out: UpdateFlagInput = {};
  if (p.type != null) out.type = p.type;
  if (p.description !== undefined) out.description = p.description;
  if (p.tags != null) out.tags = dedupe(p.tags);
  if (p.variants != null) out.variants = p.type != null ? validateVariants(p.type, p.variants) : checkVariantKeys(p.variants);
  if (p.isArchived != null) out.isArchived = p.isArchived;
  if (p.dependencies != null) out.dependencies = normaliseDependencies(p.dependencies, null);
  if (p.purpose != null) out.purpose = p.purpose;
  return out;
}

function checkVariantKeys<V extends { key: string }>(variants: readonly V[]): V[] {
  const seen = new Map<string, number>();
  variants.forEach((v, i) => {
    const prev = seen.get(v.key);
    if (prev !== undefined)
      throw badRequest(`variants[${i}].key: duplicate variant key '${v.key}' (see variants[${prev}])`);
    seen.set(v.key, i);
  });
  return [...variants];
}

function valueMatches(type: ValueType, value: unknown): boolean {
  switch (type) {
    case 'boolean':
      return typeof value === 'boolean';
    case 'string':
      return typeof value === 'string';
    case 'number':
      return typeof value === 'number' && Number.isFinite(value);
    case 'json':
      return isJsonValue(value);
  }
}

/**
 * Semantic variant check against the flag's type: every valueType equals `type`, every value
 * matches it (json: any JSON value including null; an absent value counts as null), keys are
 * 1..128 characters and unique. Returns normalised `Variant`s ({key, value, valueType}).
 */
export function validateVariants(type: ValueType, variants: readonly VariantInput[]): Variant[] {
  if (!(VALUE_TYPES as readonly string[]).includes(type))
    throw badRequest(`type: expected one of ${VALUE_TYPES.join(', ')}, got ${quote(type)}`);
  if (!Array.isArray(variants)) throw badRequest(`variants: expected an array, got ${describeType(variants)}`);
  const out: Variant[] = [];
  const seen = new Map<string, number>();
  variants.forEach((v, i) => {
    const at = `variants[${i}]`;
    if (!isPlainObject(v)) throw badRequest(`${at}: expected an object, got ${describeType(v)}`);
    if (typeof v.key !== 'string' || v.key.length === 0 || v.key.length > VARIANT_KEY_MAX)
      throw badRequest(`${at}.key: expected a non-empty string of at most ${VARIANT_KEY_MAX} characters`);
    if (!(VALUE_TYPES as readonly unknown[]).includes(v.valueType))
      throw badRequest(`${at}.valueType: expected one of ${VALUE_TYPES.join(', ')}, got ${quote(v.valueType)}`);
    if (v.valueType !== type)
      throw badRequest(`${at}.valueType: '${v.valueType}' does not match the flag type '${type}'`);
    const value = v.value === undefined ? null : v.value;
    if (!valueMatches(type, value))
      throw badRequest(
        `${at}.value: expected ${type === 'json' ? 'a JSON value' : EXPECTED[type]} for valueType ${type}, got ${describeType(value)}`,
      );
    const prev = seen.get(v.key);
    if (prev !== undefined)
      throw badRequest(`${at}.key: duplicate variant key '${v.key}' (see variants[${prev}])`);
    seen.set(v.key, i);
    out.push({ key: v.key, value, valueType: type });
  });
  return out;
}
