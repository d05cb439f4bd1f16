import { badRequest } from '../domain/errors.js';

/** One query parameter from a raw query string (first occurrence), URL-decoded; undefined if absent. */
export function queryParam(query: string, name: string): string | undefined {
  if (query === '') return undefined;
  for (const part of query.split('&')) {
    const eq = part.indexOf('=');
    const k = eq < 0 ? part : part.slice(0, eq);
    if (k !== name) continue;
    const v = eq < 0 ? '' : part.slice(eq + 1);
    try {
      return decodeURIComponent(v.replace(/\+/g, ' '));
    } catch {
      throw badRequest(`Malformed query parameter '${name}'`);
    }
  }
  return undefined;
}

/** A boolean query parameter: true/false/1/0 (or absent: `fallback`), anything else is 400. */
export function booleanParam(query: string, name: string, fallback = false): boolean {
  const v = queryParam(query, name);
  if (v === undefined) return fallback;
  switch (v.toLowerCase()) {
    case 'true':
    case '1':
    case '':
      return true;
    case 'false':
    case '0':
      return false;
    default:
      throw badRequest(`Query parameter '${name}' must be true or false`);
  }
}
