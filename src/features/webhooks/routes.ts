/** REST webhooks (docs/webhooks.md, CONTRACT.md 19); run by the management actor (src/management/). */
import { admittedKey } from '../../auth/admitted.js';
import { jsonObjectBody } from '../../http/exchange.js';
import { queryObject } from '../../http/query.js';
import type { ManagementHandler } from '../../management/boundary.js';
import type { ActorRuntime } from '../../runtime.js';
import * as webhooks from './service.js';

export function webhookRoutes(rt: ActorRuntime): ManagementHandler[] {
  return [
    {
      method: 'post',
      pattern: '/api/webhooks',
      handler: async (inc) => ({ status: 201, body: await webhooks.createWebhook(rt, admittedKey(rt, inc), jsonObjectBody(inc)) }),
    },
    {
      method: 'get',
      pattern: '/api/webhooks',
      handler: async (inc) => ({ status: 200, body: await webhooks.listWebhooks(rt, admittedKey(rt, inc)) }),
    },
    {
      method: 'get',
      pattern: '/api/webhooks/:id',
      handler: async (inc) => ({ status: 200, body: await webhooks.getWebhook(rt, admittedKey(rt, inc), inc.params[0]) }),
    },
    {
      method: 'put',
      pattern: '/api/webhooks/:id',
      handler: async (inc) => ({ status: 200, body: await webhooks.updateWebhook(rt, admittedKey(rt, inc), inc.params[0], jsonObjectBody(inc)) }),
    },
    {
      method: 'del',
      pattern: '/api/webhooks/:id',
      handler: async (inc) => {
        await webhooks.deleteWebhook(rt, admittedKey(rt, inc), inc.params[0]);
        return { status: 204 };
      },
    },
    {
      method: 'post',
      pattern: '/api/webhooks/:id/rotate-secret',
      handler: async (inc) => {
        const a = admittedKey(rt, inc);
        jsonObjectBody(inc, true);
        return { status: 200, body: await webhooks.rotateWebhookSecret(rt, a, inc.params[0]) };
      },
    },
    {
      method: 'post',
      pattern: '/api/webhooks/:id/test',
      handler: async (inc) => {
        const a = admittedKey(rt, inc);
        jsonObjectBody(inc, true);
        return { status: 202, body: await webhooks.testWebhook(rt, a, inc.params[0]) };
      },
    },
    {
      method: 'get',
      pattern: '/api/webhooks/:id/deliveries',
      handler: async (inc) => {
        const a = admittedKey(rt, inc);
        const { deliveries, next } = await webhooks.listDeliveries(rt, a, inc.params[0], queryObject(inc.query));
        const headers: Record<string, string> = {};
        if (next !== null) {
          const params = new URLSearchParams(inc.query);
          params.set('after', next);
          headers.link = `<${inc.path}?${params.toString()}>; rel="next"`;
        }
        return { status: 200, headers, body: deliveries };
      },
    },
    {
      method: 'post',
      pattern: '/api/webhooks/:id/messages/:messageId/replay',
      handler: async (inc) => {
        const a = admittedKey(rt, inc);
        jsonObjectBody(inc, true);
        return { status: 202, body: await webhooks.replayMessage(rt, a, inc.params[0], inc.params[1]) };
      },
    },
  ];
}
