/**
 * The management routes as the front serves them, built from the admission table (boundary.ts):
 * the front admits each request (auth/admission.ts, graphql/admit.ts) and forwards it to the
 * management actor (handle.ts), which runs the handler and answers the bytes the front writes.
 * One exception: small plain pages of the flag list, which the front answers from its own replica
 * (features/flags/front-page.ts; `FRONT_ANSWERS`).
 */
import { admitKey, admitOperator } from '../auth/admission.js';
import type { Authenticated } from '../auth/authenticate.js';
import { frontFlagPage } from '../features/flags/front-page.js';
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
import { routeId } from './mailbox.js';
import type { ManagementActor } from './handle.js';

/**
 * A management read the front may answer itself from its replica (null: it forwards the request).
 * Only reads whose answer is exactly the actor's, bounded work, and no database.
 */
type FrontAnswer = (rt: FrontRuntime, auth: Authenticated, inc: Incoming) => Reply | null;
const FRONT_ANSWERS: ReadonlyMap<string, FrontAnswer> = new Map([[routeId('get', '/api/flags'), frontFlagPage]]);

export function managementFrontRoutes(rt: FrontRuntime, actor: ManagementActor): Route[] {
  // One admission step per kind, shared by its routes (the GraphQL one keeps compiled documents).
  const admits: Record<AdmissionNeed, Admit> = { key: admitKey(rt), operator: admitOperator(rt), graphql: admitGraphQL(rt) };
  return MANAGEMENT_ROUTES.map((r) => forwarded(rt, r, admits[r.admit], actor, r.admit === 'graphql' ? graphqlOnError(rt) : undefined));
}

function forwarded(rt: FrontRuntime, r: ManagementRoute, admit: Admit, actor: ManagementActor, onError: Route['onError']): Route {
  const here = FRONT_ANSWERS.get(routeId(r.method, r.pattern));
  const toActor = (inc: Incoming, a: Admitted): Reply | Promise<Reply> => {
    if (a.reply !== undefined) return a.reply;
    const answered = here !== undefined && a.auth !== undefined ? here(rt, a.auth, inc) : null;
    return answered ?? actor.forward(r, inc, a.admission);
  };
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
