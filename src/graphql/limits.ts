/**
 * Static limits of one GraphQL operation (docs/graphql.md, "Limits"), measured on the validated AST
 * before anything runs. Pure.
 *
 * - Depth: the number of nested selection sets, the operation's own included, with fragment
 *   spreads and inline fragments expanded (they add no level of their own) and introspection
 *   fields (`__schema`, `__type`) counted like any other. `{ flags { name } }` has depth 2.
 *   graphql-js's `getIntrospectionQuery()` has depth 15, the default maximum (see
 *   test/node/graphql/limits.test.ts).
 * - Evaluations: the `evaluate` fields of a query operation's root selection set (fragments
 *   expanded), counted by response key: two `evaluate` selections under the same response key are
 *   merged by GraphQL into one execution. `@skip` / `@include` are not taken into account (the
 *   count is an upper bound).
 *
 * - Fields (`VEXIL_GRAPHQL_MAX_FIELDS`, docs/limits.md "GraphQL documents"): every field selection
 *   the operation would execute: a fragment counts at every spread, aliases, `__typename` and
 *   introspection fields count, nested fields count under each parent selection. Selections GraphQL
 *   would merge (the same response key twice) are each counted: an upper bound, like `@skip` /
 *   `@include`.
 * - Mutations (`VEXIL_GRAPHQL_MAX_MUTATIONS`): the root fields of a mutation operation, fragments
 *   expanded, by response key like evaluations (`__typename` aside). Each costs one token of the
 *   key's management bucket (execute.ts).
 * - Contexts: the `context` arguments of those `evaluate` fields, so the executor can apply the
 *   context size limits (docs/limits.md, "Evaluation contexts") before anything runs, variables
 *   filled in.
 *
 * These checks run right after parsing, before graphql-js validation (whose
 * OverlappingFieldsCanBeMerged rule is quadratic in the number of same-named fields): fragment
 * depths and field counts are memoised per fragment, so the whole measurement is linear in the
 * document even when fragments fan out (a count may then be astronomically large, never slow).
 * Fragment cycles count as infinite depth; the executor lets validation name them.
 *
 * Before all of that, `tokenBounds` reads the document's tokens (graphql-js's own lexer, no
 * AST) for lower bounds of the field count and depth, so a document over either limit is refused
 * without being parsed: parsing builds a node and a location for every token, ~10 ms for a
 * 100 KiB document of 5,000 aliases against ~0.7 ms to lex it. A
 * document nested far too deep is refused the same way (the parser would overflow its stack).
 */
import {
  Kind,
  Lexer,
  Source,
  TokenKind,
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type OperationDefinitionNode,
  type SelectionSetNode,
  type ValueNode,
} from 'graphql';

export interface OperationCost {
  depth: number;
  evaluations: number;
  /** Mutation fields of a mutation operation's root, by response key (fragments expanded). */
  mutations: number;
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
  /** `VEXIL_GRAPHQL_MAX_MUTATIONS`, default DEFAULT_MAX_MUTATIONS. */
  maxMutations?: number;
}

export const DEFAULT_MAX_FIELDS = 1000;
export const DEFAULT_MAX_MUTATIONS = 20;

export const EVALUATE_FIELD = 'evaluate';

function fragmentsOf(doc: DocumentNode): Map<string, FragmentDefinitionNode> {
  const out = new Map<string, FragmentDefinitionNode>();
  for (const def of doc.definitions) if (def.kind === Kind.FRAGMENT_DEFINITION) out.set(def.name.value, def);
  return out;
}

/**
 * How a selection set measures: its selections' contributions folded together (`fold`), a field's
 * contribution from the measure of its own selection set (`below`, undefined for a leaf). Inline
 * fragments and spreads contribute their set's measure: they add no level and no field of their own.
 */
interface SetMeasure {
  fold(a: number, b: number): number;
  field(below: number | undefined): number;
}

/** Levels below a set: a field with a selection set is one more than the deepest in it. */
const DEPTH_BELOW: SetMeasure = { fold: Math.max, field: (below) => (below === undefined ? 0 : 1 + below) };
/** Field selections executed: each field, and everything below it. */
const FIELDS: SetMeasure = { fold: (a, b) => a + b, field: (below) => 1 + (below ?? 0) };

/**
 * `m` of a selection set, fragments expanded: each fragment is measured once (`memo`), a fragment
 * cycle measures Infinity and an unknown fragment 0 (validation names both).
 */
function measureSet(
  m: SetMeasure,
  set: SelectionSetNode,
  fragments: Map<string, FragmentDefinitionNode>,
  memo: Map<string, number>,
  active: Set<string>,
): number {
  let acc = 0;
  for (const sel of set.selections) {
    let x: number;
    switch (sel.kind) {
      case Kind.FIELD:
        x = m.field(sel.selectionSet ? measureSet(m, sel.selectionSet, fragments, memo, active) : undefined);
        break;
      case Kind.INLINE_FRAGMENT:
        x = measureSet(m, sel.selectionSet, fragments, memo, active);
        break;
      case Kind.FRAGMENT_SPREAD: {
        const name = sel.name.value;
        const known = memo.get(name);
        if (known !== undefined) x = known;
        else {
          const def = fragments.get(name);
          if (def === undefined) x = 0;
          else if (active.has(name)) x = Infinity;
          else {
            active.add(name);
            x = measureSet(m, def.selectionSet, fragments, memo, active);
            active.delete(name);
            memo.set(name, x);
          }
        }
        break;
      }
    }
    acc = m.fold(acc, x);
  }
  return acc;
}

/**
 * Calls `visit` for each field of a root selection set, fragments expanded (each fragment once:
 * GraphQL merges a fragment spread twice into one execution).
 */
function forEachRootField(
  set: SelectionSetNode,
  fragments: Map<string, FragmentDefinitionNode>,
  visited: Set<string>,
  visit: (field: FieldNode) => void,
): void {
  for (const sel of set.selections) {
    switch (sel.kind) {
      case Kind.FIELD:
        visit(sel);
        break;
      case Kind.INLINE_FRAGMENT:
        forEachRootField(sel.selectionSet, fragments, visited, visit);
        break;
      case Kind.FRAGMENT_SPREAD: {
        const name = sel.name.value;
        if (visited.has(name)) break;
        visited.add(name);
        const def = fragments.get(name);
        if (def !== undefined) forEachRootField(def.selectionSet, fragments, visited, visit);
        break;
      }
    }
  }
}

const responseKey = (field: FieldNode): string => field.alias?.value ?? field.name.value;

export function measureOperation(doc: DocumentNode, op: OperationDefinitionNode): OperationCost {
  const fragments = fragmentsOf(doc);
  const depth = 1 + measureSet(DEPTH_BELOW, op.selectionSet, fragments, new Map(), new Set());
  const fields = measureSet(FIELDS, op.selectionSet, fragments, new Map(), new Set());
  let evaluations = 0;
  let mutations = 0;
  const contexts: ValueNode[] = [];
  if (op.operation === 'query') {
    // The response keys and `context` arguments of the `evaluate` fields.
    const keys = new Set<string>();
    forEachRootField(op.selectionSet, fragments, new Set(), (field) => {
      if (field.name.value !== EVALUATE_FIELD) return;
      keys.add(responseKey(field));
      const ctx = field.arguments?.find((arg) => arg.name.value === 'context');
      if (ctx !== undefined) contexts.push(ctx.value);
    });
    evaluations = keys.size;
  } else if (op.operation === 'mutation') {
    // Two selections under one response key are merged by GraphQL into one execution.
    const keys = new Set<string>();
    forEachRootField(op.selectionSet, fragments, new Set(), (field) => {
      if (field.name.value !== '__typename') keys.add(responseKey(field));
    });
    mutations = keys.size;
  }
  return { depth, evaluations, mutations, fields, contexts };
}

/**
 * The message of the limit `cost` exceeds, or null. Every GraphQL document limit is listed here.
 * `atLeast`: the cost is a lower bound (`tokenBounds`), and the message says so.
 */
export function limitViolation(
  cost: Pick<OperationCost, 'depth' | 'evaluations'> & { fields?: number; mutations?: number },
  limits: Limits,
  atLeast = false,
): string | null {
  const least = atLeast ? 'at least ' : '';
  if (cost.depth > limits.maxDepth) {
    return `The query is nested ${least}${Number.isFinite(cost.depth) ? cost.depth : 'infinitely'} levels deep; the maximum depth is ${limits.maxDepth}`;
  }
  if (cost.evaluations > limits.maxEvaluations) {
    return `The query has ${cost.evaluations} evaluate fields; at most ${limits.maxEvaluations} are allowed per request`;
  }
  const maxMutations = limits.maxMutations ?? DEFAULT_MAX_MUTATIONS;
  if (cost.mutations !== undefined && cost.mutations > maxMutations) {
    return `The document has ${cost.mutations} mutation fields; VEXIL_GRAPHQL_MAX_MUTATIONS allows at most ${maxMutations} per request`;
  }
  const maxFields = limits.maxFields ?? DEFAULT_MAX_FIELDS;
  if (cost.fields !== undefined && cost.fields > maxFields) {
    const n = Number.isFinite(cost.fields) ? String(cost.fields) : 'infinitely many';
    return `The query selects ${least}${n} fields (fragments expanded); VEXIL_GRAPHQL_MAX_FIELDS allows at most ${maxFields}`;
  }
  return null;
}

/** The message of the depth or field limit a document exceeds on its tokens alone (`tokenBounds`), or null. */
export function tokenLimitViolation(query: string, operationName: string | null, limits: Limits): string | null {
  return limitViolation({ ...tokenBounds(query, operationName), evaluations: 0 }, limits, true);
}

interface OperationBound {
  name: string | null;
  fields: number;
  /** Selection sets nested through fields (inline fragments add no level), the operation's own included. */
  depth: number;
}

/**
 * Lower bounds of the depth and of the fields the operation selected by `operationName` would
 * execute (as `measureOperation` counts them), from the tokens alone: what is written in the
 * operation's own selection sets (inline fragments included, fragment definitions not: an unused
 * fragment executes nothing). Which operation: the one named `operationName`, else the largest
 * (the executor then holds every operation to the limits). A name in a selection set is a field
 * unless it is an alias (a `:` follows), a directive (after `@`), a spread fragment's name (after
 * `...`) or an inline fragment's `on Type`; anything inside parentheses is arguments. A document
 * the lexer rejects counts up to the bad token (its parse would fail anyway). Linear, pure.
 */
export function tokenBounds(query: string, operationName: string | null): { fields: number; depth: number } {
  const ops: OperationBound[] = [];
  let current: OperationBound | null = null;
  let braces = 0;
  let parens = 0;
  let prev: TokenKind = TokenKind.SOF;
  // Top level: what the definition being read is, and whether its name comes next.
  let definition: 'operation' | 'fragment' | null = null;
  let nameNext = false;
  let opName: string | null = null;
  // In a selection set: a name whose role the next token decides (alias or field); after `... on`;
  // whether the next `{` belongs to a field (a level) or an inline fragment (none).
  let pending = false;
  let typeNext = false;
  let fieldSetNext = false;
  const levels: boolean[] = [];
  let fieldLevels = 0;
  const lexer = new Lexer(new Source(query));
  try {
    for (let tok = lexer.advance(); tok.kind !== TokenKind.EOF; tok = lexer.advance()) {
      const kind = tok.kind;
      if (parens > 0) {
        if (kind === TokenKind.PAREN_L) parens++;
        else if (kind === TokenKind.PAREN_R) parens--;
        continue;
      }
      if (pending) {
        if (kind !== TokenKind.COLON && current !== null) current.fields++;
        pending = false;
      }
      if (braces === 0) {
        if (kind === TokenKind.NAME && prev !== TokenKind.AT) {
          if (definition === null) {
            definition = tok.value === 'fragment' ? 'fragment' : 'operation';
            nameNext = definition === 'operation';
          } else if (nameNext) {
            opName = tok.value;
            nameNext = false;
          }
        } else {
          nameNext = false;
        }
      }
      switch (kind) {
        case TokenKind.PAREN_L:
          parens++;
          break;
        case TokenKind.BRACE_L:
          if (braces === 0) {
            current = definition === 'fragment' ? null : { name: opName, fields: 0, depth: 1 };
            if (current !== null) ops.push(current);
          } else {
            levels.push(fieldSetNext);
            if (fieldSetNext && current !== null && ++fieldLevels + 1 > current.depth) current.depth = fieldLevels + 1;
          }
          braces++;
          break;
        case TokenKind.BRACE_R:
          if (braces > 1 && levels.pop()) fieldLevels--;
          if (braces > 0 && --braces === 0) {
            definition = null;
            opName = null;
            current = null;
            levels.length = 0;
            fieldLevels = 0;
          }
          break;
        case TokenKind.SPREAD:
          fieldSetNext = false;
          break;
        case TokenKind.NAME:
          if (braces === 0 || prev === TokenKind.AT) break;
          if (prev === TokenKind.SPREAD) typeNext = tok.value === 'on';
          else if (typeNext) typeNext = false;
          else {
            pending = true;
            fieldSetNext = true;
          }
          break;
      }
      prev = kind;
    }
  } catch {
    // A lexical error: what was counted so far stands.
  }
  if (pending && current !== null) current.fields++;
  const bound = { fields: 0, depth: 0 };
  for (const op of ops) {
    if (operationName !== null && op.name === operationName) return { fields: op.fields, depth: op.depth };
    if (op.fields > bound.fields) bound.fields = op.fields;
    if (op.depth > bound.depth) bound.depth = op.depth;
  }
  return bound;
}
