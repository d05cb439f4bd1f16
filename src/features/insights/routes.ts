/** REST flag insights, lifecycle half (docs/insights.md, "Lifecycle"); run by the management actor. */
import { admittedKey } from '../../auth/admitted.js';
import { jsonObjectBody } from '../../http/exchange.js';
import { queryObject } from '../../http/query.js';
import type { ManagementHandler } from '../../management/boundary.js';
import type { ActorRuntime } from '../../runtime.js';
import * as insights from './service.js';

export function insightsRoutes(rt: ActorRuntime): ManagementHandler[] {
  return [
    {
      method: 'get',
      pattern: '/api/flags/:name/insights',
      handler: async (inc) => {
        const auth = admittedKey(rt, inc);
        return { status: 200, body: await insights.flagInsights(rt, auth, inc.params[0], queryObject(inc.query)) };
      },
    },
    {
      method: 'get',
      pattern: '/api/insights/settings',
      handler: async (inc) => ({ status: 200, body: await insights.getSettings(rt, admittedKey(rt, inc)) }),
    },
    {
      method: 'put',
      pattern: '/api/insights/settings',
      handler: async (inc) => ({ status: 200, body: await insights.putSettings(rt, admittedKey(rt, inc), jsonObjectBody(inc)) }),
    },
  ];
}
