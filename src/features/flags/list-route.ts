/**
 * REST `GET /api/flags` (CONTRACT.md 13): the query string in, a bare JSON array out, with
 * `X-Total-Count` (flags matching the filters within the key's scope) on every answer and, when a
 * `limit` page has more matching flags after it, `Link: <next page>; rel="next"` (RFC 8288). The
 * next page's URL repeats the request's parameters with `after` set to the page's last name; it is
 * absolute, on VEXIL_PUBLIC_URL when set, else on the request's `Host` (as OFREP's
 * `eventStreams`), and a path alone when the request has no usable Host.
 */
import type { Authenticated } from '../../auth/authenticate.js';
import { requirePermission } from '../../auth/permissions.js';
import type { Incoming, Reply } from '../../http/exchange.js';
import { queryObject } from '../../http/query.js';
import type { Runtime } from '../../runtime.js';
import { listFlagPage } from './service.js';

export const FLAGS_PATH = '/api/flags';

/** A Host header fit to build a URL on: a host name or address and an optional port. */
const HOST_RE = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?$/;

/** The route captures this request header (Route.headers). */
export const LIST_HEADERS = ['host'];

export function listFlagsReply(rt: Runtime, auth: Authenticated, inc: Incoming): Reply {
  // 403 before any 400, a repeated parameter included (the service checks it again).
  requirePermission(auth.principal, 'CanRead');
  const params = queryObject(inc.query);
  const page = listFlagPage(auth, params);
  const headers: Record<string, string> = { 'x-total-count': String(page.total) };
  if (page.hasMore && params.limit !== undefined && page.flags.length > 0) {
    headers.link = `<${nextPageUrl(rt, inc.headers.host ?? '', params, page.flags[page.flags.length - 1].name)}>; rel="next"`;
  }
  return { status: 200, body: page.flags, headers };
}

/** The request's parameters, in their order, with `after` set to `last`. */
export function nextPageUrl(rt: Runtime, host: string, params: Record<string, string>, last: string): string {
  const next = new URLSearchParams({ ...params, after: last });
  const base = rt.config.publicUrl ?? (HOST_RE.test(host) ? `http://${host}` : '');
  return `${base}${FLAGS_PATH}?${next.toString()}`;
}
