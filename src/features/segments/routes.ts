/** REST segment management (docs/api.md#segments); run by the management actor (src/management/). */
import { admittedKey } from '../../auth/admitted.js';
import type { ManagementHandler } from '../../management/boundary.js';
import type { ActorRuntime } from '../../runtime.js';
import { namedResourceRoutes } from '../resource-routes.js';
import * as segments from './service.js';

export const segmentRoutes = (rt: ActorRuntime): ManagementHandler[] => [
  { method: 'get', pattern: '/api/segments', handler: (inc) => ({ status: 200, body: segments.listSegments(admittedKey(rt, inc)) }) },
  ...namedResourceRoutes(rt, '/api/segments', {
    create: segments.createSegment,
    get: segments.getSegment,
    update: segments.updateSegment,
    remove: segments.deleteSegment,
  }),
];
