/**
 * The front's part of `POST /api/graphql` (management/boundary.ts, admission `graphql`): the key
 * and its first token, the body, the document's limits and further tokens. An evaluation-only
 * document is answered here (or by the pool); any other goes to the management actor (routes.ts),
 * already charged. The front's executor has the evaluation resolvers only.
 */
import { clientAddress } from '../auth/client-address.js';
import { authenticate } from '../auth/authenticate.js';
import { jsonObjectBody } from '../http/exchange.js';
import type { Incoming } from '../http/handler.js';
import type { Admitted } from '../management/boundary.js';
import type { FrontRuntime } from '../runtime.js';
import { graphqlBucket, graphqlExecutor, JSON_HEADERS, parseGraphQLRequest } from './http.js';

export function admitGraphQL(rt: FrontRuntime): (inc: Incoming) => Promise<Admitted> {
  const executor = graphqlExecutor(rt);
  return async (inc) => {
    const auth = await authenticate(rt, inc.managementKey, graphqlBucket, clientAddress(inc));
    const answer = executor.answerOnFront(rt, auth, parseGraphQLRequest(jsonObjectBody(inc)));
    if (answer !== null) return { reply: { status: 200, raw: await answer, headers: JSON_HEADERS } };
    return { admission: { kind: 'key', principal: auth.principal, version: auth.snapshot.org.version } };
  };
}
