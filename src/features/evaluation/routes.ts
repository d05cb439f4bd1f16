/** REST evaluation, `POST /flags/{name}` (SPEC 4.1): the hot path. */
import { clientAddress } from '../../auth/client-address.js';
import { authenticate, type Authenticated } from '../../auth/authenticate.js';
import type { Principal } from '../../auth/permissions.js';
import { badRequest } from '../../domain/errors.js';
import { parseEvaluationBody } from '../../domain/validation.js';
import { bodyDeeperThan, jsonObjectBody } from '../../http/exchange.js';
import type { Incoming, Reply } from '../../http/handler.js';
import type { Evaluation } from '../../domain/types.js';
import { booleanParam } from '../../http/query.js';
import type { Route } from '../../http/router.js';
import type { Runtime } from '../../runtime.js';
import { evaluate } from './service.js';

const evalBucket = (_p: Principal) => 'eval' as const;

// `small`: plain JSON.stringify (the hot path); a variant value came from one request body (1 MiB cap).
const reply = (ev: Evaluation, explain: boolean): Reply => ({
  status: 200,
  body: explain ? { variant: ev.variant, key: ev.key, reason: ev.reason } : { variant: ev.variant, key: ev.key },
  small: true,
});

export function evaluationRoutes(rt: Runtime): Route[] {
  const answer = (auth: Authenticated, inc: Incoming): Reply | Promise<Reply> => {
    const explain = booleanParam(inc.query, 'explain');
    // The body object is one level above its context: anything deeper cannot pass, and is refused
    // before JSON.parse spends time building it (CONTRACT.md 8), from the front's scan.
    const { maxDepth } = rt.config.contextLimits;
    if (bodyDeeperThan(inc, maxDepth + 1)) {
      throw badRequest(`context: nested deeper than VEXIL_CONTEXT_MAX_DEPTH (${maxDepth} levels)`);
    }
    const input = parseEvaluationBody(jsonObjectBody(inc), rt.config.contextLimits);
    const ev = evaluate(rt, auth, inc.params[0], input);
    return ev instanceof Promise ? ev.then((e) => reply(e, explain)) : reply(ev, explain);
  };
  return [
    {
      method: 'post',
      pattern: '/flags/:name',
      maxBodyDepth: rt.config.contextLimits.maxDepth + 1,
      // Written without async/await: with a cached key and no pool, the whole exchange is one
      // synchronous call (no promise per request).
      handler: (inc) => {
        const auth = authenticate(rt, inc.managementKey, evalBucket, clientAddress(inc));
        return auth instanceof Promise ? auth.then((a) => answer(a, inc)) : answer(auth, inc);
      },
    },
  ];
}
