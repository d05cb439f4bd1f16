/**
 * The management routes as the front serves them, built from the admission table (boundary.ts):
 * the front admits each request (auth/admission.ts, graphql/admit.ts) and forwards it to the
 * management actor (handle.ts), which runs the handler and answers the bytes the front writes.
 */
import { admitKey, admitOperator } from '../auth/admission.js';
// What the OpenAPI document (served by the front) says about the segment and schedule routes.
import '../features/schedules/openapi.js';
import '../features/segments/openapi.js';
import '../features/policies/openapi.js';
import '../features/insights/openapi.js';
import '../features/change-requests/openapi.js';
import '../features/webhooks/openapi.js';
import type { Incoming, Reply } from '../http/handler.js';
import type { Route } from '../http/router.js';
import { admitGraphQL } from '../graphql/admit.js';
import { graphqlOnError } from '../graphql/http.js';
import type { FrontRuntime } from '../runtime.js';
import { capturedFor, MANAGEMENT_ROUTES, type Admit, type Admitted, type AdmissionNeed, type ManagementRoute } from './boundary.js';
import type { ManagementActor } from './handle.js';

export function managementFrontRoutes(rt: FrontRuntime, actor: ManagementActor): Route[] {
  // One admission step per kind, shared by its routes (the GraphQL one keeps compiled documents).
  const admits: Record<AdmissionNeed, Admit> = { key: admitKey(rt), operator: admitOperator(rt), graphql: admitGraphQL(rt) };
  return MANAGEMENT_ROUTES.map((r) => forwarded(r, admits[r.admit], actor, r.admit === 'graphql' ? graphqlOnError(rt) : undefined));
}

function forwarded(r: ManagementRoute, admit: Admit, actor: ManagementActor, onError: Route['onError']): Route {
  const toActor = (inc: Incoming, a: Admitted): Reply | Promise<Reply> => (a.reply !== undefined ? a.reply : actor.forward(r, inc, a.admission));
  return {
    method: r.method,
    pattern: r.pattern,
    headers: capturedFor(r),
    ...(r.maxBodyDepth === undefined ? {} : { maxBodyDepth: r.maxBodyDepth }),
    ...(onError === undefined ? {} : { onError }),
    handler: (inc) => {
      const a = admit(inc);
      return a instanceof Promise ? a.then((x) => toActor(inc, x)) : toActor(inc, a);
    },
  };
}
