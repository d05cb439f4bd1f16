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

/**
 * The query string as an object of strings (URL-decoded, `+` as space); a parameter given more
 * than once is 400, so that no reader silently takes one of two values.
 */
export function queryObject(query: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of new URLSearchParams(query)) {
    if (Object.prototype.hasOwnProperty.call(out, k)) throw badRequest(`Query parameter '${k}' is given more than once`);
    Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
  }
  return out;
}
