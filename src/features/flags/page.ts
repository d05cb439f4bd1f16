/**
 * A page of the flag list (docs/api.md#listing-and-paging) from a snapshot's name-sorted index
 * (snapshots/flag-index.ts), and the headers `GET /api/flags` answers it with. Pure: the management
 * actor answers every list with it (service.ts `listFlagPage`, list-route.ts), and the front thread
 * the small plain pages (front-page.ts).
 */
import type { Authenticated } from '../../auth/authenticate.js';
import { inApplicationScope } from '../../auth/permissions.js';
import { nameKey } from '../../domain/name-matching.js';
import type { Flag } from '../../domain/types.js';
import type { FlagListQuery } from '../../domain/validation/flag-list.js';
import type { FlagIndex } from '../../snapshots/flag-index.js';

export const FLAGS_PATH = '/api/flags';

/** One page of the flag list. */
export interface FlagPage {
  /** Sorted by name. */
  flags: Flag[];
  /** Flags matching the filters within the key's application scope (`after` and `limit` aside). */
  total: number;
  /** Whether more matching flags follow this page (then the next page starts after its last name). */
  hasMore: boolean;
}

const NO_FLAGS: FlagPage = Object.freeze({ flags: [], total: 0, hasMore: false }) as FlagPage;

/**
 * The page `q` asks for within the key's application scope; `status`, the lifecycle status filter,
 * as a predicate on each flag and the key that names its answers (flag-index.ts `FlagFilter`), or
 * null when the query has none.
 */
export function flagPage(
  index: FlagIndex,
  auth: Authenticated,
  q: FlagListQuery,
  status: { predicate: (flag: Flag) => boolean; key: string } | null,
): FlagPage {
  const p = auth.principal;
  // The key's scope and the filter both name an application: another one matches nothing.
  if (q.application !== null && !inApplicationScope(p, q.application)) return NO_FLAGS;
  const application = q.application ?? p.application;
  return index.query(
    {
      application: application === null ? null : nameKey(application),
      type: q.type,
      archived: q.archived,
      search: q.search,
      predicate: status?.predicate ?? null,
      predicateKey: status?.key ?? null,
    },
    q.after,
    q.limit,
  );
}

/** A Host header fit to build a URL on: a host name or address and an optional port. */
const HOST_RE = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?$/;

/** The request's parameters, in their order, with `after` set to `last`, on `publicUrl` or the Host. */
export function nextPageUrl(publicUrl: string | null, host: string, params: Record<string, string>, last: string): string {
  const next = new URLSearchParams({ ...params, after: last });
  const base = publicUrl ?? (HOST_RE.test(host) ? `http://${host}` : '');
  return `${base}${FLAGS_PATH}?${next.toString()}`;
}

/**
 * `X-Total-Count` (flags matching the filters within the key's scope) and, when a `limit` page has
 * more matching flags after it, `Link: <next page>; rel="next"` (RFC 8288): the request's
 * parameters with `after` set to the page's last name, absolute on VEXIL_PUBLIC_URL when set, else
 * on the request's `Host`, and a path alone when the request has no usable Host.
 */
export function pageHeaders(page: FlagPage, params: Record<string, string>, host: string, publicUrl: string | null): Record<string, string> {
  const headers: Record<string, string> = { 'x-total-count': String(page.total) };
  if (page.hasMore && params.limit !== undefined && page.flags.length > 0) {
    headers.link = `<${nextPageUrl(publicUrl, host, params, page.flags[page.flags.length - 1].name)}>; rel="next"`;
  }
  return headers;
}
