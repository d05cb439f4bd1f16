/**
 * Running one GraphQL request, graphql-js style stages:
 *
 *   parse → refuse graphql-jit's marker strings (jit-marker.ts) → select the operation → limits
 *   (limits.ts: depth, evaluate count, mutation count, field count, literal contexts) → result
 *   shape (result-estimate.ts) → validate (graphql-js) → compile (graphql-jit)
 *
 * The limits run before validation: they are linear in the document, graphql-js validation is not
 * (OverlappingFieldsCanBeMerged compares same-named fields pairwise).
 *
 * The outcome of those stages is cached per (document text, operationName) in an LRU, failures
 * included, so a repeated document does no parse, validation or compilation. Then:
 *
 *   context limits on variables (context-argument-limits.ts) → result estimate against the caller's
 *   snapshot (`VEXIL_GRAPHQL_MAX_RESULT`) → charge the extra evaluations and the mutations to the
 *   rate limit → execute the compiled query → serialise, bounded by `VEXIL_MAX_ANSWER_BYTES`
 *
 * A document whose estimate depends on the snapshot or the variables (any list of flags, rules,
 * ...) is validated and compiled only once a request passes its estimate (`ready`): on a document
 * of 20 large aliases graphql-js validation takes 10+ ms and graphql-jit 100+ ms, which a refused
 * document never costs. Every other document (all evaluation documents) is validated, compiled
 * and held to its fixed estimate when it is prepared, as before.
 *
 * Every error leaves here as `{message, locations?, path, extensions: {code, status}}`
 * (docs/graphql.md, "Errors"): a resolver's VexilError gives its code and status (none for
 * AUTH_NOT_AUTHORIZED: domain/errors.ts), syntax, validation, limit and variable errors are
 * BAD_REQUEST 400 with `path: []` and no `data`, and anything unexpected is INTERNAL 500 without
 * internals (logged).
 */
import {
  BREAK,
  getOperationAST,
  GraphQLError,
  Kind,
  NoFragmentCyclesRule,
  parse,
  validate,
  visit,
  type DocumentNode,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type ValueNode,
} from 'graphql';
import { compileQuery, isCompiledQuery, type CompiledQuery } from 'graphql-jit';
import type { Authenticated } from '../auth/authenticate.js';
import type { OrgSnapshot } from '../engine/compiled.js';
import { DEFAULT_CONTEXT_LIMITS, type ContextLimits } from '../domain/validation.js';
import { graphqlExtensions, VexilError } from '../domain/errors.js';
import type { FrontRuntime, Runtime } from '../runtime.js';
import type { Logger } from '../util/log.js';
import { LruCache } from './cache.js';
import { contextViolation, hasVariable, variableDefaults } from './context-argument-limits.js';
import { hasJitMarker } from './jit-marker.js';
import { DEFAULT_MAX_MUTATIONS, EVALUATE_FIELD, limitViolation, measureOperation, tokenLimitViolation, type Limits, type OperationCost } from './limits.js';
import { placed } from '../evaluation/placement.js';
import type { EvalPool } from '../evaluation/pool/eval-pool.js';
import { planFor, runPlan, type EvaluationPlan } from './plan.js';
import { evaluationEnv, evaluationResolvers, type GraphQLContext } from './evaluation-resolvers.js';
import { DEFAULT_MAX_KEYS, DEFAULT_MAX_RESULT, estimateResult, resultShape, resultStats, resultViolation, type ResultShape } from './result-estimate.js';
import { buildVexilSchema, trackDeferredAny, type ResolverMap } from './schema.js';
import { AnswerTooLargeError, boundedJson } from '../util/bounded-json.js';

export interface GraphQLRequest {
  query: string;
  variables: Record<string, unknown> | null;
  operationName: string | null;
}

export interface FormattedError {
  message: string;
  locations?: readonly { line: number; column: number }[];
  path: readonly (string | number)[];
  extensions: { code: string; status?: number };
}

export interface GraphQLResponse {
  errors?: FormattedError[];
  data?: Record<string, unknown> | null;
}

export type Prepared =
  | { ok: false; errors: FormattedError[] }
  | {
      ok: true;
      /** The compiled query; null until a request passes the result estimate (`ready`). */
      run: CompiledQuery['query'] | null;
      /** `evaluate` fields the operation runs (limits.ts). */
      evaluations: number;
      /** Mutation fields the operation runs (limits.ts): each costs a management token. */
      mutations: number;
      depth: number;
      /** Known once compiled. */
      deferredAny: boolean;
      /** The reduced selection tree the result estimate walks (result-estimate.ts). */
      shape: ResultShape;
      /** What validating and compiling need, kept until they have happened (`ready`). */
      pending: { doc: DocumentNode; op: OperationDefinitionNode; operationName: string | null; validated: boolean } | null;
      /** Validation or compilation failed: its request errors, cached like every failure. */
      compileErrors: FormattedError[] | null;
      /**
       * A query whose root fields are all `evaluate` (or `__typename`): it reads only snapshots, so
       * a node with a worker pool runs it in a worker.
       */
      evaluationOnly: boolean;
      /**
       * `evaluate` contexts that mention variables, measured per request against the context
       * limits (literal-only contexts are measured once, here), and the variables' defaults.
       */
      variableContexts: ValueNode[];
      variableDefaults: ReadonlyMap<string, ValueNode>;
      /** The evaluation plan (plan.ts) when the document is one it models (set when compiled). */
      plan: EvaluationPlan | null;
    };

type PreparedDocument = Prepared & { ok: true };

/** A runtime that may charge a document's further tokens: the front's has the rate limiter; the actor's runs documents already charged. */
type Charging = Runtime & Partial<Pick<FrontRuntime, 'limiter'>>;

export interface ExecutorOptions extends Limits {
  /** `VEXIL_GRAPHQL_MAX_RESULT`: estimated values one result may hold (default 200,000). */
  maxResult?: number;
  /** `VEXIL_MAX_ANSWER_BYTES`: the largest serialised answer (default 256 MiB). */
  maxAnswerBytes?: number;
  /** Management keys an organization may hold, for the estimate of `managementKeys` (default 1,000). */
  maxKeys?: number;
  /** Evaluation context size limits (default 32 levels, 10,000 values; docs/limits.md). */
  context?: ContextLimits;
  /** Compiled documents kept (LRU). */
  cacheEntries?: number;
  /** Total document text kept in the cache, in characters. */
  cacheChars?: number;
  /** The fields this executor can run (default: `evaluate` only, as in an evaluation worker). */
  resolvers?: ResolverMap;
}

const schemas = new Map<ResolverMap, GraphQLSchema>();

/**
 * The executable schema with `resolvers` attached, built once per process and resolver map (the
 * resolvers take the runtime from the context). Every thread validates against the same SDL;
 * an evaluation worker attaches only `evaluate` (evaluation-resolvers.ts), the management actor
 * every field (resolvers.ts).
 */
export function vexilSchema(resolvers: ResolverMap = evaluationResolvers): GraphQLSchema {
  let schema = schemas.get(resolvers);
  if (schema === undefined) {
    schema = buildVexilSchema(resolvers);
    schemas.set(resolvers, schema);
  }
  return schema;
}

const badRequest = (message: string, locations?: readonly { line: number; column: number }[]): FormattedError => ({
  message,
  ...(locations && locations.length > 0 ? { locations } : {}),
  path: [],
  extensions: { code: 'BAD_REQUEST', status: 400 },
});

const requestErrors = (errors: readonly GraphQLError[]): FormattedError[] =>
  errors.map((e) => badRequest(e.message, e.locations));

/** One request-level error as the whole response (small: plain JSON.stringify). */
const refusal = (message: string): string => JSON.stringify({ errors: [badRequest(message)] } satisfies GraphQLResponse);

/** `VEXIL_MAX_ANSWER_BYTES` default (256 MiB), as exchange.ts's. */
const DEFAULT_MAX_ANSWER_BYTES = 256 * 1024 * 1024;

/** Whether `err` is V8 failing to build a string that long. */
const isSizeRangeError = (err: unknown): boolean => err instanceof RangeError && /Invalid string length/i.test(err.message);

/** graphql-jit's marker strings (jit-marker.ts) in string values or names. */
function carriesJitMarker(doc: DocumentNode): boolean {
  let found = false;
  visit(doc, {
    StringValue(node) {
      if (hasJitMarker(node.value)) {
        found = true;
        return BREAK;
      }
      return undefined;
    },
    Name(node) {
      if (node.value.includes('__MAGIC_')) {
        found = true;
        return BREAK;
      }
      return undefined;
    },
  });
  return found;
}

const isPromise = (v: unknown): v is Promise<unknown> => typeof (v as { then?: unknown } | null)?.then === 'function';

export class GraphQLExecutor {
  readonly cache: LruCache<string, Prepared>;
  /** Documents parsed, validated and (when valid) compiled: cache misses. */
  compilations = 0;
  /** Documents graphql-js parsed (cache misses not refused on their tokens). */
  parses = 0;
  private readonly schema: GraphQLSchema;
  private readonly contextLimits: ContextLimits;
  private readonly maxResult: number;
  private readonly maxMutations: number;
  private readonly maxAnswerBytes: number;

  constructor(
    private readonly log: Logger,
    private readonly opts: ExecutorOptions,
  ) {
    this.contextLimits = opts.context ?? DEFAULT_CONTEXT_LIMITS;
    this.schema = vexilSchema(opts.resolvers);
    this.cache = new LruCache(opts.cacheEntries ?? 500, opts.cacheChars ?? 16 * 1024 * 1024);
    this.maxResult = opts.maxResult ?? DEFAULT_MAX_RESULT;
    this.maxMutations = opts.maxMutations ?? DEFAULT_MAX_MUTATIONS;
    this.maxAnswerBytes = opts.maxAnswerBytes ?? DEFAULT_MAX_ANSWER_BYTES;
  }

  /** Parse, validate, limits and compile, or the cached outcome of a previous identical request. */
  prepare(query: string, operationName: string | null): Prepared {
    // The query text itself is the key in the common case: building a new key string would copy
    // and re-hash the whole document on every request. A NUL never starts a valid document.
    const key = operationName === null ? query : `\0${operationName.length}:${operationName}\n${query}`;
    const hit = this.cache.get(key);
    if (hit !== undefined) return hit;
    const prepared = this.prepareUncached(query, operationName);
    this.cache.set(key, prepared, query.length + (operationName?.length ?? 0) + 64);
    return prepared;
  }

  private prepareUncached(query: string, operationName: string | null): Prepared {
    this.compilations++;
    try {
      return this.stages(query, operationName);
    } catch (err) {
      // Thousands of nested brackets overflow the recursive parser or validator: the client's fault.
      if (err instanceof RangeError) return { ok: false, errors: [badRequest('The document is nested too deeply')] };
      throw err;
    }
  }

  private stages(query: string, operationName: string | null): Prepared {
    // Over the field or depth limit on its tokens alone: refused before parse builds its AST.
    const overTokens = tokenLimitViolation(query, operationName, this.opts);
    if (overTokens !== null) return { ok: false, errors: [badRequest(overTokens)] };
    let doc: DocumentNode;
    this.parses++;
    try {
      doc = parse(query);
    } catch (err) {
      if (err instanceof GraphQLError) return { ok: false, errors: requestErrors([err]) };
      throw err;
    }
    if (carriesJitMarker(doc)) {
      return { ok: false, errors: [badRequest('The document contains a string reserved by the GraphQL engine (__MAGIC_...)')] };
    }
    const op = getOperationAST(doc, operationName ?? undefined);
    // Without a selectable operation, every operation is held to the limits before validation.
    const ops = op != null ? [op] : doc.definitions.filter((d) => d.kind === Kind.OPERATION_DEFINITION);
    let cost: OperationCost | null = null;
    for (const o of ops) {
      cost = measureOperation(doc, o);
      if (!Number.isFinite(cost.depth)) {
        // A fragment cycle: let graphql-js name it (that rule alone is linear).
        const cycles = validate(this.schema, doc, [NoFragmentCyclesRule]);
        if (cycles.length > 0) return { ok: false, errors: requestErrors(cycles) };
      }
      const violation = limitViolation(cost, this.opts);
      if (violation !== null) return { ok: false, errors: [badRequest(violation)] };
    }
    if (op == null || cost === null || ops[0] !== op) {
      const invalid = validate(this.schema, doc);
      if (invalid.length > 0) return { ok: false, errors: requestErrors(invalid) };
      const message = operationName !== null
        ? `Unknown operation named "${operationName}".`
        : 'Must provide operation name if query contains multiple operations.';
      return { ok: false, errors: [badRequest(message)] };
    }
    // The result shape needs no valid document (it skips what validation refuses): a document
    // whose estimate depends on the snapshot is validated only once a request passes its estimate,
    // so a refused one never costs a validation (tens of ms for 20 large aliases).
    const shape = resultShape(this.schema, doc, op);
    if (shape.fixed !== null) {
      const invalid = validate(this.schema, doc);
      if (invalid.length > 0) return { ok: false, errors: requestErrors(invalid) };
    }
    const variableContexts = cost.contexts.filter(hasVariable);
    const defaults = variableDefaults(op);
    const literal = contextViolation(cost.contexts.filter((c) => !hasVariable(c)), null, defaults, this.contextLimits);
    if (literal !== null) return { ok: false, errors: [badRequest(literal)] };
    if (shape.fixed !== null) {
      const over = resultViolation(shape.fixed, this.maxResult);
      if (over !== null) return { ok: false, errors: [badRequest(over)] };
    }
    const evaluationOnly =
      op.operation === 'query' &&
      op.selectionSet.selections.every((sel) => sel.kind === 'Field' && (sel.name.value === EVALUATE_FIELD || sel.name.value === '__typename'));
    const prepared: PreparedDocument = {
      ok: true,
      run: null,
      evaluations: cost.evaluations,
      mutations: cost.mutations,
      depth: cost.depth,
      deferredAny: false,
      shape,
      pending: { doc, op, operationName, validated: shape.fixed !== null },
      compileErrors: null,
      evaluationOnly,
      variableContexts,
      variableDefaults: defaults,
      plan: null,
    };
    // A fixed estimate passed: an evaluation-only document is compiled now (no request can be
    // refused for its size any more). Any other is compiled where it runs (`checked`): the
    // front thread, which only validates and costs it, never compiles one.
    if (shape.fixed !== null && evaluationOnly) {
      const failed = this.ready(prepared);
      if (failed !== null) return { ok: false, errors: failed };
    }
    return prepared;
  }

  /**
   * Validates a prepared document once (when `prepare` did not), without compiling it: what the
   * front thread needs of a document the management actor runs. The errors are cached on it.
   */
  private validated(p: PreparedDocument): FormattedError[] | null {
    if (p.run !== null || p.pending === null || p.pending.validated) return p.compileErrors;
    const invalid = validate(this.schema, p.pending.doc);
    if (invalid.length > 0) {
      p.pending = null;
      p.compileErrors = requestErrors(invalid);
      return p.compileErrors;
    }
    p.pending.validated = true;
    return null;
  }

  /**
   * Validates (when `stages` did not) and compiles a prepared document once (graphql-jit, and the
   * evaluation plan); the request errors if either failed, cached on the entry.
   */
  ready(p: PreparedDocument): FormattedError[] | null {
    if (p.run !== null) return null;
    if (p.compileErrors !== null) return p.compileErrors;
    const { doc, op, operationName, validated } = p.pending!;
    p.pending = null;
    if (!validated) {
      const invalid = validate(this.schema, doc);
      if (invalid.length > 0) {
        p.compileErrors = requestErrors(invalid);
        return p.compileErrors;
      }
    }
    const { result: compiled, deferredAny } = trackDeferredAny(() =>
      compileQuery(this.schema, doc, operationName ?? undefined, { disablingCapturingStackErrors: true }),
    );
    if (!isCompiledQuery(compiled)) {
      p.compileErrors = requestErrors(compiled.errors ?? []);
      return p.compileErrors;
    }
    p.run = compiled.query;
    p.deferredAny = deferredAny;
    p.plan = p.evaluationOnly ? planFor(doc, op, deferredAny) : null;
    return null;
  }

  /**
   * The result estimate of a prepared document for a snapshot and variables: an upper bound of
   * the values its result holds (result-estimate.ts). Microseconds: a walk over the cached shape.
   */
  estimateResult(p: PreparedDocument, snapshot: OrgSnapshot | undefined, variables: Record<string, unknown> | null): number {
    if (p.shape.fixed !== null) return p.shape.fixed;
    return estimateResult(p.shape, resultStats(snapshot, this.opts.maxKeys ?? DEFAULT_MAX_KEYS), variables);
  }

  /**
   * Runs a request for an authenticated key (its first rate-limit token is already taken). Every
   * `evaluate` beyond the first is charged to the key's evaluation bucket, every mutation beyond
   * the first to its management bucket; a document that fails before execution costs nothing more.
   */
  async execute(rt: Charging, auth: Authenticated, req: GraphQLRequest, charged = false): Promise<string> {
    const out = await this.answer(rt, auth, req, charged);
    return typeof out === 'string' ? out : out.toString('utf8');
  }

  /**
   * `execute`'s answer as the route sends it: a large one stays the UTF-8 Buffer it was
   * serialised into (bounded-json.ts) rather than becoming one string. `charged`: the document's
   * further tokens were charged already (by the front thread, for the management actor).
   */
  async answer(rt: Charging, auth: Authenticated, req: GraphQLRequest, charged = false): Promise<string | Buffer> {
    const p = this.checked(rt, auth, req);
    if (typeof p === 'string') return p;
    return this.answerChecked(rt, auth, req, p, charged);
  }

  /**
   * The front thread's part of a request when the management actor runs the node's management
   * work (src/management/): answers what the front answers itself (refusals before execution,
   * and evaluation-only documents, which it evaluates or hands to the pool), or charges the
   * document's further rate-limit tokens and returns null: the management actor executes it
   * (`answer(…, charged = true)`).
   */
  answerOnFront(rt: FrontRuntime, auth: Authenticated, req: GraphQLRequest): Promise<string | Buffer> | string | null {
    const p = this.checked(rt, auth, req, false);
    if (typeof p === 'string') return p;
    if (p.evaluationOnly) return this.answerChecked(rt, auth, req, p, false);
    this.charge(rt, auth, p);
    return null;
  }

  /**
   * Every check before execution (document, variables' contexts, result estimate, validation):
   * the prepared document, or the answer that refuses it. `compile` false (the front thread): a
   * document that is not evaluation-only is validated but not compiled, since the management
   * actor runs it (compiling a large management document with graphql-jit took the front tens of
   * ms the first time, once per document text).
   */
  private checked(rt: Runtime, auth: Authenticated, req: GraphQLRequest, compile = true): PreparedDocument | string {
    const p = this.prepare(req.query, req.operationName);
    if (!p.ok) return JSON.stringify({ errors: p.errors } satisfies GraphQLResponse);
    if (p.variableContexts.length > 0) {
      const violation = contextViolation(p.variableContexts, req.variables, p.variableDefaults, this.contextLimits);
      if (violation !== null) return refusal(violation);
    }
    if (p.shape.fixed === null) {
      const estimate = this.estimateResult(p, rt.snapshots.peek(auth.principal.orgId) ?? auth.snapshot, req.variables);
      const over = resultViolation(estimate, this.maxResult);
      if (over !== null) return refusal(over);
    }
    const failed = compile || p.evaluationOnly ? this.ready(p) : this.validated(p);
    if (failed !== null) return JSON.stringify({ errors: failed } satisfies GraphQLResponse);
    return p;
  }

  /** A valid document's further tokens: each `evaluate` beyond the first, each mutation. */
  private charge(rt: Charging, auth: Authenticated, p: PreparedDocument): void {
    const limiter = rt.limiter;
    if (limiter === undefined) throw new VexilError('INTERNAL', "A document's tokens are charged where it was admitted (the front)");
    if (p.evaluations > 1) limiter.charge('eval', auth.principal.keyId, p.evaluations - 1, this.opts.maxEvaluations);
    if (p.mutations > 0) {
      // Every mutation costs a management token (docs/graphql.md, "Limits"); the request's admission
      // token was the first when it came from the management bucket (http.ts graphqlBucket).
      const evaluatorOnly = auth.principal.permissions.size === 1 && auth.principal.permissions.has('CanEvaluate');
      limiter.charge('mgmt', auth.principal.keyId, evaluatorOnly ? p.mutations : p.mutations - 1, this.maxMutations);
    }
  }

  private async answerChecked(rt: Charging, auth: Authenticated, req: GraphQLRequest, p: PreparedDocument, charged: boolean): Promise<string | Buffer> {
    if (!charged) this.charge(rt, auth, p);
    const run = () => this.run(p, { env: evaluationEnv(rt), rt, auth, deferredAny: p.deferredAny }, req.variables);
    // Only an evaluation-only document may run in a worker (it resolves nothing that needs the node's services).
    if (!p.evaluationOnly) return run();
    return placed(rt.pool, 'graphql', p.evaluations, run, (pool) => this.handOff(pool, rt, auth, req, p.evaluations));
  }

  /**
   * Runs an evaluation-only document in the worker pool. Read-your-writes: the worker needs this
   * node's current version. Variables too deeply nested to hand over fail this request only.
   */
  private async handOff(pool: EvalPool, rt: Runtime, auth: Authenticated, req: GraphQLRequest, evaluations: number): Promise<string> {
    const snapshot = rt.snapshots.peek(auth.principal.orgId) ?? auth.snapshot;
    try {
      return await pool.graphql({
        orgId: auth.principal.orgId,
        version: snapshot.org.version,
        principal: auth.principal,
        query: req.query,
        operationName: req.operationName,
        variables: req.variables,
      }, evaluations);
    } catch (err) {
      if (err instanceof VexilError && err.code === 'BAD_REQUEST') return JSON.stringify({ errors: [badRequest(err.message)] } satisfies GraphQLResponse);
      throw err;
    }
  }

  /**
   * Executes a prepared, compiled document (on the front thread, or in an evaluation worker) and
   * answers the serialised response. (graphql-jit's generated fast-json-stringify serializer was
   * tried: it mis-serialises the Any and DateTime scalars, so JSON.stringify's output it is.)
   */
  async run(p: Prepared & { ok: true }, ctx: GraphQLContext, variables: Record<string, unknown> | null): Promise<string | Buffer> {
    if (p.plan !== null) {
      let planned: string | null;
      try {
        planned = runPlan(p.plan, ctx, variables);
      } catch (err) {
        if (isSizeRangeError(err)) return this.tooLarge(p);
        throw err;
      }
      if (planned !== null) {
        // At most 3 UTF-8 bytes per UTF-16 unit: only a long answer needs counting.
        const max = this.maxAnswerBytes;
        if (planned.length > max || (planned.length * 3 > max && Buffer.byteLength(planned, 'utf8') > max)) return this.tooLarge(p);
        return planned;
      }
    }
    return this.runGeneric(p, ctx, variables);
  }

  /**
   * `run` through graphql-jit only (the plan's reference: test/unit/graphql/plan.test.ts). The answer
   * is JSON.stringify's text, written by `boundedJson`: one over `VEXIL_MAX_ANSWER_BYTES` stops
   * there and is refused (docs/limits.md, "Large answers").
   */
  async runGeneric(p: Prepared & { ok: true }, ctx: GraphQLContext, variables: Record<string, unknown> | null): Promise<string | Buffer> {
    // Compiled here when the caller did not (a direct caller that estimates nothing: tests).
    const failed = this.ready(p);
    if (failed !== null) return JSON.stringify({ errors: failed } satisfies GraphQLResponse);
    let result = p.run!(undefined, ctx, variables ?? {});
    if (isPromise(result)) result = await result;
    const hasData = 'data' in result;
    const out: GraphQLResponse = {};
    if (result.errors && result.errors.length > 0) out.errors = result.errors.map((e) => this.formatError(e, !hasData));
    if (hasData) out.data = (result.data ?? null) as Record<string, unknown> | null;
    try {
      return boundedJson(out, this.maxAnswerBytes) as string | Buffer;
    } catch (err) {
      if (err instanceof AnswerTooLargeError) return this.tooLarge(p);
      throw err;
    }
  }

  /** The refusal of an answer over `VEXIL_MAX_ANSWER_BYTES`: one BAD_REQUEST naming the way to page. */
  private tooLarge(p: PreparedDocument): string {
    const done = p.mutations > 0 ? ' (the document\'s mutations were executed)' : '';
    return refusal(
      `The answer would be larger than VEXIL_MAX_ANSWER_BYTES (${this.maxAnswerBytes} bytes)${done}; ` +
        'ask for less: page with flagConnection(first:) or flags(first:), or select fewer fields',
    );
  }

  /** One execution error; `request` when it stopped the whole request (variable coercion). */
  formatError(err: GraphQLError, request: boolean): FormattedError {
    const orig = err.originalError;
    const locations = err.locations && err.locations.length > 0 ? { locations: err.locations } : {};
    const path = request ? [] : (err.path ?? []);
    if (orig instanceof VexilError) {
      if (orig.code === 'INTERNAL') this.log.error('unexpected error', { err: (orig.cause ?? orig) as Error });
      let message = orig.code === 'INTERNAL' ? 'Unexpected server error' : err.message;
      if (request && orig.message !== message) message = `${message} ${orig.message}`;
      return { message, ...locations, path, extensions: graphqlExtensions(orig) };
    }
    if (request) return { message: err.message, ...locations, path, extensions: { code: 'BAD_REQUEST', status: 400 } };
    if (orig === undefined || orig === null || orig instanceof GraphQLError) {
      // graphql-jit's own field errors: a null variable for a non-null argument is the client's
      // mistake; anything else (a value a type cannot represent, a null in a non-null field) is ours.
      const clientFault = /^Argument "/.test(err.message);
      return {
        message: err.message,
        ...locations,
        path,
        extensions: clientFault ? { code: 'BAD_REQUEST', status: 400 } : { code: 'INTERNAL', status: 500 },
      };
    }
    this.log.error('unexpected error', { err: orig });
    return { message: 'Unexpected server error', ...locations, path, extensions: { code: 'INTERNAL', status: 500 } };
  }
}
