/** REST segment management (docs/api.md#segments); run by the management actor (src/management/). */
import { admitKey, admittedKey } from '../../auth/admission.js';
import { jsonObjectBody } from '../../http/exchange.js';
import type { Route } from '../../http/router.js';
import type { Runtime } from '../../runtime.js';
import './openapi.js';
import * as segments from './service.js';

export function segmentRoutes(rt: Runtime): Route[] {
  const management = { admit: admitKey(rt) };
  return [
    {
      method: 'get',
      pattern: '/api/segments',
      management,
      handler: (inc) => ({ status: 200, body: segments.listSegments(admittedKey(rt, inc)) }),
    },
    {
      method: 'post',
      pattern: '/api/segments',
      management,
      handler: async (inc) => ({ status: 201, body: await segments.createSegment(rt, admittedKey(rt, inc), jsonObjectBody(inc)) }),
    },
    {
      method: 'get',
      pattern: '/api/segments/:name',
      management,
      handler: (inc) => ({ status: 200, body: segments.getSegment(admittedKey(rt, inc), inc.params[0]) }),
    },
    {
      method: 'put',
      pattern: '/api/segments/:name',
      management,
      handler: async (inc) => ({ status: 200, body: await segments.updateSegment(rt, admittedKey(rt, inc), inc.params[0], jsonObjectBody(inc)) }),
    },
    {
      method: 'del',
      pattern: '/api/segments/:name',
      management,
      handler: async (inc) => {
        await segments.deleteSegment(rt, admittedKey(rt, inc), inc.params[0]);
        return { status: 204 };
      },
    },
  ];
}
