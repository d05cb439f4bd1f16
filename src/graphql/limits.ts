/**
 * Static limits of one GraphQL operation (SPEC 8, CONTRACT.md 7), measured on the validated AST
 * before anything runs. Pure.
 *
 * - Depth: the number of nested selection sets, the operation's own included, with fragment
 *   spreads and inline fragments expanded (they add no level of their own) and introspection
 *   fields (`__schema`, `__type`) counted like any other. `{ flags { name } }` has depth 2.
 *   graphql-js's `getIntrospectionQuery()` has depth 15, the default maximum (see
 *   test/graphql/limits.test.ts).
 * - Evaluations: the `evaluate` fields of a query operation's root selection set (fragments
 *   expanded), counted by response key: two `evaluate` selections under the same response key are
 *   merged by GraphQL into one execution. `@skip` / `@include` are not taken into account (the
 *   count is an upper bound).
 *
 * Fragment depths are memoised, so the cost is linear in the document even when fragments fan
 * out. Fragment cycles are rejected by validation before this runs; here they count as infinite
 * depth.
 */
import {
  Kind,
  type DocumentNode,
  type FragmentDefinitionNode,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql';

export interface OperationCost {
  depth: number;
  evaluations: number;
}

export interface Limits {
  maxDepth: number;
  maxEvaluations: number;
}

export const EVALUATE_FIELD = 'evaluate';

function fragmentsOf(doc: DocumentNode): Map<string, FragmentDefinitionNode> {
  const out = new Map<string, FragmentDefinitionNode>();
  for (const def of doc.definitions) if (def.kind === Kind.FRAGMENT_DEFINITION) out.set(def.name.value, def);
  return out;
}

/** Depth of a selection set: 1 + the deepest selection set nested in it. */
function selectionDepth(
  set: SelectionSetNode,
  fragments: Map<string, FragmentDefinitionNode>,
  memo: Map<string, number>,
  active: Set<string>,
): number {
  let deepest = 0; // levels below this set
  for (const sel of set.selections) {
    let below: number;
    switch (sel.kind) {
      case Kind.FIELD:
        below = sel.selectionSet ? selectionDepth(sel.selectionSet, fragments, memo, active) : 0;
        break;
      case Kind.INLINE_FRAGMENT:
        // An inline fragment's selections sit at this set's level.
        below = selectionDepth(sel.selectionSet, fragments, memo, active) - 1;
        break;
      case Kind.FRAGMENT_SPREAD:
        below = fragmentDepth(sel.name.value, fragments, memo, active) - 1;
        break;
    }
    if (below > deepest) deepest = below;
  }
  return 1 + deepest;
}

function fragmentDepth(
  name: string,
  fragments: Map<string, FragmentDefinitionNode>,
  memo: Map<string, number>,
  active: Set<string>,
): number {
  const known = memo.get(name);
  if (known !== undefined) return known;
  const def = fragments.get(name);
  if (def === undefined) return 1; // unknown fragment: validation reports it
  if (active.has(name)) return Infinity; // cycle: validation reports it
  active.add(name);
  const d = selectionDepth(def.selectionSet, fragments, memo, active);
  active.delete(name);
  memo.set(name, d);
  return d;
}

/** Response keys of the `evaluate` fields in a root selection set, fragments expanded. */
function collectEvaluations(
  set: SelectionSetNode,
  fragments: Map<string, FragmentDefinitionNode>,
  visited: Set<string>,
  keys: Set<string>,
): void {
  for (const sel of set.selections) {
    switch (sel.kind) {
      case Kind.FIELD:
        if (sel.name.value === EVALUATE_FIELD) keys.add(sel.alias?.value ?? sel.name.value);
        break;
      case Kind.INLINE_FRAGMENT:
        collectEvaluations(sel.selectionSet, fragments, visited, keys);
        break;
      case Kind.FRAGMENT_SPREAD: {
        const name = sel.name.value;
        if (visited.has(name)) break;
        visited.add(name);
        const def = fragments.get(name);
        if (def !== undefined) collectEvaluations(def.selectionSet, fragments, visited, keys);
        break;
      }
    }
  }
}

export function measureOperation(doc: DocumentNode, op: OperationDefinitionNode): OperationCost {
  const fragments = fragmentsOf(doc);
  const depth = selectionDepth(op.selectionSet, fragments, new Map(), new Set());
  let evaluations = 0;
  if (op.operation === 'query') {
    const keys = new Set<string>();
    collectEvaluations(op.selectionSet, fragments, new Set(), keys);
    evaluations = keys.size;
  }
  return { depth, evaluations };
}

/** The message of the limit `cost` exceeds, or null. */
export function limitViolation(cost: OperationCost, limits: Limits): string | null {
  if (cost.depth > limits.maxDepth) {
    return `The query is nested ${Number.isFinite(cost.depth) ? cost.depth : 'infinitely'} levels deep; the maximum depth is ${limits.maxDepth}`;
  }
  if (cost.evaluations > limits.maxEvaluations) {
    return `The query has ${cost.evaluations} evaluate fields; at most ${limits.maxEvaluations} are allowed per request`;
  }
  return null;
}
