/**
 * `POST /api/graphql` in the management actor (docs/graphql.md): documents the front admitted and
 * did not answer itself (admit.ts), executed with every field's resolver; their further tokens
 * were charged by the front. The transport's rules are http.ts's.
 */
import { admittedKey } from '../auth/admitted.js';
import { jsonObjectBody } from '../http/exchange.js';
import type { ManagementHandler } from '../management/boundary.js';
import type { ActorRuntime } from '../runtime.js';
import { GRAPHQL_PATH, graphqlExecutor, graphqlOnError, JSON_HEADERS, parseGraphQLRequest } from './http.js';
import { resolvers } from './resolvers.js';

export function graphqlRoutes(rt: ActorRuntime): ManagementHandler[] {
  const executor = graphqlExecutor(rt, resolvers);
  return [
    {
      method: 'post',
      pattern: GRAPHQL_PATH,
      onError: graphqlOnError(rt),
      handler: async (inc) => {
        const req = parseGraphQLRequest(jsonObjectBody(inc));
        return { status: 200, raw: await executor.answer(rt, admittedKey(rt, inc), req, true), headers: JSON_HEADERS };
      },
    },
  ];
}
