/**
 * `VEXIL_GRAPHQL_MAX_RESULT` (docs/graphql.md, "Limits"): before a document runs, an upper bound of
 * the values its result would hold, from the organization's snapshot. A value is one leaf of the
 * result: a scalar or enum field (`null` included), or one item of a list of them; objects and
 * lists themselves are not counted, so `{ flags { name } }` over 100,000 flags is 100,000.
 *
 * Two halves, so the cached part stays cached:
 *
 * - `resultShape` (once per document, in the prepared-document cache, after validation): the
 *   operation's selection tree with fragments expanded at every spread (the field limit already
 *   bounds its size), each field reduced to how long it is as a list and what each item holds.
 *   Selections of known size fold into a constant, so the tree keeps only the parts that depend
 *   on the snapshot or the variables; a document with none of them (every evaluation document)
 *   has its estimate computed right there (`fixed`).
 * - `estimateResult` (per request, before anything executes): one walk over that reduced tree
 *   with the snapshot's statistics (`resultStats`) and the request's variables.
 *
 * A field's value count is `length × (constant + Σ children)`, `length` being 1 for a field that
 * is not a list, and at least 1: a field that answers null (a missing flag, a failed field) is one
 * value, an empty list none, but which one a field answers is not known before it runs. List lengths (`LIST_LENGTHS`, docs/limits.md):
 *
 * - `Query.flags`, `FlagConnection.nodes`: the organization's flags (every flag, not only those
 *   the key can see: an upper bound);
 * - lists of a flag, a configuration, a rule, a dependency: the longest such list in the
 *   organization (`listMaxima`, src/engine/snapshot-stats.ts), `Query.flagConfigs` and
 *   `Query.flagEnvironments` as `Flag.configs` and `Flag.environments`;
 * - `environments`, `applications`, `killSwitch` and the mutations answering them: the
 *   organization's lists; `segments`: the organization's segments (all of them, an upper bound),
 *   `Segment.conditions`: the most conditions any segment has;
 * - `managementKeys`: `VEXIL_MAX_KEYS_PER_ORG`'s default, 1,000 keys (keys are not in the
 *   snapshot); `Flag.schedules`: `VEXIL_MAX_PENDING_SCHEDULES_PER_FLAG`'s default plus the
 *   finished schedules kept, 200; `auditLog`: `first`, else its default page of 100 (at most 500);
 * - a list of an enum (`permissions`, `__Directive.locations`): the enum's values;
 * - `__schema`: its exact count, from running its selection once against the schema (its answer
 *   depends on no data); lists under `__type(name:)`: the largest such list in the schema;
 * - any other list: the largest of all of the above.
 *
 * A `first` argument bounds any list field it is given to, and a field with `first` that answers
 * an object (a connection) bounds that object's `nodes` and `edges`; a variable's value (or its
 * default) counts. Selections GraphQL would merge each count, like `@skip` / `@include`: upper
 * bounds. In a mutation, lists can grow while the document runs: every length from the snapshot
 * gets the document's own list items (in arguments and variables) plus its mutation count added,
 * more than any sequence of its mutations can add to one list.
 */
import { WEBHOOK_LIST_LENGTHS } from '../features/webhooks/graphql-schema.js';
import {
  executeSync,
  print,
  getNullableType,
  isEnumType,
  isInputObjectType,
  isInterfaceType,
  isLeafType,
  isListType,
  isObjectType,
  isUnionType,
  Kind,
  OperationTypeNode,
  SchemaMetaFieldDef,
  TypeMetaFieldDef,
  TypeNameMetaFieldDef,
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLField,
  type GraphQLNamedType,
  type GraphQLOutputType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
  type ValueNode,
} from 'graphql';
import type { CompiledSegment, OrgSnapshot } from '../engine/compiled.js';
import { listMaxima, noMaxima, type ListMaxima } from '../engine/snapshot-stats.js';
import { DEFAULT_TENANCY_LIMITS, SCHEDULE_FINISHED_KEPT } from '../domain/validation.js';

/** What the estimate reads from a snapshot (`resultStats`). */
export interface ResultStats extends ListMaxima {
  flags: number;
  /** The organization's lists. */
  orgEnvironments: number;
  orgApplications: number;
  killSwitch: number;
  /** The organization's segments, and the most conditions one of them has. */
  segments: number;
  segmentConditions: number;
  /** Keys are not in the snapshot: a bound (VEXIL_MAX_KEYS_PER_ORG's default). */
  managementKeys: number;
  /** The largest of the above: the length of a list the estimator does not know. */
  largest: number;
}

export type StatName = keyof ResultStats;

/** Management keys one organization may hold (the `VEXIL_MAX_KEYS_PER_ORG` default, docs/limits.md). */
export const DEFAULT_MAX_KEYS = 1000;

/** `VEXIL_GRAPHQL_MAX_RESULT` default (docs/graphql.md, "Limits"). */
export const DEFAULT_MAX_RESULT = 200_000;

/** List fields whose length the snapshot knows, by `Type.field`. */
export const LIST_LENGTHS: Readonly<Record<string, StatName>> = {
  'Query.flags': 'flags',
  'FlagConnection.nodes': 'flags',
  'Query.flagConfigs': 'configs',
  'Query.flagEnvironments': 'environments',
  'Query.environments': 'orgEnvironments',
  'Query.applications': 'orgApplications',
  'Query.killSwitch': 'killSwitch',
  'Query.managementKeys': 'managementKeys',
  'Flag.tags': 'tags',
  'Flag.variants': 'variants',
  'Flag.environments': 'environments',
  'Flag.dependencies': 'dependencies',
  'Flag.configs': 'configs',
  'FlagDependency.variants': 'dependencyVariants',
  'FlagConfig.rules': 'rules',
  'Rule.conditions': 'conditions',
  'Rule.allocations': 'allocations',
  'Rule.segments': 'ruleSegments',
  'Query.segments': 'segments',
  'Segment.conditions': 'segmentConditions',
  'Mutation.replaceEnvironments': 'orgEnvironments',
  'Mutation.renameEnvironment': 'orgEnvironments',
  'Mutation.replaceApplications': 'orgApplications',
  'Mutation.renameApplication': 'orgApplications',
  'Mutation.replaceKillSwitch': 'killSwitch',
  // Change requests (docs/change-requests.md).
  'ChangeRequest.environments': 'orgEnvironments',
  'ChangeRequest.requiredApprovals': 'orgEnvironments',
  'ChangeRequestRevision.environments': 'orgEnvironments',
  'ChangeRequestPreview.flags': 'flags',
};

/**
 * Lists not in the snapshot whose length a limit bounds: a flag's schedules, at most the
 * VEXIL_MAX_PENDING_SCHEDULES_PER_FLAG default pending plus the finished ones kept (docs/limits.md).
 */
const FIXED_LENGTHS: Readonly<Record<string, number>> = {
  'Flag.schedules': DEFAULT_TENANCY_LIMITS.maxPendingSchedulesPerFlag + SCHEDULE_FINISHED_KEPT,
  // A change request's reviews and revisions: counted as one per key the organization may hold.
  'ChangeRequest.approvals': DEFAULT_MAX_KEYS,
  'ChangeRequest.rejections': DEFAULT_MAX_KEYS,
  'ChangeRequestHistory.reviews': DEFAULT_MAX_KEYS,
  'ChangeRequestHistory.revisions': DEFAULT_MAX_KEYS,
  // A preview answers at most 20 examples; a flag's transitions are pairs of its answers.
  'ChangeRequestPreview.examples': 20,
  'ChangeRequestPreviewFlag.transitions': 100,
  // Webhooks (docs/webhooks.md): VEXIL_MAX_WEBHOOKS_PER_ORG's default, and an endpoint's patterns.
  'Query.webhooks': WEBHOOK_LIST_LENGTHS.endpoints,
  'WebhookEndpoint.events': WEBHOOK_LIST_LENGTHS.patterns,
};

/** Lists answering one page: at most `max`, `first` items, else `default`. */
const PAGED: Readonly<Record<string, { max: number; default: number }>> = {
  'Query.auditLog': { max: 500, default: 100 },
  'WebhookEndpoint.deliveries': WEBHOOK_LIST_LENGTHS.deliveries,
};

/** Where a `first` comes from: a literal, or a variable (with its default, if any). */
type Bound = { lit: number | null } | { variable: string; fallback: number | null };

export interface ShapeNode {
  /** The list's length: a constant, a snapshot statistic; null when the field is not a list. */
  length: number | StatName | null;
  /** Nested list levels (`[[T]]`): the length counts at each. */
  levels: number;
  /** A `first` bounding the length (the field's own, or its connection's for `nodes` / `edges`). */
  first: Bound | null;
  /** The length when `first` is absent (a paged list), else null. */
  defaultFirst: number | null;
  /** Values one item holds from selections of known size (a leaf: 1). */
  constant: number;
  /** Selections whose size depends on the snapshot or the variables. */
  children: ShapeNode[];
}

export interface ResultShape {
  /** The operation's selection set (length null). */
  root: ShapeNode;
  /** The estimate when it depends on neither snapshot nor variables, else null. */
  fixed: number | null;
  /** A mutation: snapshot lengths grow by `growth` (plus the variables' list items). */
  mutation: boolean;
  /** Mutation fields plus the list items written in their arguments and in variable defaults. */
  growth: number;
}

// ---- the shape (once per document) ------------------------------------------------------------

const introspectionLengths = new WeakMap<GraphQLSchema, Map<string, number>>();

/** The longest list each introspection list field can answer in `schema` (lists under `__type(name:)`; `__schema` is counted exactly). */
function introspectionOf(schema: GraphQLSchema): Map<string, number> {
  let m = introspectionLengths.get(schema);
  if (m !== undefined) return m;
  const types = Object.values(schema.getTypeMap());
  const directives = schema.getDirectives();
  const lengths = new Map<string, number>([['__Schema.types', types.length], ['__Schema.directives', directives.length]]);
  for (const key of ['__Type.fields', '__Type.interfaces', '__Type.possibleTypes', '__Type.enumValues', '__Type.inputFields', '__Field.args', '__Directive.args']) lengths.set(key, 0);
  const raise = (key: string, n: number) => {
    if (n > lengths.get(key)!) lengths.set(key, n);
  };
  for (const t of types) {
    if (isObjectType(t) || isInterfaceType(t)) {
      const fs = Object.values(t.getFields());
      raise('__Type.fields', fs.length);
      for (const f of fs) raise('__Field.args', f.args.length);
      raise('__Type.interfaces', t.getInterfaces().length);
    }
    if (isInterfaceType(t) || isUnionType(t)) raise('__Type.possibleTypes', schema.getPossibleTypes(t).length);
    if (isEnumType(t)) raise('__Type.enumValues', t.getValues().length);
    if (isInputObjectType(t)) raise('__Type.inputFields', Object.keys(t.getFields()).length);
  }
  for (const d of directives) raise('__Directive.args', d.args.length);
  m = lengths;
  introspectionLengths.set(schema, m);
  return m;
}

/**
 * The values (leaves, as this module counts them) of a `__schema` selection, by running it against
 * the schema alone; null when it cannot run without the request (a directive with a variable).
 */
function introspectionValues(schema: GraphQLSchema, sel: FieldNode, fragments: Map<string, FragmentDefinitionNode>): number | null {
  const document: DocumentNode = {
    kind: Kind.DOCUMENT,
    definitions: [{ kind: Kind.OPERATION_DEFINITION, operation: OperationTypeNode.QUERY, selectionSet: { kind: Kind.SELECTION_SET, selections: [sel] } }, ...fragments.values()],
  };
  const result = executeSync({ schema, document });
  if (result.errors !== undefined || result.data == null) return null;
  return leafValues(result.data);
}

/** Leaves of an answer: each scalar or null is one, objects and lists are what they hold. */
function leafValues(v: unknown): number {
  if (Array.isArray(v)) return v.reduce((n: number, item) => n + leafValues(item), 0);
  if (v !== null && typeof v === 'object') {
    let n = 0;
    for (const k in v as Record<string, unknown>) n += leafValues((v as Record<string, unknown>)[k]);
    return n;
  }
  return 1;
}

function fieldDef(schema: GraphQLSchema, parent: GraphQLNamedType, name: string): GraphQLField<unknown, unknown> | undefined {
  if (name === '__typename') return TypeNameMetaFieldDef;
  if (parent === schema.getQueryType()) {
    if (name === '__schema') return SchemaMetaFieldDef;
    if (name === '__type') return TypeMetaFieldDef;
  }
  if (isObjectType(parent) || isInterfaceType(parent)) return parent.getFields()[name];
  return undefined;
}

/** Items of every list literal in `v` (nested ones included). */
function literalListItems(v: ValueNode): number {
  switch (v.kind) {
    case Kind.LIST:
      return v.values.reduce((n, item) => n + literalListItems(item), v.values.length);
    case Kind.OBJECT:
      return v.fields.reduce((n, f) => n + literalListItems(f.value), 0);
    default:
      return 0;
  }
}

const isFixed = (n: ShapeNode): boolean =>
  n.children.length === 0 && typeof n.length !== 'string' && (n.first === null || 'lit' in n.first);

/** A node's value count when `isFixed`. */
function fixedValue(n: ShapeNode): number {
  if (n.length === null) return Math.max(1, n.constant);
  let len = n.length as number;
  const f = n.first !== null && 'lit' in n.first ? n.first.lit : null;
  const page = f ?? n.defaultFirst;
  if (page !== null && page < len) len = Math.max(0, page);
  return Math.max(1, len ** n.levels * n.constant);
}

class ShapeBuilder {
  private readonly fragments = new Map<string, FragmentDefinitionNode>();
  /** `__schema` selections of this document already counted, by their text. */
  private readonly schemaValues = new Map<string, number | null>();
  private readonly active = new Set<string>();
  private readonly introspection: Map<string, number>;
  /** Int defaults of the operation's variables. */
  readonly defaults = new Map<string, number | null>();

  constructor(
    private readonly schema: GraphQLSchema,
    doc: DocumentNode,
    op: OperationDefinitionNode,
  ) {
    for (const d of doc.definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) this.fragments.set(d.name.value, d);
    for (const v of op.variableDefinitions ?? []) {
      const dv = v.defaultValue;
      this.defaults.set(v.variable.name.value, dv !== undefined && dv.kind === Kind.INT ? Number(dv.value) : null);
    }
    this.introspection = introspectionOf(schema);
  }

  /** Adds what `set` selects on `type` to `into`; `connection`: the enclosing field's `first`. */
  selections(set: SelectionSetNode, type: GraphQLNamedType, connection: Bound | null, into: ShapeNode): void {
    for (const sel of set.selections) {
      switch (sel.kind) {
        case Kind.FIELD: {
          const node = this.field(sel, type, connection);
          if (node === null) break;
          if (isFixed(node)) into.constant += fixedValue(node);
          else into.children.push(node);
          break;
        }
        case Kind.INLINE_FRAGMENT: {
          const on = sel.typeCondition ? this.schema.getType(sel.typeCondition.name.value) : type;
          this.selections(sel.selectionSet, on ?? type, connection, into);
          break;
        }
        case Kind.FRAGMENT_SPREAD: {
          const name = sel.name.value;
          const def = this.fragments.get(name);
          if (def === undefined || this.active.has(name)) break; // validation reports either
          this.active.add(name);
          this.selections(def.selectionSet, this.schema.getType(def.typeCondition.name.value) ?? type, connection, into);
          this.active.delete(name);
          break;
        }
      }
    }
  }

  private bound(sel: FieldNode): Bound | null {
    const arg = sel.arguments?.find((a) => a.name.value === 'first');
    if (arg === undefined) return null;
    const v = arg.value;
    if (v.kind === Kind.INT) return { lit: Number(v.value) };
    if (v.kind === Kind.VARIABLE) return { variable: v.name.value, fallback: this.defaults.get(v.name.value) ?? null };
    return { lit: null }; // null or not an Int: no bound (validation or the resolver answers it)
  }

  private field(sel: FieldNode, parent: GraphQLNamedType, connection: Bound | null): ShapeNode | null {
    const name = sel.name.value;
    const def = fieldDef(this.schema, parent, name);
    if (def === undefined) return null; // validation reports it
    if (def === SchemaMetaFieldDef) {
      // `__schema` answers the same whatever the organization: its exact value count, from running
      // the selection once (once per document: the shape is cached with it).
      // Aliases of one selection run once.
      const text = print(sel.selectionSet ?? sel);
      let exact = this.schemaValues.get(text);
      if (exact === undefined) this.schemaValues.set(text, (exact = introspectionValues(this.schema, sel, this.fragments)));
      if (exact !== null) return { length: null, levels: 0, first: null, defaultFirst: null, constant: exact, children: [] };
    }
    let t: GraphQLOutputType = getNullableType(def.type);
    let levels = 0;
    while (isListType(t)) {
      levels++;
      t = getNullableType(t.ofType);
    }
    const named = t as GraphQLNamedType;
    const key = `${parent.name}.${name}`;
    const first = def.args.some((a) => a.name === 'first') ? this.bound(sel) : null;
    const node: ShapeNode = { length: null, levels, first: null, defaultFirst: null, constant: 0, children: [] };
    if (levels > 0) {
      const paged = PAGED[key];
      if (paged !== undefined) {
        node.length = paged.max;
        node.defaultFirst = paged.default;
      } else {
        node.length = LIST_LENGTHS[key] ?? FIXED_LENGTHS[key] ?? this.introspection.get(key) ?? (isEnumType(named) ? named.getValues().length : 'largest');
      }
      node.first = first ?? ((name === 'nodes' || name === 'edges') ? connection : null);
    }
    if (isLeafType(named) || sel.selectionSet === undefined) node.constant = 1;
    // A field with `first` answering one object is a connection: its `nodes` / `edges` are the page.
    else this.selections(sel.selectionSet, named, levels === 0 ? first : null, node);
    return node;
  }
}

/**
 * The reduced selection tree of `op` (a validated operation of `doc`), with its estimate when it
 * depends on nothing per request. Linear in the operation with fragments expanded.
 */
export function resultShape(schema: GraphQLSchema, doc: DocumentNode, op: OperationDefinitionNode): ResultShape {
  const b = new ShapeBuilder(schema, doc, op);
  const rootType =
    op.operation === 'mutation' ? schema.getMutationType() : op.operation === 'subscription' ? schema.getSubscriptionType() : schema.getQueryType();
  const root: ShapeNode = { length: null, levels: 0, first: null, defaultFirst: null, constant: 0, children: [] };
  if (rootType) b.selections(op.selectionSet, rootType, null, root);
  const mutation = op.operation === 'mutation';
  let growth = 0;
  if (mutation) {
    growth = mutationGrowth(op, doc);
    for (const v of op.variableDefinitions ?? []) if (v.defaultValue !== undefined) growth += literalListItems(v.defaultValue);
  }
  // The root is the response's `data` object, not a field: its constant is what it holds.
  return { root, fixed: isFixed(root) ? root.constant : null, mutation, growth };
}

/** Mutation fields (fragments expanded) and the list items in their literal arguments. */
function mutationGrowth(op: OperationDefinitionNode, doc: DocumentNode): number {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const d of doc.definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d);
  let n = 0;
  const seen = new Set<string>();
  const walk = (set: SelectionSetNode): void => {
    for (const sel of set.selections) {
      if (sel.kind === Kind.FIELD) {
        n += 1;
        for (const a of sel.arguments ?? []) n += literalListItems(a.value);
      } else if (sel.kind === Kind.INLINE_FRAGMENT) walk(sel.selectionSet);
      else {
        const def = fragments.get(sel.name.value);
        if (def !== undefined && !seen.has(sel.name.value)) {
          seen.add(sel.name.value);
          walk(def.selectionSet);
          seen.delete(sel.name.value);
        }
      }
    }
  };
  walk(op.selectionSet);
  return n;
}

// ---- the estimate (per request) ----------------------------------------------------------------

const NO_MAXIMA: ListMaxima = noMaxima();

/** The statistics of `snap` the estimate multiplies with (cheap: the maxima are kept with the snapshot). */
export function resultStats(snap: OrgSnapshot | undefined, managementKeys = DEFAULT_MAX_KEYS): ResultStats {
  const known = snap !== undefined && snap.flags instanceof Map;
  const m = known ? listMaxima(snap) : NO_MAXIMA;
  const s: ResultStats = {
    ...m,
    flags: known ? snap.flags.size : 0,
    orgEnvironments: snap?.org?.environments?.length ?? 0,
    orgApplications: snap?.org?.applications?.length ?? 0,
    killSwitch: snap?.org?.killSwitch?.length ?? 0,
    ...segmentStats(snap),
    managementKeys,
    largest: 0,
  };
  let largest = 0;
  for (const k of Object.keys(s) as StatName[]) if (s[k] > largest) largest = s[k];
  s.largest = largest;
  return s;
}

/** The organization's segment count and longest segment condition list (at most VEXIL_MAX_SEGMENTS_PER_ORG segments). */
function segmentStats(snap: OrgSnapshot | undefined): { segments: number; segmentConditions: number } {
  const all = snap?.segments;
  if (!(all instanceof Map)) return { segments: 0, segmentConditions: 0 };
  let segmentConditions = 0;
  for (const c of (all as Map<string, CompiledSegment>).values()) segmentConditions = Math.max(segmentConditions, c.conditions.length);
  return { segments: all.size, segmentConditions };
}

/** Items of every array in the variables (nested ones included): what a mutation can add. */
function variableListItems(variables: Record<string, unknown> | null): number {
  if (variables === null) return 0;
  let n = 0;
  const stack: unknown[] = [variables];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v !== 'object' || v === null) continue;
    if (Array.isArray(v)) {
      n += v.length;
      for (const item of v) stack.push(item);
    } else for (const k in v) stack.push((v as Record<string, unknown>)[k]);
  }
  return n;
}

function boundValue(b: Bound | null, vars: Record<string, unknown>): number | null {
  if (b === null) return null;
  if ('lit' in b) return b.lit;
  const v = Object.prototype.hasOwnProperty.call(vars, b.variable) ? vars[b.variable] : undefined;
  if (v === undefined) return b.fallback;
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
}

function nodeValue(n: ShapeNode, stats: ResultStats, vars: Record<string, unknown>, growth: number): number {
  let per = n.constant;
  for (const c of n.children) per += nodeValue(c, stats, vars, growth);
  if (n.length === null) return Math.max(1, per);
  let len = typeof n.length === 'number' ? n.length : stats[n.length] + growth;
  const page = boundValue(n.first, vars) ?? n.defaultFirst;
  if (page !== null && page < len) len = Math.max(0, page);
  return Math.max(1, len ** n.levels * per);
}

/**
 * An upper bound of the values the operation's result holds, against `stats` (`resultStats` of
 * the caller's snapshot) and the request's variables. A walk over the reduced tree: microseconds.
 */
export function estimateResult(shape: ResultShape, stats: ResultStats, variables: Record<string, unknown> | null): number {
  if (shape.fixed !== null) return shape.fixed;
  const growth = shape.mutation ? shape.growth + variableListItems(variables) : 0;
  let total = shape.root.constant;
  for (const c of shape.root.children) total += nodeValue(c, stats, variables ?? {}, growth);
  return total;
}

/** The refusal's message: the estimate and the limit, and how to ask for less. */
export function resultViolation(estimate: number, max: number): string | null {
  if (estimate <= max) return null;
  const n = Number.isFinite(estimate) ? String(Math.round(estimate)) : 'more than 1e308';
  return (
    `The result is estimated at up to ${n} values (each list counted at its length in this organization, or its first: argument); ` +
    `VEXIL_GRAPHQL_MAX_RESULT allows at most ${max}. Ask for less: page with flagConnection(first:) or flags(first:)`
  );
}
