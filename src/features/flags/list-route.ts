/**
 * REST `GET /api/flags` (docs/api.md#listing-and-paging): the query string in, a bare JSON array
 * out, with `X-Total-Count` (flags matching the filters within the key's scope) on every answer
 * and, when a `limit` page has more matching flags after it, `Link: <next page>; rel="next"` (RFC
 * 8288). The next page's URL repeats the request's parameters with `after` set to the page's last
 * name; it is absolute, on VEXIL_PUBLIC_URL when set, else on the request's `Host` (as OFREP's
 * `eventStreams`), and a path alone when the request has no usable Host.
 */
import type { Authenticated } from '../../auth/authenticate.js';
import { requirePermission } from '../../auth/permissions.js';
import type { Incoming, Reply } from '../../http/handler.js';
import { acceptsCoding, COMPRESS_MIN_BYTES } from '../../http/content-encoding.js';
import { queryObject } from '../../http/query.js';
import type { ActorRuntime } from '../../runtime.js';
import { AnswerTooLargeError } from '../../util/bounded-json.js';
import { flagListBody, flagListGzip } from './list-body.js';
import { LargeListCache, listCacheKey } from './list-cache.js';
import { pageHeaders } from './page.js';
import { listFlagPage } from './service.js';

/**
 * Lists over this size are kept for a repeat at the same version (list-cache.ts). It is far above
 * the size from which the management actor sends an answer in pieces through shared memory
 * (management/mailbox.ts, PIPE_MIN_BYTES), so a kept Buffer is only ever copied, never moved.
 */
const CACHE_MIN_BYTES = 1 << 20;
const largeLists = new LargeListCache(CACHE_MIN_BYTES);

export function listFlagsReply(rt: ActorRuntime, auth: Authenticated, inc: Incoming): Reply {
  // 403 before any 400, a repeated parameter included (the service checks it again).
  requirePermission(auth.principal, 'CanRead');
  const host = inc.headers.host ?? '';
  // A large list goes gzip-coded to a client that accepts gzip, even one that prefers br: its
  // gzip body is assembled from chunks compressed once (list-body.ts flagListGzip), where br would
  // compress the whole list again after every write (about 0.2 s of the actor's CPU and a 37 MB
  // buffer at 100,000 flags; docs/api.md#large-answers). Other clients get the list as it is, which
  // the actor compresses in a coding they accept (content-encoding.ts encodeAnswer).
  const gzip = acceptsCoding(inc.headers['accept-encoding'] ?? '', 'gzip');
  const key = listCacheKey(auth.principal.orgId, auth.snapshot.org.version, auth.principal.application, inc.query, host, gzip ? 'gzip' : '');
  // A status filter's answer changes with time and counts, not only with the version: never kept.
  const cacheable = !/(^|&)status=/.test(inc.query);
  const cached = cacheable ? largeLists.get(key) : null;
  if (cached !== null) return { status: 200, raw: cached.body, headers: cached.headers };
  const params = queryObject(inc.query);
  const page = listFlagPage(auth, params);
  const headers = pageHeaders(page, params, host, rt.config.publicUrl);
  // Serialised here rather than by the exchange, from each flag's kept JSON (list-body.ts: after a
  // one-flag write only that flag is serialised again), so that a large list can be kept as it is sent.
  let raw: Buffer;
  try {
    const coded = gzip ? flagListGzip(page.flags, rt.config.maxAnswerBytes, COMPRESS_MIN_BYTES) : null;
    if (coded !== null) {
      // The actor sends an answer that carries a coding as it is (encodeAnswer).
      headers['content-encoding'] = 'gzip';
      headers.vary = 'Accept-Encoding';
      raw = coded;
    } else {
      raw = flagListBody(page.flags, rt.config.maxAnswerBytes);
    }
  } catch (err) {
    if (err instanceof AnswerTooLargeError) return { status: 200, body: page.flags, headers }; // the exchange's 400
    throw err;
  }
  if (cacheable) largeLists.offer(key, { headers, body: raw });
  return { status: 200, raw, headers };
}
