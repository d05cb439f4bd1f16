/** REST flag management (docs/api.md#flags); run by the management actor (src/management/). */
import { admitKey, admittedKey } from '../../auth/admission.js';
import { jsonObjectBody } from '../../http/exchange.js';
import type { Route } from '../../http/router.js';
import type { Runtime } from '../../runtime.js';
import { namedResourceRoutes } from '../resource-routes.js';
import { LIST_HEADERS, listFlagsReply } from './list-route.js';
import * as flags from './service.js';

export function flagRoutes(rt: Runtime): Route[] {
  const management = { admit: admitKey(rt) };
  return [
    {
      method: 'get',
      pattern: '/api/flags',
      headers: LIST_HEADERS,
      management,
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
      management,
      handler: async (inc) => ({ status: 200, body: await flags.upsertConfig(rt, admittedKey(rt, inc), inc.params[0], jsonObjectBody(inc)) }),
    },
  ];
}
