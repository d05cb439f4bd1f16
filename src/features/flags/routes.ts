/** REST flag management (docs/api.md#flags); run by the management actor (src/management/). */
import { admittedKey } from '../../auth/admitted.js';
import { jsonObjectBody } from '../../http/exchange.js';
import type { ManagementHandler } from '../../management/boundary.js';
import type { ActorRuntime } from '../../runtime.js';
import { namedResourceRoutes } from '../resource-routes.js';
import { listFlagsReply } from './list-route.js';
import * as flags from './service.js';

export function flagRoutes(rt: ActorRuntime): ManagementHandler[] {
  return [
    {
      method: 'get',
      pattern: '/api/flags',
      handler: (inc) => listFlagsReply(rt, admittedKey(rt, inc), inc),
    },
    ...namedResourceRoutes(rt, '/api/flags', {
      create: flags.createFlag,
      get: flags.getFlagWithConfigs,
      update: flags.updateFlag,
      remove: flags.deleteFlag,
    }),
    {
      method: 'post',
      pattern: '/api/flags/:name/configs',
      handler: async (inc) => ({ status: 200, body: await flags.upsertConfig(rt, admittedKey(rt, inc), inc.params[0], jsonObjectBody(inc)) }),
    },
  ];
}
