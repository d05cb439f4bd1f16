/**
 * Operations endpoints (docs/api.md#operations, README "Operating Vexil"): `/livez`, `/readyz`,
 * `/healthz` and `/metrics`. None of them needs a Management Key or shows one; `/metrics` asks for
 * `Authorization: Bearer <token>` when VEXIL_METRICS_TOKEN is set. A missing or wrong token spends
 * the client address's failed-authentication budget (docs/limits.md, "Failed authentications"), as
 * a wrong key or operator token does.
 */
import type { AuthFailureBudget } from '../auth/auth-failures.js';
import { checkAuthBudget, refuse } from '../auth/authenticate.js';
import { clientAddress } from '../auth/client-address.js';
import { secretMatches } from '../auth/key-material.js';
import { VexilError } from '../domain/errors.js';
import { errorReply } from '../http/problem.js';
import type { Reply } from '../http/handler.js';
import type { Route } from '../http/router.js';
import type { DbHealth } from './db-health.js';
import type { NodeMetrics } from './metrics.js';

export interface OpsDeps {
  nodeId: string;
  /** Null when VEXIL_METRICS=0: no /metrics route. */
  metrics: NodeMetrics | null;
  metricsToken: string | null;
  /** Failed authentications per client address, shared with keys and the operator token. */
  authFailures: AuthFailureBudget;
  dbHealth: DbHealth;
  draining(): boolean;
  clusterNodes(): number;
  /** 'up' | 'down' for NATS, 'local' for the in-process bus. */
  bus(): 'up' | 'down' | 'local';
  httpFront(): string;
  /** Front threads serving the node's port (CONTRACT 20). */
  frontThreads(): number;
}

const unavailable = (detail: string): Reply => errorReply(new VexilError('UNAVAILABLE', detail, { retryAfter: 1 }));

export function opsRoutes(d: OpsDeps): Route[] {
  return [...healthRoutes(d), ...(d.metrics === null ? [] : [metricsRoute(d, d.metrics)])];
}

function healthRoutes(d: OpsDeps): Route[] {
  const ready = (dbOk: boolean): Reply => {
    if (d.draining()) return unavailable('The node is shutting down');
    if (!dbOk) return unavailable('The database does not answer');
    return { status: 200, body: { status: 'ready', node: d.nodeId, database: 'up', bus: d.bus(), http: d.httpFront(), frontThreads: d.frontThreads() } };
  };
  return [
    { method: 'get', pattern: '/livez', handler: () => ({ status: 200, body: { status: 'live' } }) },
    {
      method: 'get',
      pattern: '/readyz',
      // The routes are served only once every snapshot is loaded (node.ts), so "ready" here means:
      // not draining, and the database answered a check at most a second old.
      handler: () => {
        if (d.draining()) return ready(true);
        const ok = d.dbHealth.answers();
        return ok instanceof Promise ? ok.then(ready) : ready(ok);
      },
    },
    {
      method: 'get',
      pattern: '/healthz',
      handler: () => ({ status: 200, body: { status: 'ok', node: d.nodeId, nodes: d.clusterNodes(), bus: d.bus(), http: d.httpFront(), frontThreads: d.frontThreads() } }),
    },
  ];
}

function metricsRoute(d: OpsDeps, metrics: NodeMetrics): Route {
  return {
    method: 'get',
    pattern: '/metrics',
    headers: ['authorization'],
    handler: async (inc) => {
      if (d.metricsToken !== null) {
        // Past its budget an address gets 429 and its token is not compared, the right one
        // included: otherwise 429 against 200 would still tell a guesser when it found the token.
        const source = clientAddress(inc);
        checkAuthBudget(d, source);
        const auth = inc.headers.authorization;
        const presented = auth.startsWith('Bearer ') ? auth.slice(7).trim() : '';
        if (presented === '' || !secretMatches(presented, d.metricsToken)) {
          const err = refuse(d, source, 'A valid metrics token is required (Authorization: Bearer <token>)');
          return errorReply(err, err.code === 'UNAUTHENTICATED' ? { 'www-authenticate': 'Bearer realm="metrics"' } : undefined);
        }
      }
      return { status: 200, raw: await metrics.text(), headers: { 'content-type': metrics.contentType } };
    },
  };
}
