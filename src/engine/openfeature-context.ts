/**
 * The OpenFeature evaluation context as Vexil reads it (docs/ofrep.md, "Requests"): `targetingKey`
 * is the userId, `stage` and `clientId` are reserved, every other property is the evaluation
 * context. Shared by the OFREP routes and the in-process provider (docs/feed.md). Pure.
 *
 * The provider evaluates in process, where copying the context per evaluation is a large share of
 * the cost: `readsReservedContext` tells when the engine can be given the OpenFeature context as it
 * is, because no condition it will look at names a reserved property.
 */
import type { CompiledFlag, OrgSnapshot } from './compiled.js';
import type { CompiledCondition } from './conditions.js';

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

function conditionsReadReserved(conditions: readonly CompiledCondition[]): boolean {
  for (let i = 0; i < conditions.length; i++) {
    const path = conditions[i].path;
    if (path.length > 0 && RESERVED_CONTEXT_KEYS.has(path[0])) return true;
  }
  return false;
}

/**
 * Whether evaluating `cf` in `snapshot` can look at a reserved property of the context: a condition
 * of a rule of any of its configurations, of a segment such a rule names, or the same for a parent
 * it depends on (at any depth), reads `targetingKey`, `stage` or `clientId` (the head of its field
 * path). When it cannot, the engine, which reads only the own properties its conditions name
 * (conditions.ts, `lookup`), answers the same for a plain-object context as it is as for
 * `evaluationContextOf` of it. Depends on the snapshot's flags and segments: compute it again when
 * they change.
 */
export function readsReservedContext(snapshot: OrgSnapshot, cf: CompiledFlag, seen: Set<CompiledFlag> = new Set()): boolean {
  if (seen.has(cf)) return false;
  seen.add(cf);
  for (const config of cf.configs.values()) {
    for (const rule of config.rules) {
      if (conditionsReadReserved(rule.conditions)) return true;
      for (const name of rule.segments) {
        const segment = snapshot.segments?.get(name);
        if (segment !== undefined && conditionsReadReserved(segment.conditions)) return true;
      }
    }
  }
  for (const dep of cf.flag.dependencies) {
    const parent = snapshot.flags.get(dep.flag);
    if (parent !== undefined && readsReservedContext(snapshot, parent, seen)) return true;
  }
  return false;
}

/**
 * Whether `c` is a plain object (its prototype Object.prototype or null): then `for…in` (what
 * `evaluationContextOf` copies) and `Object.hasOwn` (what the engine reads) see the same properties,
 * barring non-enumerable own ones, which JSON-like data does not have.
 */
export function isPlainContext(c: object): boolean {
  const proto = Object.getPrototypeOf(c);
  return proto === Object.prototype || proto === null;
}
