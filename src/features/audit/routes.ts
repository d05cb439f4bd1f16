/** REST `GET /api/audit?target=&type=&limit=&before=` (docs/api.md#audit-log): a bare JSON array, newest first.
 * Run by the management actor (src/management/). */
import { admitKey, admittedKey } from '../../auth/admission.js';
import { queryObject } from '../../http/query.js';
import type { Route } from '../../http/router.js';
import type { Runtime } from '../../runtime.js';
import { auditLog } from './service.js';

export function auditRoutes(rt: Runtime): Route[] {
  return [
    {
      method: 'get',
      pattern: '/api/audit',
      management: { admit: admitKey(rt) },
      handler: async (inc) => ({ status: 200, body: await auditLog(rt, admittedKey(rt, inc), queryObject(inc.query)) }),
    },
  ];
}
