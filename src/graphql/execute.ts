/**
 * Running one GraphQL request, graphql-js style stages:
 *
 *   parse → refuse graphql-jit's marker strings (below) → validate (graphql-js) → select the
 *   operation → limits (limits.ts) → compile (graphql-jit)
 *
 * The outcome of those stages is cached per (document text, operationName) in an LRU, failures
 * included, so a repeated document does no parse, validation or compilation. Then:
 *
 *   charge the extra evaluations to the rate limit → execute the compiled query → format errors
 *
 * Every error leaves here as `{message, locations?, path, extensions: {code, status}}` (SPEC 7.2):
 * a resolver's VexilError gives its code and status (AUTH_NOT_AUTHORIZED has no status), syntax,
 * validation, limit and variable errors are BAD_REQUEST 400 with `path: []` and no `data`, and
 * anything unexpected is INTERNAL 500 without internals (logged).
 */
import { BREAK, getOperationAST, GraphQLError, parse, validate, visit, type DocumentNode, type GraphQLSchema } from 'graphql';
import { compileQuery, isCompiledQuery, type CompiledQuery } from 'graphql-jit';
import type { Authenticated } from '../auth/authenticate.js';
import { VexilError } from '../domain/errors.js';
import type { Runtime } from '../runtime.js';
import type { Logger } from '../util/log.js';
import { LruCache } from './cache.js';
import { EVALUATE_FIELD, limitViolation, measureOperation, type Limits } from './limits.js';
import { resolvers, type GraphQLContext } from './resolvers.js';
import { buildVexilSchema, trackDeferredAny } from './schema.js';

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
    };

export interface ExecutorOptions extends Limits {
  /** Compiled documents kept (LRU). */
  cacheEntries?: number;
  /** Total document text kept in the cache, in characters. */
  cacheChars?: number;
}

let sharedSchema: GraphQLSchema | null = null;

/** The executable schema, built once per process (resolvers take the runtime from the context). */
export function vexilSchema(): GraphQLSchema {
  sharedSchema ??= buildVexilSchema(resolvers);
  return sharedSchema;
}

const badRequest = (message: string, locations?: readonly { line: number; column: number }[]): FormattedError => ({
  message,
  ...(locations && locations.length > 0 ? { locations } : {}),
  path: [],
  extensions: { code: 'BAD_REQUEST', status: 400 },
});

const requestErrors = (errors: readonly GraphQLError[]): FormattedError[] =>
  errors.map((e) => badRequest(e.message, e.locations));

/**
 * graphql-jit 0.8.9 embeds literal argument values in the code it generates as
 * `JSON.stringify(...)`, then rewrites its own marker strings (`"__MAGIC_DATE__<uuid><x>"` becomes
 * `new Date(<x>)`, likewise NaN and ±Infinity) with regular expressions. A string literal that
 * carries such a marker would therefore be turned into code: remote code execution for any key.
 * Documents whose string values or names contain the marker prefix are refused before compiling.
 */
const JIT_MARKER = /__MAGIC_[A-Z_]*__[0-9a-f]{8}_/;

function hasJitMarker(doc: DocumentNode): boolean {
  let found = false;
  visit(doc, {
    StringValue(node) {
      if (node.value.includes('__MAGIC_') && JIT_MARKER.test(node.value)) {
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
  private readonly schema = vexilSchema();

  constructor(
    private readonly log: Logger,
    private readonly opts: ExecutorOptions,
  ) {
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
    let doc: DocumentNode;
    try {
      doc = parse(query);
    } catch (err) {
      if (err instanceof GraphQLError) return { ok: false, errors: requestErrors([err]) };
      throw err;
    }
    if (hasJitMarker(doc)) {
      return { ok: false, errors: [badRequest('The document contains a string reserved by the GraphQL engine (__MAGIC_...)')] };
    }
    const invalid = validate(this.schema, doc);
    if (invalid.length > 0) return { ok: false, errors: requestErrors(invalid) };
    const op = getOperationAST(doc, operationName ?? undefined);
    if (op == null) {
      const message = operationName !== null
        ? `Unknown operation named "${operationName}".`
        : 'Must provide operation name if query contains multiple operations.';
      return { ok: false, errors: [badRequest(message)] };
    }
    const cost = measureOperation(doc, op);
    const violation = limitViolation(cost, this.opts);
    if (violation !== null) return { ok: false, errors: [badRequest(violation)] };
    const { result: compiled, deferredAny } = trackDeferredAny(() =>
      compileQuery(this.schema, doc, operationName ?? undefined, { disablingCapturingStackErrors: true }),
    );
    if (!isCompiledQuery(compiled)) return { ok: false, errors: requestErrors(compiled.errors ?? []) };
    const evaluationOnly =
      op.operation === 'query' &&
      op.selectionSet.selections.every((sel) => sel.kind === 'Field' && (sel.name.value === EVALUATE_FIELD || sel.name.value === '__typename'));
    return { ok: true, run: compiled.query, evaluations: cost.evaluations, depth: cost.depth, deferredAny, evaluationOnly };
  }

  /**
   * Runs a request for an authenticated key (its first rate-limit token is already taken). Every
   * `evaluate` beyond the first is charged to the key's evaluation bucket; a document that fails
   * before execution costs nothing more.
   */
  async execute(rt: Runtime, auth: Authenticated, req: GraphQLRequest): Promise<string> {
    const p = this.prepare(req.query, req.operationName);
    if (!p.ok) return JSON.stringify({ errors: p.errors } satisfies GraphQLResponse);
    if (p.evaluations > 1) rt.limiter.charge('eval', auth.principal.keyId, p.evaluations - 1, this.opts.maxEvaluations);
    if (p.evaluationOnly && rt.pool !== null) {
      // Read-your-writes through the pool: the worker waits for this node's current version.
      const snapshot = rt.snapshots.peek(auth.principal.orgId) ?? auth.snapshot;
      return rt.pool.graphql({
        orgId: auth.principal.orgId,
        version: snapshot.org.version,
        principal: auth.principal,
        query: req.query,
        operationName: req.operationName,
        variables: req.variables,
      });
    }
    return this.run(p, { rt, auth, deferredAny: p.deferredAny }, req.variables);
  }

  /**
   * Executes a prepared document (on the front thread, or in an evaluation worker) and answers
   * the serialised response. (graphql-jit's generated fast-json-stringify serializer was tried:
   * it mis-serialises the Any and DateTime scalars, so plain JSON.stringify it is.)
   */
  async run(p: Prepared & { ok: true }, ctx: GraphQLContext, variables: Record<string, unknown> | null): Promise<string> {
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
