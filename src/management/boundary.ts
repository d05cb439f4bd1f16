/**
 * The boundary between the front and the management actor (docs/cluster.md, "The boundary"), as
 * one declarative table: every management route, with what the front needs to admit it and to
 * read its request. The front (management/front-routes.ts) serves these and admits them; the actor
 * (management/handlers.ts) runs one handler for each, and refuses to start unless its handlers
 * match this table exactly (`checkHandlers`). Nothing here imports a handler, a service or a store.
 *
 * What crosses, per request: the request's fields and who the front admitted it as (mailbox.ts
 * `request`), then the answer's bytes (`reply`, `piece`).
 */
import type { VexilError } from '../domain/errors.js';
import type { Handler, Incoming, Reply } from '../http/handler.js';
import type { Method } from '../http/router.js';
import { MAX_BODY_DEPTH } from '../graphql/http.js';
import type { Authenticated } from '../auth/authenticate.js';
import { routeId, type Admission } from './mailbox.js';

/**
 * What the front checks before it forwards a request (auth/admission.ts, graphql/admit.ts).
 * Permissions are the handler's to check: its 403 comes after the input's own 400s.
 */
export type AdmissionNeed =
  /** A Management Key (401, 402), then one token of its management bucket (429). */
  | 'key'
  /** The operator API's token (404 while unset, 401 when wrong). */
  | 'operator'
  /**
   * A key, one token of the bucket its permissions choose (graphql/http.ts `graphqlBucket`), then
   * the document's checks and further tokens; an evaluation-only document is answered by the front.
   */
  | 'graphql';

export interface ManagementRoute {
  method: Method;
  pattern: string;
  admit: AdmissionNeed;
  /** Request headers the handler reads (lower-case); the front captures them. */
  headers?: readonly string[];
  /** Deepest JSON body the route accepts (router.ts `Route.maxBodyDepth`). */
  maxBodyDepth?: number;
}

/** What the front's admission decided: forward as `admission`, or answer `reply` itself. */
export type Admitted =
  /** `auth`: the key's principal and the front's snapshot, for a route the front may answer itself (front-routes.ts). */
  | { admission: Admission; reply?: undefined; auth?: Authenticated }
  | { reply: Reply; admission?: undefined; auth?: undefined };
export type Admit = (inc: Incoming) => Admitted | Promise<Admitted>;

/** A management route as the actor runs it. */
export interface ManagementHandler {
  method: Method;
  pattern: string;
  handler: Handler;
  /** Custom error shape (router.ts `Route.onError`). */
  onError?: (err: VexilError) => Reply;
}

const key = (method: Method, pattern: string, headers?: string[]): ManagementRoute => ({ method, pattern, admit: 'key', ...(headers ? { headers } : {}) });
const named = (base: string): ManagementRoute[] => [key('post', base), key('get', `${base}/:name`), key('put', `${base}/:name`), key('del', `${base}/:name`)];
const operator = (method: Method, pattern: string): ManagementRoute => ({ method, pattern, admit: 'operator' });

/** Every management route, in the order the node serves them (and its OpenAPI document lists them). */
export const MANAGEMENT_ROUTES: readonly ManagementRoute[] = [
  // Flags (docs/api.md#flags); the list's next-page link is built on the request's Host.
  key('get', '/api/flags', ['host']),
  ...named('/api/flags'),
  key('post', '/api/flags/:name/configs'),
  // Scheduled changes (docs/api.md#scheduled-changes).
  key('get', '/api/flags/:name/schedules'),
  key('post', '/api/flags/:name/schedules'),
  key('del', '/api/flags/:name/schedules/:id'),
  // Flag insights, lifecycle (docs/insights.md, "Lifecycle").
  key('get', '/api/flags/:name/insights'),
  key('get', '/api/insights/settings'),
  key('put', '/api/insights/settings'),
  // Management Keys (docs/api.md#key-management); `self` before the `:id` patterns.
  key('post', '/api/keys'),
  key('get', '/api/keys'),
  key('get', '/api/keys/self'),
  key('post', '/api/keys/:id/rotate'),
  key('post', '/api/keys/:id/disable'),
  key('del', '/api/keys/:id'),
  // Operator API (docs/api.md#operator-api).
  operator('post', '/api/operator/organizations'),
  operator('patch', '/api/operator/organizations/:name'),
  operator('post', '/api/operator/organizations/:name/admin-keys'),
  // Audit log (docs/api.md#audit-log).
  key('get', '/api/audit'),
  // Segments (docs/api.md#segments).
  key('get', '/api/segments'),
  ...named('/api/segments'),
  // Environment policies (docs/change-requests.md, "Protecting an environment").
  key('get', '/api/environments/:stage/policy'),
  key('put', '/api/environments/:stage/policy'),
  // Change requests (docs/change-requests.md); the list's next-page link is built on the request's Host.
  key('get', '/api/change-requests', ['host']),
  key('post', '/api/change-requests'),
  key('get', '/api/change-requests/:id'),
  key('put', '/api/change-requests/:id'),
  ...['reviews', 'apply', 'rebase', 'schedule', 'close', 'revert', 'preview'].map((a) => key('post', `/api/change-requests/:id/${a}`)),
  // Webhooks (docs/webhooks.md).
  key('post', '/api/webhooks'),
  key('get', '/api/webhooks'),
  key('get', '/api/webhooks/:id'),
  key('put', '/api/webhooks/:id'),
  key('del', '/api/webhooks/:id'),
  key('post', '/api/webhooks/:id/rotate-secret'),
  key('post', '/api/webhooks/:id/test'),
  key('get', '/api/webhooks/:id/deliveries'),
  key('post', '/api/webhooks/:id/messages/:messageId/replay'),
  // GraphQL (docs/graphql.md).
  { method: 'post', pattern: '/api/graphql', admit: 'graphql', maxBodyDepth: MAX_BODY_DEPTH },
];

/** The header that makes a REST write idempotent (management/idempotency.ts). */
export const IDEMPOTENCY_HEADER = 'idempotency-key';

/** Writes under /api/ accept Idempotency-Key. */
export const isIdempotentWrite = (r: { method: Method; pattern: string }): boolean =>
  ['post', 'put', 'patch', 'del'].includes(r.method) && r.pattern.startsWith('/api/');

/** The header by which an Admin key bypasses a protected environment's review (features/policies/bypass.ts). */
export const BYPASS_HEADER = 'x-vexil-bypass-review';

/**
 * The headers the front captures for a management route: the route's own, `accept-encoding` (the
 * actor compresses large answers, http/content-encoding.ts) and, on a write, Idempotency-Key and
 * the review bypass (GraphQL's POST is a write here: its mutations may carry a bypass too).
 */
export const capturedFor = (r: ManagementRoute): string[] => [...(r.headers ?? []), 'accept-encoding', ...(isIdempotentWrite(r) ? [IDEMPOTENCY_HEADER, BYPASS_HEADER] : [])];

/**
 * The actor's handlers by route id, checked against the table: every admitted route has exactly
 * one handler and every handler an admitted route. Throws, naming the differences, otherwise.
 */
export function checkHandlers<H extends ManagementHandler>(handlers: readonly H[]): Map<string, H> {
  const byId = new Map<string, H>();
  const problems: string[] = [];
  for (const h of handlers) {
    const id = routeId(h.method, h.pattern);
    if (byId.has(id)) problems.push(`${id}: two handlers`);
    byId.set(id, h);
  }
  const admitted = new Set(MANAGEMENT_ROUTES.map((r) => routeId(r.method, r.pattern)));
  if (admitted.size !== MANAGEMENT_ROUTES.length) problems.push('the admission table lists a route twice');
  for (const id of admitted) if (!byId.has(id)) problems.push(`${id}: admitted but no handler`);
  for (const id of byId.keys()) if (!admitted.has(id)) problems.push(`${id}: a handler the front never admits`);
  if (problems.length > 0) throw new Error(`The management handlers do not match the admission table (management/boundary.ts): ${problems.join('; ')}`);
  return byId;
}
