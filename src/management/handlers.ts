/**
 * The management actor's route table: one handler per route of the admission table
 * (boundary.ts), which `checkHandlers` holds it to. Only the actor builds it.
 */
import { auditRoutes } from '../features/audit/routes.js';
import { changeRequestRoutes } from '../features/change-requests/routes.js';
import { flagRoutes } from '../features/flags/routes.js';
import { keyRoutes } from '../features/keys/routes.js';
import { operatorRoutes } from '../features/operator/routes.js';
import { segmentRoutes } from '../features/segments/routes.js';
import { scheduleRoutes } from '../features/schedules/routes.js';
import { policyRoutes } from '../features/policies/routes.js';
import { insightsRoutes } from '../features/insights/routes.js';
import { graphqlRoutes } from '../graphql/routes.js';
import { webhookRoutes } from '../features/webhooks/routes.js';
import type { ActorRuntime } from '../runtime.js';
import { checkHandlers, type ManagementHandler } from './boundary.js';

/** Every management handler, by route id (mailbox.ts `routeId`); throws unless they match the admission table. */
export function managementHandlers(rt: ActorRuntime): Map<string, ManagementHandler> {
  return checkHandlers([...flagRoutes(rt), ...scheduleRoutes(rt), ...insightsRoutes(rt), ...keyRoutes(rt), ...operatorRoutes(rt), ...auditRoutes(rt), ...segmentRoutes(rt), ...policyRoutes(rt), ...changeRequestRoutes(rt), ...webhookRoutes(rt), ...graphqlRoutes(rt)]);
}
