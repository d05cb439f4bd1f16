/** REST key management (CONTRACT.md 4). */
import { clientAddress } from '../../auth/client-address.js';
import { authenticate } from '../../auth/authenticate.js';
import { jsonObjectBody, type Incoming } from '../../http/exchange.js';
import type { Route } from '../../http/router.js';
import type { Runtime } from '../../runtime.js';
import * as keys from './service.js';

export function keyRoutes(rt: Runtime): Route[] {
  const auth = (inc: Incoming) => authenticate(rt, inc.managementKey, () => 'mgmt', clientAddress(inc));
  return [
    {
      method: 'post',
      pattern: '/api/keys',
      handler: async (inc) => {
        const a = await auth(inc);
        // CONTRACT.md 4: the 201 body is exactly {id, name, key, permissions, application,
        // environment, disabled, createdAt}; a new key has no rotatedAt to report.
        const { key, record } = await keys.createKey(rt, a, jsonObjectBody(inc));
        const { rotatedAt: _rotatedAt, ...created } = record;
        return { status: 201, body: { ...created, key } };
      },
    },
    {
      method: 'get',
      pattern: '/api/keys',
      handler: async (inc) => ({ status: 200, body: await keys.listKeys(rt, await auth(inc)) }),
    },
    {
      // Registered before `/api/keys/:id` patterns; "self" is never a key id (ids are UUIDs).
      method: 'get',
      pattern: '/api/keys/self',
      handler: async (inc) => ({ status: 200, body: await keys.selfKey(rt, await auth(inc)) }),
    },
    {
      method: 'post',
      pattern: '/api/keys/:id/rotate',
      handler: async (inc) => {
        const a = await auth(inc);
        jsonObjectBody(inc, true);
        const { id, key } = await keys.rotateKey(rt, a, inc.params[0]);
        return { status: 200, body: { id, key } };
      },
    },
    {
      method: 'post',
      pattern: '/api/keys/:id/disable',
      handler: async (inc) => {
        const a = await auth(inc);
        jsonObjectBody(inc, true);
        return { status: 200, body: await keys.disableKey(rt, a, inc.params[0]) };
      },
    },
    {
      method: 'del',
      pattern: '/api/keys/:id',
      handler: async (inc) => {
        await keys.deleteKey(rt, await auth(inc), inc.params[0]);
        return { status: 204 };
      },
    },
  ];
}
