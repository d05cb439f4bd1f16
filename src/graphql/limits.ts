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
 * - Fields (`VEXIL_GRAPHQL_MAX_FIELDS`, CONTRACT.md 8): every field selection the operation would
 *   execute: a fragment counts at every spread, aliases, `__typename` and introspection fields
 *   count, nested fields count under each parent selection. Selections GraphQL would merge (the
 *   same response key twice) are each counted: an upper bound, like `@skip` / `@include`.
 * - Contexts: the `context` arguments of those `evaluate` fields, so the executor can apply the
 *   context size limits (CONTRACT.md 8) before anything runs, variables filled in.
 *
 * These checks run right after parsing, before graphql-js validation (whose
 * OverlappingFieldsCanBeMerged rule is quadratic in the number of same-named fields): fragment
 * depths and field counts are memoised per fragment, so the whole measurement is linear in the
 * document even when fragments fan out (a count may then be astronomically large, never slow).
 * Fragment cycles count as infinite depth; the executor lets validation name them.
 */
import {
  Kind,
  type DocumentNode,
  type FragmentDefinitionNode,
  type OperationDefinitionNode,
  type SelectionSetNode,
  type ValueNode,
} from 'graphql';

export interface OperationCost {
  depth: number;
  evaluations: number;
  /** Field selections as executed (fragments expanded at every spread). */
  fields: number;
  /** The `context` argument of every `evaluate` field of a query's root (fragments expanded). */
  contexts: ValueNode[];
}

export interface Limits {
  maxDepth: number;
  maxEvaluations: number;
  /** Default DEFAULT_MAX_FIELDS. */
  maxFields?: number;
}

export const DEFAULT_MAX_FIELDS = 1000;

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

/** Field selections executed for a selection set: its own fields and everything below them. */
function selectionFields(
  set: SelectionSetNode,
  fragments: Map<string, FragmentDefinitionNode>,
  memo: Map<string, number>,
  active: Set<string>,
): number {
  let n = 0;
  for (const sel of set.selections) {
    switch (sel.kind) {
      case Kind.FIELD:
        n += 1 + (sel.selectionSet ? selectionFields(sel.selectionSet, fragments, memo, active) : 0);
        break;
      case Kind.INLINE_FRAGMENT:
        n += selectionFields(sel.selectionSet, fragments, memo, active);
        break;
      case Kind.FRAGMENT_SPREAD: {
        const name = sel.name.value;
        let f = memo.get(name);
        if (f === undefined) {
          const def = fragments.get(name);
          if (def === undefined) f = 0; // unknown fragment: validation reports it
          else if (active.has(name)) f = Infinity; // cycle
          else {
            active.add(name);
            f = selectionFields(def.selectionSet, fragments, memo, active);
            active.delete(name);
            memo.set(name, f);
          }
        }
        n += f;
        break;
      }
    }
  }
  return n;
}

/**
 * Response keys and `context` arguments of the `evaluate` fields in a root selection set,
 * fragments expanded.
 */
function collectEvaluations(
  set: SelectionSetNode,
  fragments: Map<string, FragmentDefinitionNode>,
  visited: Set<string>,
  keys: Set<string>,
  contexts: ValueNode[],
): void {
  for (const sel of set.selections) {
    switch (sel.kind) {
      case Kind.FIELD:
        if (sel.name.value === EVALUATE_FIELD) {
          keys.add(sel.alias?.value ?? sel.name.value);
          const ctx = sel.arguments?.find((a) => a.name.value === 'context');
          if (ctx !== undefined) contexts.push(ctx.value);
        }
        break;
      case Kind.INLINE_FRAGMENT:
        collectEvaluations(sel.selectionSet, fragments, visited, keys, contexts);
        break;
      case Kind.FRAGMENT_SPREAD: {
        const name = sel.name.value;
        if (visited.has(name)) break;
        visited.add(name);
        const def = fragments.get(name);
        if (def !== undefined) collectEvaluations(def.selectionSet, fragments, visited, keys, contexts);
        break;
      }
    }
  }
}

export function measureOperation(doc: DocumentNode, op: OperationDefinitionNode): OperationCost {
  const fragments = fragmentsOf(doc);
  const depth = selectionDepth(op.selectionSet, fragments, new Map(), new Set());
  const fields = selectionFields(op.selectionSet, fragments, new Map(), new Set());
  let evaluations = 0;
  const contexts: ValueNode[] = [];
  if (op.operation === 'query') {
    const keys = new Set<string>();
    collectEvaluations(op.selectionSet, fragments, new Set(), keys, contexts);
    evaluations = keys.size;
  }
  return { depth, evaluations, fields, contexts };
}

/** The message of the limit `cost` exceeds, or null. Every GraphQL document limit is listed here. */
export function limitViolation(
  cost: Pick<OperationCost, 'depth' | 'evaluations'> & { fields?: number },
  limits: Limits,
): string | null {
  if (cost.depth > limits.maxDepth) {
    return `The query is nested ${Number.isFinite(cost.depth) ? cost.depth : 'infinitely'} levels deep; the maximum depth is ${limits.maxDepth}`;
  }
  if (cost.evaluations > limits.maxEvaluations) {
    return `The query has ${cost.evaluations} evaluate fields; at most ${limits.maxEvaluations} are allowed per request`;
  }
  const maxFields = limits.maxFields ?? DEFAULT_MAX_FIELDS;
  if (cost.fields !== undefined && cost.fields > maxFields) {
    const n = Number.isFinite(cost.fields) ? String(cost.fields) : 'infinitely many';
    return `The query selects ${n} fields (fragments expanded); VEXIL_GRAPHQL_MAX_FIELDS allows at most ${maxFields}`;
  }
  return null;
}
