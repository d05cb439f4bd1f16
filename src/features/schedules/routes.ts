/** REST scheduled changes (docs/api.md#scheduled-changes); run by the management actor (src/management/). */
import { admitKey, admittedKey } from '../../auth/admission.js';
import { jsonObjectBody } from '../../http/exchange.js';
import type { Route } from '../../http/router.js';
import type { Runtime } from '../../runtime.js';
import './openapi.js';
import * as schedules from './service.js';

export function scheduleRoutes(rt: Runtime): Route[] {
  const management = { admit: admitKey(rt) };
  return [
    {
      method: 'get',
      pattern: '/api/flags/:name/schedules',
      management,
      handler: async (inc) => ({ status: 200, body: await schedules.listSchedules(rt, admittedKey(rt, inc), inc.params[0]) }),
    },
    {
      method: 'post',
      pattern: '/api/flags/:name/schedules',
      management,
      handler: async (inc) => ({ status: 201, body: await schedules.createSchedule(rt, admittedKey(rt, inc), inc.params[0], jsonObjectBody(inc)) }),
    },
    {
      method: 'del',
      pattern: '/api/flags/:name/schedules/:id',
      management,
      handler: async (inc) => {
        await schedules.cancelSchedule(rt, admittedKey(rt, inc), inc.params[0], inc.params[1]);
        return { status: 204 };
      },
    },
  ];
}
