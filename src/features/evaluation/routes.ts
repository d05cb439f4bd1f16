/** REST evaluation, `POST /flags/{name}` (docs/api.md#evaluation): the hot path. */
import { clientAddress } from '../../auth/client-address.js';
import { authenticate, type Authenticated } from '../../auth/authenticate.js';
import type { Principal } from '../../auth/permissions.js';
import { contextTooDeepError, parseEvaluationBody } from '../../domain/validation.js';
import { BodyTooDeepError, jsonObjectBody } from '../../http/exchange.js';
import type { Incoming, Reply } from '../../http/handler.js';
import { errorReply } from '../../http/problem.js';
import type { EvaluationAnswer } from '../../domain/types.js';
import { booleanParam } from '../../http/query.js';
import type { Route } from '../../http/router.js';
import type { FrontRuntime } from '../../runtime.js';
import { evaluate } from '../../evaluation/evaluate.js';

const evalBucket = (_p: Principal) => 'eval' as const;

// `small`: plain JSON.stringify (the hot path); a variant value came from one request body (1 MiB cap).
const reply = (ev: EvaluationAnswer, explain: boolean): Reply => ({
  status: 200,
  body: explain ? { variant: ev.variant, key: ev.key, reason: ev.reason } : { variant: ev.variant, key: ev.key },
  small: true,
});

export function evaluationRoutes(rt: FrontRuntime): Route[] {
  const answer = (auth: Authenticated, inc: Incoming): Reply | Promise<Reply> => {
    const explain = booleanParam(inc.query, 'explain');
    const input = parseEvaluationBody(jsonObjectBody(inc), rt.config.contextLimits);
    const ev = evaluate(rt, auth, inc.params[0], input);
    return ev instanceof Promise ? ev.then((e) => reply(e, explain)) : reply(ev, explain);
  };
  return [
    {
      method: 'post',
      pattern: '/flags/:name',
      lean: true,
      // The body object is one level above its context: anything deeper cannot pass, and is refused
      // by the exchange (jsonObjectBody) before JSON.parse spends time building it (docs/limits.md).
      maxBodyDepth: rt.config.contextLimits.maxDepth + 1,
      // ... in the words of the context's own limit.
      onError: (err) => errorReply(err instanceof BodyTooDeepError ? contextTooDeepError(rt.config.contextLimits) : err),
      // Written without async/await: with a cached key and no pool, the whole exchange is one
      // synchronous call (no promise per request).
      handler: (inc) => {
        const auth = authenticate(rt, inc.managementKey, evalBucket, clientAddress(inc));
        return auth instanceof Promise ? auth.then((a) => answer(a, inc)) : answer(auth, inc);
      },
    },
  ];
}
