/**
 * Small plain pages of `GET /api/flags`, answered by the front thread from its own replica of the
 * flag data (docs/cluster.md, "Management never starves"). On a core that evaluation saturates,
 * the management actor gets a small share (nice 15), and a page it serves waits behind whatever
 * the actor is doing: above all a database statement, which runs to its end on the actor's one
 * thread (the insights flush, a status round: up to half a second at that share). The front holds
 * the same data at the same version or newer (it applies each update before the answer of the
 * write that made it), so a page read here is what the actor would answer, read-your-writes
 * included, at the cost of one evaluation-sized request on the front.
 *
 * Answered here only when all of this holds, and forwarded to the actor otherwise (which answers
 * everything else: errors, other filters, large pages, the lifecycle status):
 * - the key may read (the actor answers 403);
 * - the query parses and names only `limit` (1 to FRONT_PAGE_MAX), `after` and `application`:
 *   work bounded by the page, never a scan of the organization (a search, a type or archived
 *   filter can scan it);
 * - the front's index of this snapshot is built (snapshots/flag-index.ts `readyFlagIndex`: in
 *   slices between evaluations, never whole on the front at once);
 * - the body is under the size from which the actor compresses answers (the same bytes, the same
 *   headers: list-body.ts, page.ts).
 */
import type { Authenticated } from '../../auth/authenticate.js';
import { has } from '../../auth/permissions.js';
import { parseFlagListQuery, type FlagListQuery } from '../../domain/validation/flag-list.js';
import { COMPRESS_MIN_BYTES } from '../../http/content-encoding.js';
import type { Incoming, Reply } from '../../http/handler.js';
import { queryObject } from '../../http/query.js';
import type { FrontRuntime } from '../../runtime.js';
import { readyFlagIndex } from '../../snapshots/flag-index.js';
import { flagListBody } from './list-body.js';
import { flagPage, pageHeaders } from './page.js';

/** The largest page the front answers itself. */
export const FRONT_PAGE_MAX = 100;
const PLAIN = new Set(['limit', 'after', 'application']);

/** The page, or null: the actor answers this request. */
export function frontFlagPage(rt: FrontRuntime, auth: Authenticated, inc: Incoming): Reply | null {
  if (!has(auth.principal, 'CanRead')) return null;
  let params: Record<string, string>;
  let q: FlagListQuery;
  try {
    params = queryObject(inc.query);
    for (const k of Object.keys(params)) if (!PLAIN.has(k)) return null;
    q = parseFlagListQuery(params);
  } catch {
    return null;
  }
  if (q.limit === null || q.limit > FRONT_PAGE_MAX) return null;
  const index = readyFlagIndex(auth.snapshot);
  if (index === null) return null;
  const page = flagPage(index, auth, q, null);
  let raw: Buffer;
  try {
    raw = flagListBody(page.flags, rt.config.maxAnswerBytes);
  } catch {
    return null;
  }
  if (raw.length >= COMPRESS_MIN_BYTES) return null;
  return { status: 200, raw, headers: pageHeaders(page, params, inc.headers.host ?? '', rt.config.publicUrl) };
}
