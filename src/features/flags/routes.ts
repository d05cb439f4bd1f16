/** REST flag management (docs/api.md#flags); run by the management actor (src/management/). */
import { admitKey, admittedKey } from '../../auth/admission.js';
import { jsonObjectBody } from '../../http/exchange.js';
import type { Route } from '../../http/router.js';
import type { Runtime } from '../../runtime.js';
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
    {
      method: 'post',
      pattern: '/api/flags',
      management,
      handler: async (inc) => ({ status: 201, body: await flags.createFlag(rt, admittedKey(rt, inc), jsonObjectBody(inc)) }),
    },
    {
      method: 'get',
      pattern: '/api/flags/:name',
      management,
      handler: (inc) => ({ status: 200, body: flags.getFlagWithConfigs(admittedKey(rt, inc), inc.params[0]) }),
    },
    {
      method: 'put',
      pattern: '/api/flags/:name',
      management,
      handler: async (inc) => ({ status: 200, body: await flags.updateFlag(rt, admittedKey(rt, inc), inc.params[0], jsonObjectBody(inc)) }),
    },
    {
      method: 'del',
      pattern: '/api/flags/:name',
      management,
      handler: async (inc) => {
        await flags.deleteFlag(rt, admittedKey(rt, inc), inc.params[0]);
        return { status: 204 };
      },
    },
    {
      method: 'post',
      pattern: '/api/flags/:name/configs',
      management,
      handler: async (inc) => ({ status: 200, body: await flags.upsertConfig(rt, admittedKey(rt, inc), inc.params[0], jsonObjectBody(inc)) }),
    },
  ];
}
