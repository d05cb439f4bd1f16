/**
 * A front thread's route table (docs/threads.md): the main thread's routes in the main thread's
 * order, each either run here — the evaluation routes, for a key and organization this thread
 * holds — or relayed to the main thread (relay.ts). A local route that meets what only the main
 * thread can decide (`NOT_HELD`: a key it does not hold, the failed-authentication budget, an
 * organization it was not sent) is relayed whole, before it has changed anything.
 */
import { hashKey } from '../../auth/key-material.js';
import { NOT_HELD } from '../../auth/key-mirror.js';
import { requestKey } from '../../auth/request-key.js';
import { KEY_RE } from '../../domain/input-formats.js';
import { CorsPolicy } from '../cors.js';
import type { Incoming, Reply } from '../handler.js';
import type { Route } from '../router.js';
import { routeKey, type RouteMeta } from './mailbox.js';
import type { RelayClient } from './relay.js';

/** What the main thread tells a front thread about a route (mailbox.ts). */
export const routeMeta = (r: Route): RouteMeta => ({
  method: r.method,
  pattern: r.pattern,
  headers: r.headers ?? [],
  maxBodyDepth: r.maxBodyDepth,
  cors: r.cors?.enabled ?? false,
});

/** The hash of the request's key when it is well-formed, for the main thread to say whether this thread may serve it. */
function keyHashOf(inc: Incoming): string {
  const value = requestKey(inc);
  return KEY_RE.test(value) ? hashKey(value) : '';
}

/** The error shape of the relayed routes whose pattern starts with `prefix` (OFREP's own, for one). */
export interface ErrorShape {
  prefix: string;
  onError: NonNullable<Route['onError']>;
}

export interface ThreadRouteOptions {
  /** The routes this thread runs itself (for the keys it holds). */
  local: readonly Route[];
  relay: RelayClient;
  corsOrigins: readonly string[];
  /** The errors this thread answers for a relayed route itself (405, a preflight, 413) take the route's shape. */
  errorShapes: readonly ErrorShape[];
}

export function threadRoutes(metas: readonly RouteMeta[], opts: ThreadRouteOptions): Route[] {
  const own = new Map(opts.local.map((r) => [routeKey(r.method, r.pattern), r]));
  const cors = new CorsPolicy(opts.corsOrigins);
  return metas.map((m, index) => {
    const route = own.get(routeKey(m.method, m.pattern));
    if (route !== undefined) return localOrRelayed(route, index, opts.relay);
    const onError = opts.errorShapes.find((s) => m.pattern.startsWith(s.prefix))?.onError;
    return {
      method: m.method,
      pattern: m.pattern,
      headers: m.headers,
      maxBodyDepth: m.maxBodyDepth,
      // The preflight and 405 answers are this thread's; the main thread's answers carry their CORS headers already.
      cors: m.cors ? cors : undefined,
      ...(onError === undefined ? {} : { onError }),
      handler: (inc) => opts.relay.relay(index, inc, ''),
    };
  });
}

function localOrRelayed(route: Route, index: number, relay: RelayClient): Route {
  const relayed = (inc: Incoming): Promise<Reply> => relay.relay(index, inc, keyHashOf(inc));
  return {
    ...route,
    handler: (inc) => {
      let out: Reply | Promise<Reply>;
      try {
        out = route.handler(inc);
      } catch (err) {
        if (err === NOT_HELD) return relayed(inc);
        throw err;
      }
      if (!(out instanceof Promise)) return out;
      return out.catch((err: unknown) => {
        if (err === NOT_HELD) return relayed(inc);
        throw err;
      });
    },
  };
}
