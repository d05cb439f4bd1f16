/**
 * Shared pieces of input validation: name rules and limits, zod issue -> message formatting
 * (parseInput, including the U+0000 check), and the small schemas and checks the other modules
 * build on. Exports that the barrel (../validation.ts) does not re-export are internal.
 */
import { z } from 'zod';
import { badRequest } from '../errors.js';
import { nameKey } from '../name-matching.js';

// ---------------------------------------------------------------------------------------------
// Name rules
// ---------------------------------------------------------------------------------------------

export {
  FLAG_NAME_RE,
  NAME_RE,
  KEY_RE,
  KEY_NAME_MAX,
  VARIANT_KEY_MAX,
  TAG_MAX,
  TAGS_MAX,
  DESCRIPTION_MAX,
  USER_ID_MAX,
  ID_MAX,
} from '../input-formats.js';
import { FLAG_NAME_MSG, FLAG_NAME_RE, NAME_MSG, NAME_RE, TAG_MAX, TAGS_MAX, VARIANT_KEY_MAX } from '../input-formats.js';

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

export const EXPECTED: Record<string, string> = {
  string: 'a string',
  number: 'a finite number',
  int: 'an integer',
  boolean: 'a boolean',
  array: 'an array',
  object: 'an object',
  null: 'null',
};

export function quote(v: unknown): string {
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

export const flagName = z.string().regex(FLAG_NAME_RE, { error: FLAG_NAME_MSG });
export const name = z.string().regex(NAME_RE, { error: NAME_MSG });
export const variantKey = z.string().min(1).max(VARIANT_KEY_MAX);
export const finite = z.number(); // zod 4 rejects NaN and +-Infinity
export const percentage = finite.min(0).max(100);

/** Optional field where null means "not given". */
export function optionalNonNull<S extends z.ZodType>(schema: S) {
  return schema.nullable().optional();
}

export function isPlainObject(v: unknown): v is Record<string, unknown> {
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
export function assertUniqueCI(list: readonly string[], root: string): void {
  const seen = new Map<string, number>();
  list.forEach((n, i) => {
    const k = nameKey(n);
    const prev = seen.get(k);
    if (prev !== undefined)
      throw badRequest(`${root}[${i}]: duplicate name '${n}' (same as ${root}[${prev}] '${list[prev]}', names are case-insensitive)`);
    seen.set(k, i);
  });
}

export function dedupe<T>(list: readonly T[]): T[] {
  return [...new Set(list)];
}

export const tagsSchema = z
  .array(z.string().trim().min(1).max(TAG_MAX))
  .max(TAGS_MAX);
