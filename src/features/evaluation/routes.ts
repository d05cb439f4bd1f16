/** REST evaluation, `POST /flags/{name}` (SPEC 4.1): the hot path. */
import { authenticate } from '../../auth/authenticate.js';
import type { Principal } from '../../auth/permissions.js';
import { parseEvaluationBody } from '../../domain/validation.js';
import { jsonObjectBody } from '../../http/exchange.js';
import { booleanParam } from '../../http/query.js';
import type { Route } from '../../http/router.js';
import type { Runtime } from '../../runtime.js';
import { evaluate } from './service.js';

const evalBucket = (_p: Principal) => 'eval' as const;

export function evaluationRoutes(rt: Runtime): Route[] {
  return [
    {
      method: 'post',
      pattern: '/flags/:name',
      handler: async (inc) => {
        const auth = await authenticate(rt, inc.managementKey, evalBucket);
        const explain = booleanParam(inc.query, 'explain');
        const input = parseEvaluationBody(jsonObjectBody(inc));
        const ev = await evaluate(rt, auth, inc.params[0], input);
        const body = explain ? { variant: ev.variant, key: ev.key, reason: ev.reason } : { variant: ev.variant, key: ev.key };
        return { status: 200, body };
      },
    },
  ];
}
