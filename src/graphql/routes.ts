/**
 * `POST /api/graphql` (docs/graphql.md, "Transport"). Transport failures are HTTP statuses with
 * application/problem+json like REST; everything after the body is read answers 200 with
 * `{data, errors}`.
 *
 * Order: other methods 405 with `Allow: POST` (router) → body over 1 MiB 413 (exchange) → key
 * missing, unknown or disabled 401 → subscription 402 → rate limit 429 with Retry-After (one token:
 * the evaluation bucket when CanEvaluate is the key's only permission, else the management bucket)
 * → a JSON body nested deeper than MAX_BODY_DEPTH 200 with one BAD_REQUEST error (found by the
 * exchange as the body arrived) → Content-Type not JSON 415 → body not a JSON object, or bad `query` / `variables` /
 * `operationName` / `extensions` 400 → `query` over MAX_QUERY_CHARS 413 → GraphQL (200).
 */
import { clientAddress } from '../auth/client-address.js';
import { admittedKey } from '../auth/admission.js';
import { authenticate } from '../auth/authenticate.js';
import type { Principal } from '../auth/permissions.js';
import { badRequest, VexilError } from '../domain/errors.js';
import { describeType } from '../domain/validation.js';
import { BodyTooDeepError, jsonObjectBody } from '../http/exchange.js';
import type { Reply } from '../http/handler.js';
import { errorReply } from '../http/problem.js';
import type { Route } from '../http/router.js';
import type { BucketKind } from '../ratelimit/token-bucket.js';
import type { Runtime } from '../runtime.js';
import { GraphQLExecutor, type GraphQLRequest } from './execute.js';
import { resolvers } from './resolvers.js';

export const GRAPHQL_PATH = '/api/graphql';
/**
 * Deepest JSON body accepted (body, variables, then a variable's value): far above any context or
 * input the schema takes, and refused before JSON.parse spends time on it (json-depth.ts).
 */
export const MAX_BODY_DEPTH = 256;
/** Longest accepted `query` text, in characters (100 KiB). */
export const MAX_QUERY_CHARS = 100 * 1024;

const JSON_HEADERS = { 'content-type': 'application/json; charset=utf-8' };

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

export function graphqlRoutes(rt: Runtime): Route[] {
  const executor = new GraphQLExecutor(rt.log, {
    maxDepth: rt.config.graphqlMaxDepth,
    maxEvaluations: rt.config.graphqlMaxEvaluations,
    maxFields: rt.config.graphqlMaxFields,
    maxMutations: rt.config.graphqlMaxMutations,
    maxResult: rt.config.graphqlMaxResult,
    maxAnswerBytes: rt.config.maxAnswerBytes,
    context: rt.config.contextLimits,
    // The front thread runs only evaluation-only documents with it; the management actor, the rest.
    resolvers,
  });
  return [
    {
      method: 'post',
      pattern: GRAPHQL_PATH,
      maxBodyDepth: MAX_BODY_DEPTH,
      // A body the exchange found nested deeper (jsonObjectBody, after authentication) is answered
      // like a context over its limit (docs/limits.md): one BAD_REQUEST error, nothing executed.
      // Every other transport error keeps problem+json.
      onError: (err) => (err instanceof BodyTooDeepError ? bodyTooDeepReply(rt.config.contextLimits.maxDepth) : errorReply(err)),
      management: {
        // Front thread: admission, the body, the document's limits and cost; evaluation-only
        // documents are answered here (or by the pool), everything else by the management actor.
        admit: async (inc) => {
          const auth = await authenticate(rt, inc.managementKey, graphqlBucket, clientAddress(inc));
          const answer = executor.answerOnFront(rt, auth, parseGraphQLRequest(jsonObjectBody(inc)));
          if (answer !== null) return { reply: { status: 200, raw: await answer, headers: JSON_HEADERS } };
          return { admission: { kind: 'key', principal: auth.principal, version: auth.snapshot.org.version } };
        },
      },
      // Management actor: the document's tokens were charged by the front.
      handler: async (inc) => {
        const req = parseGraphQLRequest(jsonObjectBody(inc));
        return { status: 200, raw: await executor.answer(rt, admittedKey(rt, inc), req, true), headers: JSON_HEADERS };
      },
    },
  ];
}
