/**
 * Evaluation plans: the fast path for the documents evaluation traffic sends, a query whose root
 * fields are all `evaluate` (usually aliased, often a hundred of them).
 *
 * graphql-jit spends most of such a document's time outside the engine: per field it builds the
 * arguments object, a resolve-info thunk and the result object, and then JSON.stringify walks the
 * whole result again. A plan is compiled once per document (next to graphql-jit's compiled query,
 * in the same cache entry) and holds, per root field, where each argument comes from (a literal,
 * already checked by `evaluateFieldInput` once for all requests when every argument is one, or a
 * variable) and which fields of `Evaluation` to write under which response keys, with the JSON
 * keys escaped in advance. At run time it evaluates every field with the resolver's own functions
 * (`evaluateField`: permission, scopes, flag and stage lookups, the engine) and writes the answer
 * by concatenation.
 *
 * Byte-for-byte the same answer as graphql-jit or none: `planFor` declines whatever it does not
 * model (fragments, directives, `__typename`, repeated response keys, variables with defaults or
 * of other types, variables nested in a `context` literal), and `runPlan` gives up (null) when any
 * field throws (a 403, a missing flag, ...), a variable would need coercion errors, or a value is
 * not what the schema's serialiser passes through unchanged. The caller then runs the document
 * with graphql-jit, which reports those cases its own way. Evaluations are counted only once every
 * field has answered, so a document that falls back is counted once, by the resolvers.
 *
 * `Evaluation` has no DateTime field; `variant` is `Any`, whose serialiser is the identity, so it
 * is written with JSON.stringify as the generic path's final JSON.stringify would write it.
 */
import { Kind, type DocumentNode, type FieldNode, type OperationDefinitionNode, type SelectionSetNode, type ValueNode } from 'graphql';
import type { Evaluation } from '../domain/types.js';
import type { EvaluationRequest } from '../domain/types.js';
import { DeferredCounts } from '../ops/eval-counts.js';
import { EVALUATE_FIELD } from './limits.js';
import { evaluateField, evaluateFieldInput, type GraphQLContext } from './evaluation-resolvers.js';
import { anyLiteralValue } from './schema.js';

/** Where an argument's value comes from. */
type VariableSource = { variable: string; nonNull: boolean; scalar: 'String' | 'Any' };
type Source = { lit: unknown } | VariableSource;

type Writer = (ev: Evaluation) => string | null;

interface FieldPlan {
  /** `"alias":` (with the separating comma or the response's opening). */
  head: string;
  /** Every argument a literal: the checked input, computed once. */
  input: EvaluationRequest | null;
  key: Source;
  userId: Source;
  stage: Source;
  clientId: Source | undefined;
  context: Source | undefined;
  write: Writer;
}

export interface EvaluationPlan {
  fields: FieldPlan[];
}

const EVALUATE_ARGS = new Set(['key', 'userId', 'stage', 'context', 'clientId']);
const REASON_FIELDS = new Set(['code', 'message', 'ruleId']);

/** Thrown inside `planFor` for anything the plan does not model. */
class NoPlan extends Error {}
const decline = (): never => {
  throw new NoPlan();
};

/** A field the plan can take: no directives, no arguments unless asked, unique response key. */
function plainField(sel: SelectionSetNode['selections'][number], seen: Set<string>): FieldNode {
  if (sel.kind !== Kind.FIELD) return decline();
  if (sel.directives !== undefined && sel.directives.length > 0) decline();
  const responseKey = sel.alias?.value ?? sel.name.value;
  if (seen.has(responseKey)) decline();
  seen.add(responseKey);
  return sel;
}

const jsonKey = (k: string): string => `${JSON.stringify(k)}:`;

/** A String field of the result: a string, or null (undefined too, as graphql-jit answers it). */
function writeString(v: unknown): string | null {
  if (typeof v === 'string') return JSON.stringify(v);
  if (v === null || v === undefined) return 'null';
  return null; // String would coerce it: let graphql-jit
}

/** An Any field: the identity serialiser, then JSON as JSON.stringify writes it inside an object. */
function writeAny(v: unknown): string | null {
  if (v === undefined) return 'null';
  const s = JSON.stringify(v) as string | undefined;
  return s === undefined ? null : s;
}

function reasonWriter(set: SelectionSetNode | undefined): Writer {
  if (set === undefined) return decline();
  const seen = new Set<string>();
  const parts = set.selections.map((sel, i) => {
    const f = plainField(sel, seen);
    if (!REASON_FIELDS.has(f.name.value) || f.selectionSet !== undefined || (f.arguments?.length ?? 0) > 0) decline();
    return { head: (i === 0 ? '{' : ',') + jsonKey(f.alias?.value ?? f.name.value), name: f.name.value as 'code' | 'message' | 'ruleId' };
  });
  return (ev) => {
    const r = ev.reason as Evaluation['reason'] | null | undefined;
    if (r === null || r === undefined) return 'null';
    let out = '';
    for (const p of parts) {
      const v = writeString(r[p.name]);
      if (v === null) return null;
      out += p.head + v;
    }
    return `${out}}`;
  };
}

function evaluationWriter(set: SelectionSetNode | undefined): Writer {
  if (set === undefined) return decline();
  const seen = new Set<string>();
  const parts = set.selections.map((sel, i) => {
    const f = plainField(sel, seen);
    if ((f.arguments?.length ?? 0) > 0) decline();
    const head = (i === 0 ? '{' : ',') + jsonKey(f.alias?.value ?? f.name.value);
    switch (f.name.value) {
      case 'key':
        return { head, write: (ev: Evaluation) => writeString(ev.key) };
      case 'variant':
        return { head, write: (ev: Evaluation) => writeAny(ev.variant) };
      case 'reason':
        return { head, write: reasonWriter(f.selectionSet) };
      default:
        return decline();
    }
  });
  return (ev) => {
    let out = '';
    for (const p of parts) {
      const v = p.write(ev);
      if (v === null) return null;
      out += p.head + v;
    }
    return `${out}}`;
  };
}

/** A literal argument as graphql-jit passes it: JSON-embedded in its generated code. */
function literal(node: ValueNode, scalar: 'String' | 'Any'): Source {
  if (node.kind === Kind.NULL) return { lit: null };
  if (scalar === 'String') return node.kind === Kind.STRING ? { lit: node.value } : decline();
  if (hasVariable(node)) decline();
  return { lit: JSON.parse(JSON.stringify(anyLiteralValue(node))) as unknown };
}

function hasVariable(node: ValueNode): boolean {
  if (node.kind === Kind.VARIABLE) return true;
  if (node.kind === Kind.LIST) return node.values.some(hasVariable);
  if (node.kind === Kind.OBJECT) return node.fields.some((f) => hasVariable(f.value));
  return false;
}

/**
 * The plan for `op`, or null when the document is not one it models (then graphql-jit runs it).
 * `op` has passed validation; `deferredAny` documents (variables nested in literals) get none.
 */
export function planFor(doc: DocumentNode, op: OperationDefinitionNode, deferredAny: boolean): EvaluationPlan | null {
  if (deferredAny || op.operation !== 'query' || (op.directives?.length ?? 0) > 0) return null;
  if (doc.definitions.some((d) => d.kind === Kind.FRAGMENT_DEFINITION)) return null;
  try {
    const vars = new Map<string, { nonNull: boolean; scalar: 'String' | 'Any' }>();
    for (const v of op.variableDefinitions ?? []) {
      if (v.defaultValue !== undefined || (v.directives?.length ?? 0) > 0) decline();
      const nonNull = v.type.kind === Kind.NON_NULL_TYPE;
      const named = nonNull ? (v.type as { type: { kind: string; name?: { value: string } } }).type : v.type;
      if (named.kind !== Kind.NAMED_TYPE) decline();
      const scalar = (named as { name: { value: string } }).name.value;
      if (scalar !== 'String' && scalar !== 'Any') decline();
      vars.set(v.variable.name.value, { nonNull, scalar: scalar as 'String' | 'Any' });
    }
    const seen = new Set<string>();
    const fields = op.selectionSet.selections.map((sel, i): FieldPlan => {
      const f = plainField(sel, seen);
      if (f.name.value !== EVALUATE_FIELD) decline();
      const args: Record<string, Source> = {};
      for (const a of f.arguments ?? []) {
        const name = a.name.value;
        if (!EVALUATE_ARGS.has(name)) decline();
        const scalar = name === 'context' ? 'Any' : 'String';
        if (a.value.kind === Kind.VARIABLE) {
          const v = vars.get(a.value.name.value) ?? decline();
          if (v.scalar !== scalar) decline();
          args[name] = { variable: a.value.name.value, ...v };
        } else args[name] = literal(a.value, scalar);
      }
      const plan: FieldPlan = {
        head: (i === 0 ? '{"data":{' : ',') + jsonKey(f.alias?.value ?? f.name.value),
        input: null,
        key: args.key ?? decline(),
        userId: args.userId ?? decline(),
        stage: args.stage ?? decline(),
        clientId: args.clientId,
        context: args.context,
        write: evaluationWriter(f.selectionSet),
      };
      if (Object.values(args).every((s) => 'lit' in s)) {
        const lit = (s: Source | undefined) => (s === undefined ? undefined : (s as { lit: unknown }).lit);
        // A literal the body check refuses makes a field error every time: graphql-jit's business.
        try {
          plan.input = evaluateFieldInput(
            { key: lit(plan.key) as string, userId: lit(plan.userId) as string, stage: lit(plan.stage) as string, clientId: lit(plan.clientId) as string | null | undefined },
            lit(plan.context),
          );
        } catch {
          decline();
        }
        if (typeof lit(plan.key) !== 'string') decline();
      }
      return plan;
    });
    return { fields };
  } catch (err) {
    if (err instanceof NoPlan) return null;
    throw err;
  }
}

/** An argument left out (graphql-jit leaves it out of `args`). */
const MISSING = Symbol('missing');
/** A variable graphql-jit would refuse (a request or field error): it answers. */
const GIVE_UP = Symbol('give up');
/** A variable's value as graphql-jit would pass it, MISSING when it is absent, or GIVE_UP. */
function variableValue(s: VariableSource, variables: Record<string, unknown>): unknown {
  if (!Object.prototype.hasOwnProperty.call(variables, s.variable)) return s.nonNull ? GIVE_UP : MISSING;
  const v = variables[s.variable];
  if (v === null || v === undefined) return s.nonNull || v === undefined ? GIVE_UP : null;
  if (s.scalar === 'String' && typeof v !== 'string') return GIVE_UP;
  return v;
}

function argument(s: Source | undefined, variables: Record<string, unknown>): unknown {
  if (s === undefined) return MISSING;
  if ('lit' in s) return s.lit;
  return variableValue(s, variables);
}

/**
 * Runs a plan: the serialised response, or null when graphql-jit must answer this request
 * (nothing has been counted then).
 */
export function runPlan(plan: EvaluationPlan, ctx: GraphQLContext, variables: Record<string, unknown> | null): string | null {
  const fields = plan.fields;
  const evs: Evaluation[] = new Array(fields.length);
  const deferred = new DeferredCounts();
  const vars = variables ?? {};
  try {
    for (let i = 0; i < fields.length; i++) {
      const f = fields[i];
      let input = f.input;
      let key: unknown;
      if (input !== null) key = (f.key as { lit: unknown }).lit;
      else {
        key = argument(f.key, vars);
        const userId = argument(f.userId, vars);
        const stage = argument(f.stage, vars);
        const clientId = argument(f.clientId, vars);
        const context = argument(f.context, vars);
        if (typeof key !== 'string' || typeof userId !== 'string' || typeof stage !== 'string' || clientId === GIVE_UP || context === GIVE_UP) return null;
        input = evaluateFieldInput(
          { key, userId, stage, clientId: clientId === MISSING ? undefined : (clientId as string | null) },
          context === MISSING ? undefined : context,
        );
      }
      evs[i] = evaluateField(ctx, key as string, input, deferred);
    }
  } catch {
    return null; // a field error: graphql-jit reports it (and counts the fields that answered)
  }
  let out = '';
  for (let i = 0; i < fields.length; i++) {
    const v = fields[i].write(evs[i]);
    if (v === null) return null;
    out += fields[i].head + v;
  }
  deferred.commit(ctx.env.evalCounts);
  return `${out}}}`;
}
