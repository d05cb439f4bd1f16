/**
 * Admission of management requests, on the front (management/boundary.ts says which each route
 * needs): `admitKey`, `admitOperator`: 401, 402, 429 and the failed-authentication budget, all
 * decided where the key cache and the rate-limit buckets live. The management actor reads who was
 * admitted from the forwarded request (admitted.ts). A key goes through authenticate.ts, the one
 * admission path of every route and stream; this module only adapts it to the management routes.
 */
import type { Incoming } from '../http/handler.js';
import type { Admitted } from '../management/boundary.js';
import { VexilError } from '../domain/errors.js';
import type { BucketKind } from '../ratelimit/token-bucket.js';
import type { FrontRuntime } from '../runtime.js';
import { authenticate, checkAuthBudget, refuse, type Authenticated } from './authenticate.js';
import { clientAddress } from './client-address.js';
import { secretMatches } from './key-material.js';
import type { Principal } from './permissions.js';

const asAdmitted = (a: Authenticated): Admitted => ({
  admission: { kind: 'key', principal: a.principal, version: a.snapshot.org.version },
  auth: a,
});

/** Front thread: authenticates the request's Management Key and takes one token of its bucket. */
export function admitKey(rt: FrontRuntime, bucketFor: (p: Principal) => BucketKind = () => 'mgmt') {
  return (inc: Incoming): Admitted | Promise<Admitted> => {
    const a = authenticate(rt, inc.managementKey, bucketFor, clientAddress(inc));
    return a instanceof Promise ? a.then(asAdmitted) : asAdmitted(a);
  };
}

/**
 * Front thread: the operator API's token (404 while VEXIL_OPERATOR_TOKEN is unset, 401 when wrong).
 * A wrong token spends the client address's failed-authentication budget like a wrong key; past
 * it the address gets 429 and its token is not even compared, the right one included: otherwise
 * 429 against 201 would still tell a guesser when it found the token.
 */
export function admitOperator(rt: FrontRuntime) {
  const token = rt.config.operatorToken;
  return (inc: Incoming): Admitted => {
    if (token === null) throw new VexilError('NOT_FOUND', 'No such endpoint');
    const source = clientAddress(inc);
    checkAuthBudget(rt, source);
    if (inc.operatorToken === '' || !secretMatches(inc.operatorToken, token)) {
      throw refuse(rt, source, 'Missing or wrong x-operator-token');
    }
    return { admission: { kind: 'operator' } };
  };
}
