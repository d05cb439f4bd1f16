/** REST flag management (SPEC 4.2, CONTRACT.md 5). */
import { clientAddress } from '../../auth/client-address.js';
import { authenticate } from '../../auth/authenticate.js';
import { jsonObjectBody, type Incoming } from '../../http/exchange.js';
import type { Route } from '../../http/router.js';
import type { Runtime } from '../../runtime.js';
import { LIST_HEADERS, listFlagsReply } from './list-route.js';
import * as flags from './service.js';

export function flagRoutes(rt: Runtime): Route[] {
  const auth = (inc: Incoming) => authenticate(rt, inc.managementKey, () => 'mgmt', clientAddress(inc));
  return [
    {
      method: 'get',
      pattern: '/api/flags',
      headers: LIST_HEADERS,
      handler: async (inc) => listFlagsReply(rt, await auth(inc), inc),
    },
    {
      method: 'post',
      pattern: '/api/flags',
      handler: async (inc) => {
        const a = await auth(inc);
        return { status: 201, body: await flags.createFlag(rt, a, jsonObjectBody(inc)) };
      },
    },
    {
      method: 'get',
      pattern: '/api/flags/:name',
      handler: async (inc) => ({ status: 200, body: flags.getFlagWithConfigs(await auth(inc), inc.params[0]) }),
    },
    {
      method: 'put',
      pattern: '/api/flags/:name',
      handler: async (inc) => {
        const a = await auth(inc);
        return { status: 200, body: await flags.updateFlag(rt, a, inc.params[0], jsonObjectBody(inc)) };
      },
    },
    {
      method: 'del',
      pattern: '/api/flags/:name',
      handler: async (inc) => {
        await flags.deleteFlag(rt, await auth(inc), inc.params[0]);
        return { status: 204 };
      },
    },
    {
      method: 'post',
      pattern: '/api/flags/:name/configs',
      handler: async (inc) => {
        const a = await auth(inc);
        return { status: 200, body: await flags.upsertConfig(rt, a, inc.params[0], jsonObjectBody(inc)) };
      },
    },
  ];
}
