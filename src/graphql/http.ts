/**
 * `POST /api/graphql` as HTTP (docs/graphql.md, "Transport"): the body's shape, the limits read
 * before execution, the error shape, and the executor's settings. Shared by the front (admit.ts)
 * and the management actor (routes.ts); it imports neither side's code.
 *
 * Order: other methods 405 with `Allow: POST` (router) → body over 1 MiB 413 (exchange) → key
 * missing, unknown or disabled 401 → subscription 402 → rate limit 429 with Retry-After (one token:
 * the evaluation bucket when CanEvaluate is the key's only permission, else the management bucket)
 * → a JSON body nested deeper than MAX_BODY_DEPTH 200 with one BAD_REQUEST error (found by the
 * exchange as the body arrived) → Content-Type not JSON 415 → body not a JSON object, or bad `query` / `variables` /
 * `operationName` / `extensions` 400 → `query` over MAX_QUERY_CHARS 413 → GraphQL (200).
 */
import type { Principal } from '../auth/permissions.js';
import { badRequest, VexilError } from '../domain/errors.js';
import { describeType } from '../domain/validation.js';
import { BodyTooDeepError } from '../http/exchange.js';
import type { Reply } from '../http/handler.js';
import { errorReply } from '../http/problem.js';
import type { BucketKind } from '../ratelimit/token-bucket.js';
import type { Runtime } from '../runtime.js';
import { GraphQLExecutor, type GraphQLRequest } from './execute.js';
import type { ResolverMap } from './schema.js';

export const GRAPHQL_PATH = '/api/graphql';
/**
 * Deepest JSON body accepted (body, variables, then a variable's value): far above any context or
 * input the schema takes, and refused before JSON.parse spends time on it (json-depth.ts).
 */
export const MAX_BODY_DEPTH = 256;
/** Longest accepted `query` text, in characters (100 KiB). */
export const MAX_QUERY_CHARS = 100 * 1024;

export const JSON_HEADERS = { 'content-type': 'application/json; charset=utf-8' };

/** An evaluation-only key pays from its evaluation bucket, any other from management (docs/graphql.md). */
export const graphqlBucket = (p: Principal): BucketKind =>
  p.permissions.size === 1 && p.permissions.has('CanEvaluate') ? 'eval' : 'mgmt';

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The GraphQL-over-HTTP body: `{query, variables?, operationName?, extensions?}`; other keys are ignored. */
export function parseGraphQLRequest(body: Record<string, unknown>): GraphQLRequest {
  const { query, variables, operationName, extensions } = body;
  if (query === undefined || query === null) throw badRequest('query is required');
  if (typeof query !== 'string') throw badRequest(`query: expected a string, got ${describeType(query)}`);
  if (query.length > MAX_QUERY_CHARS) {
    throw new VexilError('PAYLOAD_TOO_LARGE', `query: at most ${MAX_QUERY_CHARS} characters are accepted`);
  }
  if (variables !== undefined && variables !== null && !isObject(variables)) {
    throw badRequest(`variables: expected an object or null, got ${describeType(variables)}`);
  }
  if (operationName !== undefined && operationName !== null && typeof operationName !== 'string') {
    throw badRequest(`operationName: expected a string or null, got ${describeType(operationName)}`);
  }
  if (extensions !== undefined && extensions !== null && !isObject(extensions)) {
    throw badRequest(`extensions: expected an object or null, got ${describeType(extensions)}`);
  }
  return {
    query,
    variables: (variables as Record<string, unknown> | null | undefined) ?? null,
    operationName: (operationName as string | null | undefined) ?? null,
  };
}

/** The answer to a body nested deeper than MAX_BODY_DEPTH: 200 with one BAD_REQUEST error. */
function bodyTooDeepReply(contextMaxDepth: number): Reply {
  const message = `The body is nested more than ${MAX_BODY_DEPTH} levels deep (VEXIL_CONTEXT_MAX_DEPTH is ${contextMaxDepth})`;
  const errors = [{ message, path: [], extensions: { code: 'BAD_REQUEST', status: 400 } }];
  return { status: 200, raw: JSON.stringify({ errors }), headers: JSON_HEADERS };
}

/**
 * A body the exchange found nested deeper (jsonObjectBody, after authentication) is answered like
 * a context over its limit (docs/limits.md): one BAD_REQUEST error, nothing executed. Every other
 * transport error keeps problem+json.
 */
export const graphqlOnError =
  (rt: Runtime) =>
  (err: VexilError): Reply =>
    err instanceof BodyTooDeepError ? bodyTooDeepReply(rt.config.contextLimits.maxDepth) : errorReply(err);

/** The executor with the node's limits; `resolvers` left out: the evaluation resolvers only (execute.ts `vexilSchema`). */
export function graphqlExecutor(rt: Runtime, resolvers?: ResolverMap): GraphQLExecutor {
  return new GraphQLExecutor(rt.log, {
    maxDepth: rt.config.graphqlMaxDepth,
    maxEvaluations: rt.config.graphqlMaxEvaluations,
    maxFields: rt.config.graphqlMaxFields,
    maxMutations: rt.config.graphqlMaxMutations,
    maxResult: rt.config.graphqlMaxResult,
    maxAnswerBytes: rt.config.maxAnswerBytes,
    context: rt.config.contextLimits,
    ...(resolvers === undefined ? {} : { resolvers }),
  });
}
