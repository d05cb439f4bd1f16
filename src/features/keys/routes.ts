/** REST key management (docs/api.md#key-management); run by the management actor (src/management/). */
import { admittedKey } from '../../auth/admitted.js';
import { jsonObjectBody } from '../../http/exchange.js';
import type { ManagementHandler } from '../../management/boundary.js';
import type { ActorRuntime } from '../../runtime.js';
import * as keys from './service.js';

export function keyRoutes(rt: ActorRuntime): ManagementHandler[] {
  return [
    {
      method: 'post',
      pattern: '/api/keys',
      handler: async (inc) => {
        // The 201 body is exactly {id, name, key, permissions, application, environment, disabled,
        // createdAt} (docs/api.md#key-management); a new key has no rotatedAt to report.
        const { key, record } = await keys.createKey(rt, admittedKey(rt, inc), jsonObjectBody(inc));
        const { rotatedAt: _rotatedAt, ...created } = record;
        return { status: 201, body: { ...created, key } };
      },
    },
    {
      method: 'get',
      pattern: '/api/keys',
      handler: async (inc) => ({ status: 200, body: await keys.listKeys(rt, admittedKey(rt, inc)) }),
    },
    {
      // Registered before `/api/keys/:id` patterns; "self" is never a key id (ids are UUIDs).
      method: 'get',
      pattern: '/api/keys/self',
      handler: async (inc) => ({ status: 200, body: await keys.selfKey(rt, admittedKey(rt, inc)) }),
    },
    {
      method: 'post',
      pattern: '/api/keys/:id/rotate',
      handler: async (inc) => {
        const a = admittedKey(rt, inc);
        jsonObjectBody(inc, true);
        const { id, key } = await keys.rotateKey(rt, a, inc.params[0]);
        return { status: 200, body: { id, key } };
      },
    },
    {
      method: 'post',
      pattern: '/api/keys/:id/disable',
      handler: async (inc) => {
        const a = admittedKey(rt, inc);
        jsonObjectBody(inc, true);
        return { status: 200, body: await keys.disableKey(rt, a, inc.params[0]) };
      },
    },
    {
      method: 'del',
      pattern: '/api/keys/:id',
      handler: async (inc) => {
        await keys.deleteKey(rt, admittedKey(rt, inc), inc.params[0]);
        return { status: 204 };
      },
    },
  ];
}
