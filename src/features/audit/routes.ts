/** REST `GET /api/audit?target=&type=&limit=&before=` (docs/api.md#audit-log): a bare JSON array, newest first.
 * Run by the management actor (src/management/). */
import { admittedKey } from '../../auth/admitted.js';
import { queryObject } from '../../http/query.js';
import type { ManagementHandler } from '../../management/boundary.js';
import type { ActorRuntime } from '../../runtime.js';
import { auditLog } from './service.js';

export function auditRoutes(rt: ActorRuntime): ManagementHandler[] {
  return [
    {
      method: 'get',
      pattern: '/api/audit',
      handler: async (inc) => ({ status: 200, body: await auditLog(rt, admittedKey(rt, inc), queryObject(inc.query)) }),
    },
  ];
}
