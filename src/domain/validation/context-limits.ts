/**
 * Size limits of an evaluation context (docs/limits.md, "Evaluation contexts"):
 * `VEXIL_CONTEXT_MAX_DEPTH` and `VEXIL_CONTEXT_MAX_VALUES`. Used for the REST evaluation body, the
 * GraphQL `evaluate` context (literal or variable) and OFREP's `context`, before anything is
 * evaluated or handed to a worker.
 *
 * Counting: the context object itself is depth 1 and each nested object or array adds one
 * (`{"a": {"b": 1}}` has depth 2); every JSON value counts toward the value limit, the context
 * object included, keys not.
 *
 * Iterative (an explicit stack), so a 200,000-deep context cannot overflow the call stack, and it
 * stops at the first value past a limit: the work is bounded by `maxValues`, whatever the input.
 * Pure.
 */
import { badRequest, type VexilError } from '../errors.js';

export interface ContextLimits {
  maxDepth: number;
  maxValues: number;
}

export const DEFAULT_CONTEXT_LIMITS: ContextLimits = { maxDepth: 32, maxValues: 10_000 };

export interface ContextSize {
  /** Deepest nesting seen (exact when within both limits). */
  depth: number;
  /** Values counted (exact when within both limits). */
  values: number;
  /** The limit that was exceeded first, if any. */
  exceeded: 'depth' | 'values' | null;
}

/**
 * Measures `value` as a context. `baseDepth` is the depth of the position where `value` sits (0 for
 * a whole context; used when part of a context comes from elsewhere, as GraphQL variables do).
 */
export function measureContext(value: unknown, limits: ContextLimits, baseDepth = 0, baseValues = 0): ContextSize {
  let depth = baseDepth;
  let values = baseValues;
  // Pending values with the depth of their container.
  const stack: unknown[] = [value];
  const depths: number[] = [baseDepth];
  while (stack.length > 0) {
    const v = stack.pop();
    const at = depths.pop()!;
    if (++values > limits.maxValues) return { depth, values, exceeded: 'values' };
    if (v === null || typeof v !== 'object') continue;
    const d = at + 1;
    if (d > depth) depth = d;
    if (d > limits.maxDepth) return { depth, values, exceeded: 'depth' };
    if (Array.isArray(v)) {
      if (values + stack.length + v.length > limits.maxValues) return { depth, values: values + stack.length + v.length, exceeded: 'values' };
      for (let i = 0; i < v.length; i++) {
        stack.push(v[i]);
        depths.push(d);
      }
    } else {
      for (const k in v) {
        if (!Object.prototype.hasOwnProperty.call(v, k)) continue;
        stack.push((v as Record<string, unknown>)[k]);
        depths.push(d);
      }
    }
    // Everything pushed is a value still to count: stop early instead of pushing a million.
    if (values + stack.length > limits.maxValues) return { depth, values: values + stack.length, exceeded: 'values' };
  }
  return { depth, values, exceeded: null };
}

/** The BAD_REQUEST of a context nested deeper than `VEXIL_CONTEXT_MAX_DEPTH`. */
export const contextTooDeepError = (limits: ContextLimits, what = 'context'): VexilError =>
  badRequest(`${what}: nested deeper than VEXIL_CONTEXT_MAX_DEPTH (${limits.maxDepth} levels)`);

/** The BAD_REQUEST naming the limit a context exceeds, or null. */
export function contextLimitError(size: ContextSize, limits: ContextLimits, what = 'context'): VexilError | null {
  if (size.exceeded === 'depth') return contextTooDeepError(limits, what);
  if (size.exceeded === 'values') {
    return badRequest(`${what}: holds more than VEXIL_CONTEXT_MAX_VALUES (${limits.maxValues} values)`);
  }
  return null;
}

/** Throws the BAD_REQUEST naming the limit when `context` exceeds one. */
export function checkContextLimits(context: unknown, limits: ContextLimits, what = 'context'): void {
  const err = contextLimitError(measureContext(context, limits), limits, what);
  if (err !== null) throw err;
}
