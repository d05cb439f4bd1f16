/**
 * Operator API (CONTRACT.md 3): 404 unless VEXIL_OPERATOR_TOKEN is set; 401 on a wrong token.
 * A wrong token spends the client address's failed-authentication budget like a wrong key
 * (CONTRACT.md 8); past it the address gets 429 and its token is not even compared, the right one
 * included: otherwise 429 against 201 would still tell a guesser when it found the token.
 */
import { checkAuthBudget, refuse } from '../../auth/authenticate.js';
import { clientAddress } from '../../auth/client-address.js';
import { secretMatches } from '../../auth/key-material.js';
import { VexilError } from '../../domain/errors.js';
import { jsonObjectBody, type Incoming } from '../../http/exchange.js';
import type { Route } from '../../http/router.js';
import type { Runtime } from '../../runtime.js';
import { createOrganization, patchOrganization } from './service.js';

export function operatorRoutes(rt: Runtime): Route[] {
  const token = rt.config.operatorToken;
  const check = (inc: Incoming) => {
    if (token === null) throw new VexilError('NOT_FOUND', 'No such endpoint');
    const source = clientAddress(inc);
    checkAuthBudget(rt, source);
    if (inc.operatorToken === '' || !secretMatches(inc.operatorToken, token)) {
      throw refuse(rt, source, 'Missing or wrong x-operator-token');
    }
  };
  return [
    {
      method: 'post',
      pattern: '/api/operator/organizations',
      handler: async (inc) => {
        check(inc);
        return { status: 201, body: await createOrganization(rt, jsonObjectBody(inc)) };
      },
    },
    {
      method: 'patch',
      pattern: '/api/operator/organizations/:name',
      handler: async (inc) => {
        check(inc);
        return { status: 200, body: await patchOrganization(rt, inc.params[0], jsonObjectBody(inc)) };
      },
    },
  ];
}
