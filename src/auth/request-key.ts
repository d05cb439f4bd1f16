/**
 * Where the evaluation protocols other than REST read the key from (docs/ofrep.md, "Requests";
 * docs/feed.md, "Requests"): `X-API-Key`, else `Authorization: Bearer <key>`, else
 * `x-management-key`, the first present.
 */
import type { Incoming } from '../http/handler.js';

/** The request headers a route reads the key from besides x-management-key (Route.headers). */
export const KEY_HEADERS = ['x-api-key', 'authorization'];

export function requestKey(inc: Incoming): string {
  const apiKey = inc.headers['x-api-key'] ?? '';
  if (apiKey !== '') return apiKey;
  const authz = inc.headers.authorization ?? '';
  if (authz.length > 7 && authz.slice(0, 7).toLowerCase() === 'bearer ') return authz.slice(7).trim();
  return inc.managementKey;
}
