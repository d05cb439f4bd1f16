/**
 * Input validation: pure functions that turn untrusted request data (REST bodies, GraphQL
 * inputs) into normalised domain inputs, or throw VexilError('BAD_REQUEST') with a message that
 * names the offending path ("variants[1].valueType: expected one of boolean, string, number,
 * json", "unknown field 'colour'"). No I/O: checks that need stored state (does the application
 * exist, does the stage belong to the flag) live with the callers.
 *
 * Conventions
 * - Objects are strict: unknown fields are 400.
 * - Optional fields that have no "null" meaning in the domain (tags, variants, isArchived, ...)
 *   treat an explicit null as absent, so GraphQL clients passing null variables behave like REST
 *   clients omitting the field. Nullable fields (description, clientId, activeFrom, ...) keep null.
 * - Numbers must be finite; date-times are ISO 8601 with a time zone and are returned normalised
 *   to `Date#toISOString()` form.
 */
import { z } from 'zod';
import { badRequest } from './errors.js';
import {
  PERMISSIONS,
  VALUE_TYPES,
  type Flag,
  type KillSwitchRule,
  type Permission,
  type ValueType,
  type Variant,
} from './types.js';
import { OPERATORS, isValidFieldPath } from '../evaluation/conditions.js';

// ---------------------------------------------------------------------------------------------
// Name rules
// ---------------------------------------------------------------------------------------------

/** Flag names (URL path segment, GraphQL argument). */
export const FLAG_NAME_RE = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;
/** Environment, application and organization names. */
export const NAME_RE = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
/** Management Key values: 64 lowercase hex characters. */
export const KEY_RE = /^[0-9a-f]{64}$/;
/** Management Key display names: any non-empty string after trimming, at most this long. */
export const KEY_NAME_MAX = 200;
/** Variant keys (and therefore defaultVariantKey, allocation keys, dependency variants). */
export const VARIANT_KEY_MAX = 128;
export const TAG_MAX = 64;
export const TAGS_MAX = 64;
export const DESCRIPTION_MAX = 4096;
export const USER_ID_MAX = 1024;
/** Rule ids and clientIds. */
export const ID_MAX = 128;

const FLAG_NAME_MSG =
  "must start with a letter or digit and contain only letters, digits, '_', '.', '-' (at most 128 characters)";
const NAME_MSG =
  "must start with a letter or digit and contain only letters, digits, '_', '.', '-' (at most 64 characters)";

// ---------------------------------------------------------------------------------------------
// Input shapes
// ---------------------------------------------------------------------------------------------

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
}

export interface UpdateFlagInput {
  type?: ValueType;
  description?: string | null;
  tags?: string[];
  variants?: VariantInput[];
  isArchived?: boolean;
  dependencies?: FlagDependencyInput[];
}

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

export interface EvaluationBody {
  userId: string;
  stage: string;
  clientId: string | null;
  context: Record<string, unknown> | null;
}

export interface CreateKeyInput {
  name: string;
  permissions: Permission[];
  application: string | null;
  environment: string | null;
}

export interface CreateOrganizationInput {
  name: string;
  environments: string[];
  applications: string[];
  subscriptionActive: boolean;
}

export interface PatchOrganizationInput {
  subscriptionActive: boolean;
}

// ---------------------------------------------------------------------------------------------
// Error formatting
// ---------------------------------------------------------------------------------------------

type PathSegment = PropertyKey;

const IDENT_RE = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/**
 * `['variants', 1, 'valueType']` -> `variants[1].valueType`. A path that starts with an index
 * (a top-level array) is prefixed with `root`: `environments[2]`.
 */
export function formatPath(path: readonly PathSegment[], root = ''): string {
  let out = '';
  for (const seg of path) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else {
      const s = String(seg);
      if (IDENT_RE.test(s)) out += out === '' ? s : `.${s}`;
      else out += `[${JSON.stringify(s)}]`;
    }
  }
  if (out.startsWith('[')) out = root + out;
  return out;
}

/** Short description of a value's JSON type for messages: 'null', 'array', 'string', ... */
export function describeType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number' && Number.isNaN(value)) return 'NaN';
  if (typeof value === 'number' && !Number.isFinite(value)) return 'Infinity';
  return typeof value;
}

const EXPECTED: Record<string, string> = {
  string: 'a string',
  number: 'a finite number',
  int: 'an integer',
  boolean: 'a boolean',
  array: 'an array',
  object: 'an object',
  null: 'null',
};

function quote(v: unknown): string {
  return typeof v === 'string' ? `'${v}'` : String(v);
}

function issueMessage(issue: z.core.$ZodIssue, root: string, what: string): string {
  const path = formatPath(issue.path as PathSegment[], root);
  const hasInput = 'input' in issue && issue.input !== undefined;
  const at = (msg: string) => (path === '' ? `${what}: ${msg}` : `${path}: ${msg}`);
  switch (issue.code) {
    case 'invalid_type': {
      if (!hasInput) return `${path === '' ? what : path} is required`;
      const got = (issue as { received?: string }).received ?? describeType(issue.input);
      return at(`expected ${EXPECTED[issue.expected] ?? issue.expected}, got ${got}`);
    }
    case 'invalid_value': {
      if (!hasInput) return `${path === '' ? what : path} is required`;
      const got = typeof issue.input === 'string' ? `'${issue.input}'` : describeType(issue.input);
      return at(`expected one of ${issue.values.map(String).join(', ')}, got ${got}`);
    }
    case 'unrecognized_keys': {
      const keys = issue.keys.map((k) => `'${k}'`).join(', ');
      const msg = issue.keys.length === 1 ? `unknown field ${keys}` : `unknown fields ${keys}`;
      return path === '' ? msg : `${path}: ${msg}`;
    }
    case 'too_small': {
      const min = Number(issue.minimum);
      if (issue.origin === 'string')
        return at(min <= 1 ? 'must not be empty' : `must be at least ${min} characters`);
      if (issue.origin === 'array') return at(min <= 1 ? 'must not be empty' : `must have at least ${min} items`);
      return at(`must be ${issue.inclusive ? '>=' : '>'} ${min}`);
    }
    case 'too_big': {
      const max = Number(issue.maximum);
      if (issue.origin === 'string') return at(`must be at most ${max} characters`);
      if (issue.origin === 'array') return at(`must have at most ${max} items`);
      return at(`must be ${issue.inclusive ? '<=' : '<'} ${max}`);
    }
    case 'invalid_union':
      return at(hasInput ? `invalid value of type ${describeType(issue.input)}` : 'invalid value');
    default:
      // invalid_format (regexes carry our own messages), custom, not_multiple_of, ...
      return at(issue.message);
  }
}

/**
 * Parses `data` with a zod schema; a failure becomes VexilError('BAD_REQUEST') whose message
 * joins up to three issues, each naming its path. `what` names the whole input in messages about
 * the root ("flag: expected an object, got array") and prefixes paths of top-level arrays
 * ("environments[1]: ...").
 */
export function parseInput<T>(schema: z.ZodType<T>, data: unknown, what: string): T {
  const result = schema.safeParse(data, { reportInput: true });
  if (result.success) {
    assertNoNul(result.data, what);
    return result.data;
  }
  const messages: string[] = [];
  for (const issue of result.error.issues) {
    const m = issueMessage(issue, what, what);
    if (!messages.includes(m)) messages.push(m);
    if (messages.length === 3) break;
  }
  throw badRequest(messages.join('; '));
}

/**
 * PostgreSQL text and jsonb cannot hold U+0000, so a string (or object key) containing it can
 * never be stored: 400 naming the path, instead of a database error (500). Iterative, so that a
 * deeply nested JSON value cannot overflow the stack; the path is rebuilt only on failure.
 */
function assertNoNul(data: unknown, what: string): void {
  type Item = { value: unknown; parent: Item | null; seg: PathSegment | null };
  const fail = (item: Item, key?: string): never => {
    const path: PathSegment[] = key === undefined ? [] : [key];
    for (let i: Item | null = item; i !== null && i.seg !== null; i = i.parent) path.unshift(i.seg);
    const at = formatPath(path, what);
    throw badRequest(`${at === '' ? what : at}: must not contain the NUL character (U+0000)`);
  };
  const stack: Item[] = [{ value: data, parent: null, seg: null }];
  while (stack.length > 0) {
    const item = stack.pop()!;
    const v = item.value;
    if (typeof v === 'string') {
      if (v.includes('\u0000')) fail(item);
    } else if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) stack.push({ value: v[i], parent: item, seg: i });
    } else if (isPlainObject(v)) {
      for (const k of Object.keys(v)) {
        if (k.includes('\u0000')) fail(item, k);
        stack.push({ value: v[k], parent: item, seg: k });
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Small shared schemas and checks
// ---------------------------------------------------------------------------------------------

const flagName = z.string().regex(FLAG_NAME_RE, { error: FLAG_NAME_MSG });
const name = z.string().regex(NAME_RE, { error: NAME_MSG });
const variantKey = z.string().min(1).max(VARIANT_KEY_MAX);
const finite = z.number(); // zod 4 rejects NaN and +-Infinity
const percentage = finite.min(0).max(100);

/** Optional field where null means "not given". */
function optionalNonNull<S extends z.ZodType>(schema: S) {
  return schema.nullable().optional();
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

/** True when `v` is a JSON value (null, boolean, finite number, string, array, plain object). */
export function isJsonValue(v: unknown, depth = 0): boolean {
  if (depth > 256) return false;
  if (v === null) return true;
  switch (typeof v) {
    case 'boolean':
    case 'string':
      return true;
    case 'number':
      return Number.isFinite(v);
    case 'object':
      if (Array.isArray(v)) return v.every((x) => isJsonValue(x, depth + 1));
      if (!isPlainObject(v)) return false;
      for (const k of Object.keys(v)) if (!isJsonValue(v[k], depth + 1)) return false;
      return true;
    default:
      return false;
  }
}

/** Throws when `list` has two names equal case-insensitively. */
function assertUniqueCI(list: readonly string[], root: string): void {
  const seen = new Map<string, number>();
  list.forEach((n, i) => {
    const k = n.toLowerCase();
    const prev = seen.get(k);
    if (prev !== undefined)
      throw badRequest(`${root}[${i}]: duplicate name '${n}' (same as ${root}[${prev}] '${list[prev]}', names are case-insensitive)`);
    seen.set(k, i);
  });
}

function dedupe<T>(list: readonly T[]): T[] {
  return [...new Set(list)];
}

const tagsSchema = z
  .array(z.string().trim().min(1).max(TAG_MAX))
  .max(TAGS_MAX);

// ---------------------------------------------------------------------------------------------
// Date-times
// ---------------------------------------------------------------------------------------------

const DATE_TIME_RE =
  /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?(?:([Zz])|([+-])(\d{2})(?::?(\d{2}))?)$/;

function daysInMonth(year: number, month: number): number {
  return [31, year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][
    month - 1
  ];
}

/**
 * Parses an ISO 8601 date-time that carries a time zone (`Z` or `±hh[:mm]`) and returns it
 * normalised with `Date#toISOString()` (UTC, milliseconds). Strings without a zone, impossible
 * dates (2024-02-30) and anything else are 400. Also used by the GraphQL DateTime scalar.
 */
export function parseDateTime(value: unknown, path = 'DateTime'): string {
  const fail = (why: string): never => {
    throw badRequest(`${path}: ${why}`);
  };
  if (value instanceof Date) {
    if (Number.isNaN(value.getTime())) fail('invalid date');
    return value.toISOString();
  }
  if (typeof value !== 'string')
    return fail(`expected an ISO 8601 date-time string with time zone, got ${describeType(value)}`);
  const m = DATE_TIME_RE.exec(value);
  if (!m) {
    const noZone = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}([.,]\d+)?)?$/.test(value);
    return fail(
      noZone
        ? `'${value}' has no time zone (add 'Z' or an offset such as '+02:00')`
        : `'${value}' is not an ISO 8601 date-time with time zone (e.g. 2024-05-01T12:00:00Z)`,
    );
  }
  const [, ys, mos, ds, hs, mis, ss, fs, z, sign, ohs, oms] = m;
  const year = Number(ys), month = Number(mos), day = Number(ds);
  const hour = Number(hs), minute = Number(mis), second = ss === undefined ? 0 : Number(ss);
  const ms = fs === undefined ? 0 : Math.floor(Number(`0.${fs}`) * 1000);
  if (month < 1 || month > 12) fail(`'${value}' has an invalid month`);
  if (day < 1 || day > daysInMonth(year, month)) fail(`'${value}' has an invalid day`);
  if (hour > 23 || minute > 59 || second > 59) fail(`'${value}' has an invalid time`);
  let offsetMin = 0;
  if (z === undefined) {
    const oh = Number(ohs), om = oms === undefined ? 0 : Number(oms);
    if (oh > 23 || om > 59) fail(`'${value}' has an invalid time zone offset`);
    offsetMin = (sign === '-' ? -1 : 1) * (oh * 60 + om);
  }
  const d = new Date(0);
  d.setUTCFullYear(year, month - 1, day);
  d.setUTCHours(hour, minute, second, ms);
  const t = d.getTime() - offsetMin * 60_000;
  const out = new Date(t);
  if (Number.isNaN(t) || out.getUTCFullYear() < 0 || out.getUTCFullYear() > 9999)
    fail(`'${value}' is out of range`);
  return out.toISOString();
}

// ---------------------------------------------------------------------------------------------
// Simple names and name lists
// ---------------------------------------------------------------------------------------------

/** One environment / application / organization name (e.g. `renameEnvironment(to)`). */
export function parseName(data: unknown, what: string): string {
  return parseInput(name, data, what);
}

/** One flag name (FLAG_NAME_RE). */
export function parseFlagName(data: unknown, what = 'name'): string {
  return parseInput(flagName, data, what);
}

/** The organization's environments or applications: non-empty, valid, case-insensitively unique. */
export function parseNameList(data: unknown, what: 'environments' | 'applications'): string[] {
  const list = parseInput(z.array(name).min(1), data, what);
  assertUniqueCI(list, what);
  return list;
}

/**
 * The environments of one flag (`createFlag.environments`, `updateFlagEnvironments`): valid,
 * case-insensitively unique names; may be empty (the flag then evaluates nowhere).
 */
export function parseFlagEnvironments(data: unknown, what = 'environments'): string[] {
  const list = parseInput(z.array(name), data, what);
  assertUniqueCI(list, what);
  return list;
}

// ---------------------------------------------------------------------------------------------
// Flags
// ---------------------------------------------------------------------------------------------

const variantSchema = z.strictObject({
  key: variantKey,
  value: z.unknown().optional(),
  valueType: z.enum(VALUE_TYPES),
});

const dependencySchema = z.strictObject({
  flag: flagName,
  variants: optionalNonNull(z.array(variantKey)),
});

const createFlagSchema = z.strictObject({
  name: flagName,
  project: name,
  type: z.enum(VALUE_TYPES),
  description: z.string().max(DESCRIPTION_MAX).nullable().optional(),
  tags: optionalNonNull(tagsSchema),
  variants: z.array(variantSchema),
  environments: optionalNonNull(z.array(name)),
  dependencies: optionalNonNull(z.array(dependencySchema)),
});

const updateFlagSchema = z.strictObject({
  type: optionalNonNull(z.enum(VALUE_TYPES)),
  description: z.string().max(DESCRIPTION_MAX).nullable().optional(),
  tags: optionalNonNull(tagsSchema),
  variants: optionalNonNull(z.array(variantSchema)),
  isArchived: optionalNonNull(z.boolean()),
  dependencies: optionalNonNull(z.array(dependencySchema)),
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
export function parseCreateFlag(data: unknown): CreateFlagInput {
  const p = parseInput(createFlagSchema, data, 'flag');
  const out: CreateFlagInput = {
    name: p.name,
    project: p.project,
    type: p.type,
    description: p.description ?? null,
    tags: p.tags == null ? [] : dedupe(p.tags),
    variants: validateVariants(p.type, p.variants),
    dependencies: p.dependencies == null ? [] : normaliseDependencies(p.dependencies, p.name),
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
export function parseUpdateFlag(data: unknown): UpdateFlagInput {
  const p = parseInput(updateFlagSchema, data, 'flag update');
  const out: UpdateFlagInput = {};
  if (p.type != null) out.type = p.type;
  if (p.description !== undefined) out.description = p.description;
  if (p.tags != null) out.tags = dedupe(p.tags);
  if (p.variants != null) out.variants = p.type != null ? validateVariants(p.type, p.variants) : checkVariantKeys(p.variants);
  if (p.isArchived != null) out.isArchived = p.isArchived;
  if (p.dependencies != null) out.dependencies = normaliseDependencies(p.dependencies, null);
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

// ---------------------------------------------------------------------------------------------
// Stage configurations
// ---------------------------------------------------------------------------------------------

const conditionSchema = z.strictObject({
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
  allocations: z.array(allocationSchema).min(1),
});

const upsertConfigSchema = z.strictObject({
  stage: name,
  clientId: z.string().min(1).max(ID_MAX).nullable().optional(),
  enabled: z.boolean(),
  defaultVariantKey: variantKey,
  rolloutPercentage: percentage,
  rules: optionalNonNull(z.array(ruleSchema)),
  activeFrom: z.unknown().optional(),
  activeUntil: z.unknown().optional(),
  enrollmentCutoff: percentage.nullable().optional(),
});

const ARRAY_OPERATORS = new Set(['in', 'not_in']);
const STRING_OPERATORS = new Set(['starts_with', 'ends_with']);
const NUMBER_OPERATORS = new Set(['<', '<=', '>', '>=']);

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
  const operators = OPERATORS as readonly string[];
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
    rule.conditions.forEach((c, i) => {
      const cat = `${at}.conditions[${i}]`;
      if (typeof c.field !== 'string' || !isValidFieldPath(c.field))
        throw badRequest(
          `${cat}.field: invalid path ${quote(c.field)} (dot-separated names of letters, digits and underscores)`,
        );
      if (!operators.includes(c.operator))
        throw badRequest(`${cat}.operator: expected one of ${operators.join(', ')}, got ${quote(c.operator)}`);
      const value = c.value === undefined ? null : c.value;
      if (!isJsonValue(value)) throw badRequest(`${cat}.value: not a JSON value`);
      if (ARRAY_OPERATORS.has(c.operator) && !Array.isArray(value))
        throw badRequest(`${cat}.value: operator '${c.operator}' needs an array value, got ${describeType(value)}`);
      if (STRING_OPERATORS.has(c.operator) && typeof value !== 'string')
        throw badRequest(`${cat}.value: operator '${c.operator}' needs a string value, got ${describeType(value)}`);
      if (NUMBER_OPERATORS.has(c.operator) && typeof value !== 'number')
        throw badRequest(`${cat}.value: operator '${c.operator}' needs a number value, got ${describeType(value)}`);
    });
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
 * (clientId, activeFrom, activeUntil, enrollmentCutoff null; rules []; condition values null when
 * absent; date-times normalised). Checks everything that does not need the flag; the caller then
 * runs validateConfigAgainstFlag.
 */
export function parseUpsertFlagConfig(data: unknown): UpsertFlagConfigInput {
  const p = parseInput(upsertConfigSchema, data, 'flag configuration');
  const out: UpsertFlagConfigInput = {
    stage: p.stage,
    clientId: p.clientId ?? null,
    enabled: p.enabled,
    defaultVariantKey: p.defaultVariantKey,
    rolloutPercentage: p.rolloutPercentage,
    rules: (p.rules ?? []).map((r) => ({
      id: r.id ?? null,
      priority: r.priority,
      conditions: r.conditions.map((c) => ({
        field: c.field,
        operator: c.operator,
        value: c.value === undefined ? null : c.value,
      })),
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

// ---------------------------------------------------------------------------------------------
// Evaluation (hot path: hand-written, no zod)
// ---------------------------------------------------------------------------------------------

const EVAL_FIELDS = new Set(['userId', 'stage', 'clientId', 'context']);

/**
 * Body of `POST /flags/{name}` (SPEC 4.1). Missing or null stage / userId: "stage is required" /
 * "userId is required". userId is a non-empty string of at most 1024 characters; clientId a
 * non-empty string or null; context a plain object or null. Unknown fields are 400.
 */
export function parseEvaluationBody(data: unknown): EvaluationBody {
  if (!isPlainObject(data))
    throw badRequest(`evaluation request: expected a JSON object, got ${describeType(data)}`);
  const errors: string[] = [];
  for (const k in data) {
    if (!EVAL_FIELDS.has(k)) errors.push(`unknown field '${k}'`);
  }
  const { userId, stage, clientId, context } = data;
  if (stage === undefined || stage === null) errors.push('stage is required');
  else if (typeof stage !== 'string') errors.push(`stage: expected a string, got ${describeType(stage)}`);
  else if (stage.length === 0) errors.push('stage: must not be empty');
  if (userId === undefined || userId === null) errors.push('userId is required');
  else if (typeof userId !== 'string') errors.push(`userId: expected a string, got ${describeType(userId)}`);
  else if (userId.length === 0) errors.push('userId: must not be empty');
  else if (userId.length > USER_ID_MAX) errors.push(`userId: must be at most ${USER_ID_MAX} characters`);
  if (clientId !== undefined && clientId !== null) {
    if (typeof clientId !== 'string') errors.push(`clientId: expected a string or null, got ${describeType(clientId)}`);
    else if (clientId.length === 0) errors.push('clientId: must not be empty');
  }
  if (context !== undefined && context !== null && !isPlainObject(context))
    errors.push(`context: expected an object or null, got ${describeType(context)}`);
  if (errors.length > 0) throw badRequest(errors.slice(0, 3).join('; '));
  return {
    userId: userId as string,
    stage: stage as string,
    clientId: (clientId as string | null | undefined) ?? null,
    context: (context as Record<string, unknown> | null | undefined) ?? null,
  };
}

// ---------------------------------------------------------------------------------------------
// Management Keys, organizations, kill switch
// ---------------------------------------------------------------------------------------------

const createKeySchema = z.strictObject({
  name: z.string().trim().min(1).max(KEY_NAME_MAX),
  permissions: z.array(z.enum(PERMISSIONS)).min(1),
  application: name.nullable().optional(),
  environment: name.nullable().optional(),
});

/** `POST /api/keys`, GraphQL `createManagementKey`. Name trimmed; permissions unique. */
export function parseCreateKey(data: unknown): CreateKeyInput {
  const p = parseInput(createKeySchema, data, 'management key');
  const seen = new Set<Permission>();
  p.permissions.forEach((perm, i) => {
    if (seen.has(perm)) throw badRequest(`permissions[${i}]: duplicate permission '${perm}'`);
    seen.add(perm);
  });
  return {
    name: p.name,
    permissions: p.permissions,
    application: p.application ?? null,
    environment: p.environment ?? null,
  };
}

const createOrgSchema = z.strictObject({
  name,
  environments: z.array(name).min(1),
  applications: z.array(name).min(1),
  subscriptionActive: z.boolean().optional(),
});

/** Operator API `POST /api/operator/organizations`; subscriptionActive defaults to true. */
export function parseCreateOrganization(data: unknown): CreateOrganizationInput {
  const p = parseInput(createOrgSchema, data, 'organization');
  assertUniqueCI(p.environments, 'environments');
  assertUniqueCI(p.applications, 'applications');
  return {
    name: p.name,
    environments: p.environments,
    applications: p.applications,
    subscriptionActive: p.subscriptionActive ?? true,
  };
}

const patchOrgSchema = z.strictObject({ subscriptionActive: z.boolean() });

/** Operator API `PATCH /api/operator/organizations/{name}`. */
export function parsePatchOrganization(data: unknown): PatchOrganizationInput {
  const p = parseInput(patchOrgSchema, data, 'organization');
  return { subscriptionActive: p.subscriptionActive };
}

const killSwitchSchema = z.array(
  z.strictObject({
    flag: flagName.nullable().optional(),
    application: name.nullable().optional(),
    environment: name.nullable().optional(),
  }),
);

/**
 * GraphQL `replaceKillSwitch(rules)`: each rule's absent fields become null. A rule whose fields
 * are all null matches every flag (a global kill switch). Duplicate rules are dropped.
 */
export function parseKillSwitchRules(data: unknown): KillSwitchRule[] {
  const p = parseInput(killSwitchSchema, data, 'rules');
  const seen = new Set<string>();
  const out: KillSwitchRule[] = [];
  for (const r of p) {
    const rule = { flag: r.flag ?? null, application: r.application ?? null, environment: r.environment ?? null };
    const k = JSON.stringify([rule.flag, rule.application, rule.environment]);
    if (seen.has(k)) continue;
    seen.add(k);
    out.push(rule);
  }
  return out;
}
