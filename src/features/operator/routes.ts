/**
 * Operator API (docs/api.md#operator-api): 404 unless VEXIL_OPERATOR_TOKEN is set; 401 on a wrong
 * token (auth/admission.ts `admitOperator`, on the front thread). Run by the management actor.
 */
import { jsonObjectBody } from '../../http/exchange.js';
import type { ManagementHandler } from '../../management/boundary.js';
import type { ActorRuntime } from '../../runtime.js';
import { createOrganization, issueAdminKey, patchOrganization } from './service.js';

export function operatorRoutes(rt: ActorRuntime): ManagementHandler[] {
  return [
    {
      method: 'post',
      pattern: '/api/operator/organizations',
      handler: async (inc) => ({ status: 201, body: await createOrganization(rt, jsonObjectBody(inc)) }),
    },
    {
      method: 'patch',
      pattern: '/api/operator/organizations/:name',
      handler: async (inc) => ({ status: 200, body: await patchOrganization(rt, inc.params[0], jsonObjectBody(inc)) }),
    },
    {
      // A new Admin key for an existing organization. Takes no body.
      method: 'post',
      pattern: '/api/operator/organizations/:name/admin-keys',
      handler: async (inc) => ({ status: 201, body: await issueAdminKey(rt, inc.params[0]) }),
    },
  ];
}
