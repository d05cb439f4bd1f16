/**
 * The boundary between the front and the management actor (src/management/boundary.ts): the
 * actor's handlers match the front's admission table one to one, and the check that the actor
 * runs at its start refuses a table and handlers that drift apart.
 */
import t from 'tap';
import { checkHandlers, MANAGEMENT_ROUTES, type ManagementHandler } from '../../../src/management/boundary.js';
import { managementHandlers } from '../../../src/management/handlers.js';
import { routeId } from '../../../src/management/mailbox.js';
import { loadConfig } from '../../../src/config.js';
import { EvalCounts } from '../../../src/ops/eval-counts.js';
import type { ActorRuntime } from '../../../src/runtime.js';
import { createLogger } from '../../../src/util/log.js';

// Building the handlers reads settings only; no handler runs here.
const rt = { config: loadConfig({}), log: createLogger('error'), evalCounts: new EvalCounts(), pool: null, now: Date.now } as unknown as ActorRuntime;

t.test('every admitted route has exactly one handler in the actor, and every handler an admitted route', async (t) => {
  const handlers = managementHandlers(rt);
  t.same([...handlers.keys()].sort(), MANAGEMENT_ROUTES.map((r) => routeId(r.method, r.pattern)).sort(), 'the same routes on both sides');
  t.equal(handlers.size, MANAGEMENT_ROUTES.length, 'one handler per admitted route');
});

t.test('handlers that drift from the table are refused, naming the routes', async (t) => {
  const all = [...managementHandlers(rt).values()];
  const extra: ManagementHandler = { method: 'get', pattern: '/api/nowhere', handler: () => ({ status: 200 }) };
  t.throws(() => checkHandlers(all.slice(1)), { message: new RegExp(`${routeId(all[0].method, all[0].pattern)}: admitted but no handler`) }, 'a route without its handler');
  t.throws(() => checkHandlers([...all, extra]), { message: /get \/api\/nowhere: a handler the front never admits/ }, 'a handler without its admission');
  t.throws(() => checkHandlers([...all, all[0]]), { message: /two handlers/ }, 'a route with two handlers');
});
