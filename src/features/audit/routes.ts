/** REST `GET /api/audit?target=&type=&limit=&before=` (CONTRACT.md 11): a bare JSON array, newest first.
 * Run by the management actor (src/management/). */
import { admitKey, admittedKey } from '../../auth/admission.js';
import { badRequest } from '../../domain/errors.js';
import type { Route } from '../../http/router.js';
import type { Runtime } from '../../runtime.js';
import { auditLog } from './service.js';

/** The query string as an object of strings; a parameter given twice is 400. */
function queryObject(query: string): Record<string, string> {
  const out: Record<string, string> = {};
  const params = new URLSearchParams(query);
  for (const [k, v] of params) {
    if (Object.prototype.hasOwnProperty.call(out, k)) throw badRequest(`Query parameter '${k}' is given more than once`);
    Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
  }
  return out;
}

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
