/**
 * Route tables: each feature exports its routes; `mount` registers them on the uWS app, answers
 * 405 with `Allow` for other methods on a known path, and 404 for unknown paths.
 */
import { VexilError } from '../domain/errors.js';
import type { Logger } from '../util/log.js';
import { errorReply, exchange, writeReply, type Handler, type Reply } from './exchange.js';
import type { TemplatedApp } from './uws.js';

export type Method = 'get' | 'post' | 'put' | 'patch' | 'del';

export interface Route {
  method: Method;
  /** uWS pattern, e.g. `/api/flags/:name`. */
  pattern: string;
  handler: Handler;
  /** Custom error shape (GraphQL keeps problem+json only for transport errors). */
  onError?: (err: VexilError) => Reply;
}

const HTTP_NAME: Record<Method, string> = { get: 'GET', post: 'POST', put: 'PUT', patch: 'PATCH', del: 'DELETE' };
const HAS_BODY: Record<Method, boolean> = { get: false, post: true, put: true, patch: true, del: false };

export function mount(app: TemplatedApp, log: Logger, routes: Route[]): void {
  const byPattern = new Map<string, Route[]>();
  for (const r of routes) {
    const params = (r.pattern.match(/\/:/g) ?? []).length;
    app[r.method](r.pattern, exchange(log, params, HAS_BODY[r.method], r.handler, r.onError));
    byPattern.set(r.pattern, [...(byPattern.get(r.pattern) ?? []), r]);
  }
  for (const [pattern, list] of byPattern) {
    const allow = list.map((r) => HTTP_NAME[r.method]).join(', ');
    const onError = list[0].onError;
    app.any(pattern, (res) => {
      const err = new VexilError('METHOD_NOT_ALLOWED', `Method not allowed; use ${allow}`);
      const reply = onError ? onError(err) : errorReply(err);
      writeReply(res, { ...reply, headers: { ...reply.headers, allow } });
    });
  }
  app.any('/*', (res) => {
    writeReply(res, errorReply(new VexilError('NOT_FOUND', 'No such endpoint')));
  });
}
