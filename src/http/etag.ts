/** Conditional requests (RFC 9110 13.1.2): whether an `If-None-Match` header matches an ETag. */

const opaque = (tag: string): string => (tag.startsWith('W/') ? tag.slice(2) : tag);

/** If-None-Match (a list, or `*`) matches `etag` by weak comparison: `W/` is ignored on both sides. */
export function etagMatches(ifNoneMatch: string, etag: string): boolean {
  if (ifNoneMatch === '') return false;
  if (ifNoneMatch === etag) return true;
  const want = opaque(etag);
  for (const tag of ifNoneMatch.split(',')) {
    const t = tag.trim();
    if (t === '*' || opaque(t) === want) return true;
  }
  return false;
}
