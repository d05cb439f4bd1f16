/**
 * Running one GraphQL request, graphql-js style stages:
 *
 *   parse → refuse graphql-jit's marker strings (jit-marker.ts) → select the operation → limits
 *   (limits.ts: depth, evaluate count, field count, literal contexts) → validate (graphql-js) →
 *   compile (graphql-jit)
 *
 * The limits run before validation: they are linear in the document, graphql-js validation is not
 * (OverlappingFieldsCanBeMerged compares same-named fields pairwise).
 *
 * The outcome of those stages is cached per (document text, operationName) in an LRU, failures
 * included, so a repeated document does no parse, validation or compilation. Then:
 *
 *   context limits on variables (context-limits.ts) → charge the extra evaluations to the rate
 *   limit → execute the compiled query → format errors
 *
 * Every error leaves here as `{message, locations?, path, extensions: {code, status}}` (SPEC 7.2):
 * a resolver's VexilError gives its code and status (AUTH_NOT_AUTHORIZED has no status), syntax,
 * validation, limit and variable errors are BAD_REQUEST 400 with `path: []` and no `data`, and
 * anything unexpected is INTERNAL 500 without internals (logged).
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
  type ValueNode,
} from 'graphql';
import { performance } from 'node:perf_hooks';
import { compileQuery, isCompiledQuery, type CompiledQuery } from 'graphql-jit';
import type { Authenticated } from '../auth/authenticate.js';
import { DEFAULT_CONTEXT_LIMITS, type ContextLimits } from '../domain/validation.js';
import { VexilError } from '../domain/errors.js';
import type { Runtime } from '../runtime.js';
import type { Logger } from '../util/log.js';
import { LruCache } from './cache.js';
import { contextViolation, hasVariable, variableDefaults } from './context-limits.js';
import { hasJitMarker } from './jit-marker.js';
import { EVALUATE_FIELD, limitViolation, measureOperation, tokenLimitViolation, type Limits, type OperationCost } from './limits.js';
import { planFor, runPlan, type EvaluationPlan } from './plan.js';
import { evaluationEnv, evaluationResolvers, type GraphQLContext } from './evaluation-resolvers.js';
import { buildVexilSchema, trackDeferredAny, type ResolverMap } from './schema.js';

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
      run: CompiledQuery['query'];
      /** `evaluate` fields the operation runs (limits.ts). */
      evaluations: number;
      depth: number;
      deferredAny: boolean;
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
      /** The evaluation plan (plan.ts) when the document is one it models. */
      plan: EvaluationPlan | null;
    };

export interface ExecutorOptions extends Limits {
  /** CONTRACT.md 8 evaluation context limits (default 32 levels, 10,000 values). */
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

  constructor(
    private readonly log: Logger,
    private readonly opts: ExecutorOptions,
  ) {
    this.contextLimits = opts.context ?? DEFAULT_CONTEXT_LIMITS;
    this.schema = vexilSchema(opts.resolvers);
    this.cache = new LruCache(opts.cacheEntries ?? 500, opts.cacheChars ?? 16 * 1024 * 1024);
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
    const invalid = validate(this.schema, doc);
    if (invalid.length > 0) return { ok: false, errors: requestErrors(invalid) };
    if (op == null || cost === null || ops[0] !== op) {
      const message = operationName !== null
        ? `Unknown operation named "${operationName}".`
        : 'Must provide operation name if query contains multiple operations.';
      return { ok: false, errors: [badRequest(message)] };
    }
    const variableContexts = cost.contexts.filter(hasVariable);
    const defaults = variableDefaults(op);
    const literal = contextViolation(cost.contexts.filter((c) => !hasVariable(c)), null, defaults, this.contextLimits);
    if (literal !== null) return { ok: false, errors: [badRequest(literal)] };
    const { result: compiled, deferredAny } = trackDeferredAny(() =>
      compileQuery(this.schema, doc, operationName ?? undefined, { disablingCapturingStackErrors: true }),
    );
    if (!isCompiledQuery(compiled)) return { ok: false, errors: requestErrors(compiled.errors ?? []) };
    const evaluationOnly =
      op.operation === 'query' &&
      op.selectionSet.selections.every((sel) => sel.kind === 'Field' && (sel.name.value === EVALUATE_FIELD || sel.name.value === '__typename'));
    return {
      ok: true,
      run: compiled.query,
      evaluations: cost.evaluations,
      depth: cost.depth,
      deferredAny,
      evaluationOnly,
      variableContexts,
      variableDefaults: defaults,
      plan: evaluationOnly ? planFor(doc, op, deferredAny) : null,
    };
  }

  /**
   * Runs a request for an authenticated key (its first rate-limit token is already taken). Every
   * `evaluate` beyond the first is charged to the key's evaluation bucket; a document that fails
   * before execution costs nothing more.
   */
  async execute(rt: Runtime, auth: Authenticated, req: GraphQLRequest, charged = false): Promise<string> {
    const p = this.prepare(req.query, req.operationName);
    if (!p.ok) return JSON.stringify({ errors: p.errors } satisfies GraphQLResponse);
    const refused = this.refuseVariables(p, req);
    if (refused !== null) return refused;
    if (!charged) this.charge(rt, auth, p);
    const pool = rt.pool;
    if (p.evaluationOnly && pool !== null) {
      if (pool.wants('graphql', p.evaluations)) return this.handOff(rt, auth, req, p.evaluations);
      const t0 = performance.now();
      const out = await this.run(p, { env: evaluationEnv(rt), rt, auth, deferredAny: p.deferredAny }, req.variables);
      pool.policy.recordInline('graphql', (performance.now() - t0) * 1000, p.evaluations);
      return out;
    }
    return this.run(p, { env: evaluationEnv(rt), rt, auth, deferredAny: p.deferredAny }, req.variables);
  }

  /**
   * The front thread's part of a request when a management actor runs the node's management work
   * (src/management/): answers what the front answers itself (refusals before execution, and
   * evaluation-only documents, which it evaluates or hands to the pool), or charges the document's
   * further rate-limit tokens and returns null: the management actor executes it
   * (`execute(…, charged = true)`).
   */
  answerOnFront(rt: Runtime, auth: Authenticated, req: GraphQLRequest): Promise<string> | string | null {
    const p = this.prepare(req.query, req.operationName);
    if (!p.ok || p.evaluationOnly) return this.execute(rt, auth, req);
    const refused = this.refuseVariables(p, req);
    if (refused !== null) return refused;
    this.charge(rt, auth, p);
    return null;
  }

  /** The variables' evaluation contexts over their limits: the answer; else null. */
  private refuseVariables(p: Prepared & { ok: true }, req: GraphQLRequest): string | null {
    if (p.variableContexts.length === 0) return null;
    const violation = contextViolation(p.variableContexts, req.variables, p.variableDefaults, this.contextLimits);
    return violation === null ? null : JSON.stringify({ errors: [badRequest(violation)] } satisfies GraphQLResponse);
  }

  /** Every `evaluate` beyond the first costs a token of the key's evaluation bucket. */
  private charge(rt: Runtime, auth: Authenticated, p: Prepared & { ok: true }): void {
    if (p.evaluations > 1) rt.limiter.charge('eval', auth.principal.keyId, p.evaluations - 1, this.opts.maxEvaluations);
  }

  /**
   * Runs an evaluation-only document in the worker pool. Read-your-writes: the worker needs this
   * node's current version. Variables too deeply nested to hand over fail this request only.
   */
  private async handOff(rt: Runtime, auth: Authenticated, req: GraphQLRequest, evaluations: number): Promise<string> {
    const snapshot = rt.snapshots.peek(auth.principal.orgId) ?? auth.snapshot;
    try {
      return await rt.pool!.graphql({
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
   * Executes a prepared document (on the front thread, or in an evaluation worker) and answers
   * the serialised response. (graphql-jit's generated fast-json-stringify serializer was tried:
   * it mis-serialises the Any and DateTime scalars, so plain JSON.stringify it is.)
   */
  async run(p: Prepared & { ok: true }, ctx: GraphQLContext, variables: Record<string, unknown> | null): Promise<string> {
    if (p.plan !== null) {
      const planned = runPlan(p.plan, ctx, variables);
      if (planned !== null) return planned;
    }
    return this.runGeneric(p, ctx, variables);
  }

  /** `run` through graphql-jit only (the plan's reference: test/graphql/plan.test.ts). */
  async runGeneric(p: Prepared & { ok: true }, ctx: GraphQLContext, variables: Record<string, unknown> | null): Promise<string> {
    let result = p.run(undefined, ctx, variables ?? {});
    if (isPromise(result)) result = await result;
    const hasData = 'data' in result;
    const out: GraphQLResponse = {};
    if (result.errors && result.errors.length > 0) out.errors = result.errors.map((e) => this.formatError(e, !hasData));
    if (hasData) out.data = (result.data ?? null) as Record<string, unknown> | null;
    return JSON.stringify(out);
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
      const extensions = orig.code === 'AUTH_NOT_AUTHORIZED' ? { code: orig.code } : { code: orig.code, status: orig.status };
      return { message, ...locations, path, extensions };
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
