/**
 * The OpenFeature evaluation context as Vexil reads it (docs/ofrep.md, "Requests"): `targetingKey`
 * is the userId, `stage` and `clientId` are reserved, every other property is the evaluation
 * context. Shared by the OFREP routes and the in-process provider (docs/feed.md). Pure.
 */

/** The properties of an OpenFeature context that are not evaluation context. */
export const RESERVED_CONTEXT_KEYS: ReadonlySet<string> = new Set(['targetingKey', 'stage', 'clientId']);

/** `c` without its reserved properties; null when nothing is left. */
export function evaluationContextOf(c: Record<string, unknown>): Record<string, unknown> | null {
  let rest: Record<string, unknown> | null = null;
  for (const k in c) {
    if (RESERVED_CONTEXT_KEYS.has(k)) continue;
    (rest ??= {})[k] = c[k];
  }
  return rest;
}
