/**
 * Targeting conditions: field paths, operators, strict JSON equality. Pure; no allocation on the
 * hot path except where an operator's semantics need it (none of the built-in ones do).
 *
 * Operators (a condition is `{field, operator, value}`; "actual" is the value found at `field`):
 *   ==           actual is strictly JSON-equal to value (1 != "1", deep, object key order irrelevant)
 *   !=           actual is present and not JSON-equal to value
 *   in           value is an array and one of its elements is JSON-equal to actual
 *   not_in       value is an array, actual is present and equal to none of its elements
 *   contains     actual string contains value string, or actual array has an element JSON-equal to value
 *   starts_with  actual and value are strings and actual starts with value
 *   ends_with    actual and value are strings and actual ends with value
 *   <  <=  >  >= actual and value are both finite numbers and compare so; strings never compare
 * A missing field matches no operator (not even != or not_in). An unknown operator never matches.
 * The list of operators and the field path format are src/domain/condition-syntax.ts.
 */
import { isValidFieldPath } from '../domain/condition-syntax.js';

/**
 * Strict JSON equality: same JSON type and same value; arrays element-wise in order; objects with
 * the same set of own keys (order irrelevant) and equal values. `1` and `"1"` differ, `null` equals
 * only `null`.
 */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  const aArr = Array.isArray(a);
  if (aArr !== Array.isArray(b)) return false;
  if (aArr) {
    const x = a as unknown[];
    const y = b as unknown[];
    const n = x.length;
    if (n !== y.length) return false;
    for (let i = 0; i < n; i++) if (!jsonEqual(x[i], y[i])) return false;
    return true;
  }
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  let count = 0;
  for (const k in x) {
    if (!Object.hasOwn(x, k)) continue;
    if (!Object.hasOwn(y, k) || !jsonEqual(x[k], y[k])) return false;
    count++;
  }
  for (const k in y) {
    if (Object.hasOwn(y, k)) count--;
  }
  return count === 0;
}

export interface CompiledCondition {
  /** Field path split on dots; an empty array marks an invalid path, which never matches. */
  path: string[];
  operator: string;
  value: unknown;
  /** For `in` / `not_in` over primitives only: the values as a Set (filled by compileCondition). */
  valueSet?: ReadonlySet<unknown> | null;
}

/** Builds the compiled form of a condition once per configuration change. */
export function compileCondition(field: string, operator: string, value: unknown): CompiledCondition {
  const path = isValidFieldPath(field) ? field.split('.') : [];
  let valueSet: Set<unknown> | null = null;
  if ((operator === 'in' || operator === 'not_in') && Array.isArray(value) && value.length > 8) {
    let primitive = true;
    for (let i = 0; i < value.length; i++) {
      const v = value[i];
      if (v !== null && typeof v === 'object') {
        primitive = false;
        break;
      }
    }
    if (primitive) valueSet = new Set(value);
  }
  return { path, operator, value, valueSet };
}

/** Marker for a field that is not present. */
const MISSING: unique symbol = Symbol('missing');

/**
 * The value at `path` in the context with `userId` added at the top level (the request's userId
 * wins over context.userId). Only own properties are followed; arrays take numeric segments.
 */
function lookup(path: string[], userId: string, context: Record<string, unknown> | null): unknown {
  const n = path.length;
  if (n === 0) return MISSING;
  const head = path[0];
  let cur: unknown;
  if (head === 'userId') cur = userId;
  else if (context !== null && typeof context === 'object' && Object.hasOwn(context, head)) cur = context[head];
  else return MISSING;
  for (let i = 1; i < n; i++) {
    if (cur === null || typeof cur !== 'object') return MISSING;
    const seg = path[i];
    if (!Object.hasOwn(cur, seg)) return MISSING;
    if (Array.isArray(cur) && seg === 'length') return MISSING;
    cur = (cur as Record<string, unknown>)[seg];
  }
  return cur === undefined ? MISSING : cur;
}

function includesEqual(list: unknown[], v: unknown): boolean {
  for (let i = 0; i < list.length; i++) if (jsonEqual(list[i], v)) return true;
  return false;
}

function isNum(v: unknown): v is number {
  return typeof v === 'number' && Number.isFinite(v);
}

export function conditionMatches(
  c: CompiledCondition,
  userId: string,
  context: Record<string, unknown> | null,
): boolean {
  const actual = lookup(c.path, userId, context);
  if (actual === MISSING) return false;
  const value = c.value;
  switch (c.operator) {
    case '==':
      return jsonEqual(actual, value);
    case '!=':
      return !jsonEqual(actual, value);
    case 'in':
      if (!Array.isArray(value)) return false;
      if (c.valueSet) return (actual === null || typeof actual !== 'object') && c.valueSet.has(actual);
      return includesEqual(value, actual);
    case 'not_in':
      if (!Array.isArray(value)) return false;
      if (c.valueSet) return (actual !== null && typeof actual === 'object') || !c.valueSet.has(actual);
      return !includesEqual(value, actual);
    case 'contains':
      if (typeof actual === 'string') return typeof value === 'string' && actual.includes(value);
      if (Array.isArray(actual)) return includesEqual(actual, value);
      return false;
    case 'starts_with':
      return typeof actual === 'string' && typeof value === 'string' && actual.startsWith(value);
    case 'ends_with':
      return typeof actual === 'string' && typeof value === 'string' && actual.endsWith(value);
    case '<':
      return isNum(actual) && isNum(value) && actual < value;
    case '<=':
      return isNum(actual) && isNum(value) && actual <= value;
    case '>':
      return isNum(actual) && isNum(value) && actual > value;
    case '>=':
      return isNum(actual) && isNum(value) && actual >= value;
    default:
      return false;
  }
}
