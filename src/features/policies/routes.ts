/** REST environment policies (docs/change-requests.md, "Protecting an environment"); run by the management actor. */
import { admittedKey } from '../../auth/admitted.js';
import { jsonObjectBody } from '../../http/exchange.js';
import type { ManagementHandler } from '../../management/boundary.js';
import type { ActorRuntime } from '../../runtime.js';
import * as policies from './service.js';

export function policyRoutes(rt: ActorRuntime): ManagementHandler[] {
  return [
    {
      method: 'get',
      pattern: '/api/environments/:stage/policy',
      handler: async (inc) => ({ status: 200, body: await policies.getEnvironmentPolicy(rt, admittedKey(rt, inc), inc.params[0]) }),
    },
    {
      method: 'put',
      pattern: '/api/environments/:stage/policy',
      handler: async (inc) => ({ status: 200, body: await policies.setEnvironmentPolicy(rt, admittedKey(rt, inc), inc.params[0], jsonObjectBody(inc)) }),
    },
  ];
}
