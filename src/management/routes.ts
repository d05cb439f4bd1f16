/**
 * Every route the management actor runs, in one table. Both threads build it: the front thread for
 * the routes' `admit` step (router.ts `Route.management`), the management actor for their handlers.
 */
import { auditRoutes } from '../features/audit/routes.js';
import { flagRoutes } from '../features/flags/routes.js';
import { keyRoutes } from '../features/keys/routes.js';
import { operatorRoutes } from '../features/operator/routes.js';
import { segmentRoutes } from '../features/segments/routes.js';
import { scheduleRoutes } from '../features/schedules/routes.js';
import { graphqlRoutes } from '../graphql/routes.js';
import type { Route } from '../http/router.js';
import type { Runtime } from '../runtime.js';
import { IDEMPOTENCY_HEADER, isIdempotentWrite } from './idempotency.js';

export function managementRoutes(rt: Runtime): Route[] {
  const routes = [...flagRoutes(rt), ...scheduleRoutes(rt), ...keyRoutes(rt), ...operatorRoutes(rt), ...auditRoutes(rt), ...segmentRoutes(rt), ...graphqlRoutes(rt)];
  for (const r of routes) if (r.management === undefined) throw new Error(`${r.method} ${r.pattern} is not a management route`);
  // The actor compresses large answers in a coding the client accepts (http/content-encoding.ts);
  // REST writes accept Idempotency-Key (src/management/idempotency.ts): the front captures both.
  return routes.map((r) => ({ ...r, headers: [...(r.headers ?? []), 'accept-encoding', ...(isIdempotentWrite(r) ? [IDEMPOTENCY_HEADER] : [])] }));
}
