/** REST segment management (docs/api.md#segments); run by the management actor (src/management/). */
import { admitKey, admittedKey } from '../../auth/admission.js';
import type { Route } from '../../http/router.js';
import type { Runtime } from '../../runtime.js';
import { namedResourceRoutes } from '../resource-routes.js';
import './openapi.js';
import * as segments from './service.js';

export const segmentRoutes = (rt: Runtime): Route[] => [
  { method: 'get', pattern: '/api/segments', management: { admit: admitKey(rt) }, handler: (inc) => ({ status: 200, body: segments.listSegments(admittedKey(rt, inc)) }) },
  ...namedResourceRoutes(rt, '/api/segments', {
    create: segments.createSegment,
    get: segments.getSegment,
    update: segments.updateSegment,
    remove: segments.deleteSegment,
  }),
];
