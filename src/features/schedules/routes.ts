/** REST scheduled changes (docs/api.md#scheduled-changes); run by the management actor (src/management/). */
import { admittedKey } from '../../auth/admitted.js';
import { jsonObjectBody } from '../../http/exchange.js';
import type { ManagementHandler } from '../../management/boundary.js';
import type { ActorRuntime } from '../../runtime.js';
import * as schedules from './service.js';

export function scheduleRoutes(rt: ActorRuntime): ManagementHandler[] {
  return [
    {
      method: 'get',
      pattern: '/api/flags/:name/schedules',
      handler: async (inc) => ({ status: 200, body: await schedules.listSchedules(rt, admittedKey(rt, inc), inc.params[0]) }),
    },
    {
      method: 'post',
      pattern: '/api/flags/:name/schedules',
      handler: async (inc) => ({ status: 201, body: await schedules.createSchedule(rt, admittedKey(rt, inc), inc.params[0], jsonObjectBody(inc)) }),
    },
    {
      method: 'del',
      pattern: '/api/flags/:name/schedules/:id',
      handler: async (inc) => {
        await schedules.cancelSchedule(rt, admittedKey(rt, inc), inc.params[0], inc.params[1]);
        return { status: 204 };
      },
    },
  ];
}
