/**
 * Route tables: each feature exports its routes; a front serves them. For every known path, other
 * methods answer 405 with `Allow`; unknown paths answer 404. The matching rules are uWebSockets.js's
 * (static segments, `:param` segments, a trailing `*` wildcard), and `RouteTable` implements them
 * for fronts that have no router of their own.
 */
import { VexilError } from '../domain/errors.js';
import type { CorsPolicy } from './cors.js';
import { errorReply } from './problem.js';
import type { Handler, Reply } from './handler.js';

export type Method = 'get' | 'post' | 'put' | 'patch' | 'del';

export interface Route {
  method: Method;
  /** uWS pattern, e.g. `/api/flags/:name`, or a prefix wildcard such as `/ui/*`. */
  pattern: string;
  handler: Handler;
  /** Custom error shape (GraphQL keeps problem+json only for transport errors). */
  onError?: (err: VexilError) => Reply;
  /** Extra request headers to capture into `Incoming.headers` (lower-case names). */
  headers?: string[];
  /**
   * Deepest JSON body the handler can accept: the front scans a JSON body for it while it arrives
   * and stops keeping one that goes deeper (`Incoming.bodyTooDeep`, exchange.ts BodyReader).
   */
  maxBodyDepth?: number;
  /** Cross-origin access (cors.ts): the answers carry CORS headers, and `OPTIONS` is its preflight. */
  cors?: CorsPolicy;
  /**
   * The evaluation routes' hot-path contract (docs/benchmarks.md, "REST against the bare endpoint"):
   * the handler reads neither `Incoming.path` nor `Incoming.operatorToken`, and reads
   * `Incoming.body` from `inc` where it uses it, never keeping it in a variable across an await.
   * The uWS front then leaves path and token '' (two calls into uWS fewer per request), and lends
   * the handler the body's last chunk as uWS received it, copying it into `inc.body` only when the
   * handler has not answered by the time the chunk's callback returns. A relayed request
   * (threads/relay.ts) carries path and token as ''; the node:http front fills them all the same.
   */
  lean?: boolean;
}

export const HTTP_NAME: Record<Method, string> = { get: 'GET', post: 'POST', put: 'PUT', patch: 'PATCH', del: 'DELETE' };
export const HAS_BODY: Record<Method, boolean> = { get: false, post: true, put: true, patch: true, del: false };

/** The request headers a front captures into `Incoming.headers`: the route's, and `origin` for a cross-origin route. */
export const capturedHeaders = (route: Route): string[] =>
  route.cors?.enabled ? [...(route.headers ?? []), 'origin'] : (route.headers ?? []);

export const paramCount = (pattern: string): number => (pattern.match(/\/:/g) ?? []).length;

/** The routes of one pattern, and the reply for any other method. */
export interface PatternGroup {
  pattern: string;
  routes: Route[];
  allow: string;
  methodNotAllowed(): Reply;
  /**
   * The answer to a method the pattern has no route for: the CORS preflight for `OPTIONS` on a
   * cross-origin pattern (`origin`: its Origin header), else 405.
   */
  otherMethod(method: string, origin: string): Reply;
}

export function groupByPattern(routes: Route[]): PatternGroup[] {
  const byPattern = new Map<string, Route[]>();
  for (const r of routes) byPattern.set(r.pattern, [...(byPattern.get(r.pattern) ?? []), r]);
  return [...byPattern].map(([pattern, list]) => {
    const allow = list.map((r) => HTTP_NAME[r.method]).join(', ');
    const onError = list[0].onError;
    const cors = list.find((r) => r.cors?.enabled)?.cors;
    const methodNotAllowed = (): Reply => {
      const err = new VexilError('METHOD_NOT_ALLOWED', `Method not allowed; use ${allow}`);
      const reply = onError ? onError(err) : errorReply(err);
      return { ...reply, headers: { ...reply.headers, allow } };
    };
    return {
      pattern,
      routes: list,
      allow,
      methodNotAllowed,
      otherMethod: (method, origin) =>
        cors === undefined ? methodNotAllowed() : method.toUpperCase() === 'OPTIONS' ? cors.preflight(allow, origin) : cors.decorate(methodNotAllowed(), origin),
    };
  });
}

export const notFoundReply = (): Reply => errorReply(new VexilError('NOT_FOUND', 'No such endpoint'));

export interface Match {
  group: PatternGroup;
  /** Raw (not decoded) parameter values. */
  params: string[];
}

interface Compiled {
  group: PatternGroup;
  /** Segments; null for a parameter. */
  segments: (string | null)[];
  wildcard: boolean;
}

/** Matches a path against route patterns: static paths first, then parameters, then wildcards. */
export class RouteTable {
  private readonly exact = new Map<string, PatternGroup>();
  private readonly patterns: Compiled[] = [];

  constructor(groups: PatternGroup[]) {
    for (const group of groups) {
      const wildcard = group.pattern.endsWith('/*') || group.pattern === '/*';
      const base = wildcard ? group.pattern.slice(0, -2) : group.pattern;
      const segments = base.split('/').slice(1).map((s) => (s.startsWith(':') ? null : s));
      if (!wildcard && !segments.includes(null)) this.exact.set(group.pattern, group);
      else this.patterns.push({ group, segments: base === '' ? [] : segments, wildcard });
    }
    // Parameter patterns before wildcards; longer wildcards before shorter ones.
    this.patterns.sort((a, b) => Number(a.wildcard) - Number(b.wildcard) || b.segments.length - a.segments.length);
  }

  match(path: string): Match | null {
    const hit = this.exact.get(path);
    if (hit !== undefined) return { group: hit, params: [] };
    const parts = path.split('/').slice(1);
    for (const c of this.patterns) {
      if (c.wildcard ? parts.length < c.segments.length : parts.length !== c.segments.length) continue;
      const params: string[] = [];
      let ok = true;
      for (let i = 0; i < c.segments.length; i++) {
        const s = c.segments[i];
        if (s === null) {
          if (parts[i] === '') {
            ok = false;
            break;
          }
          params.push(parts[i]);
        } else if (s !== parts[i]) {
          ok = false;
          break;
        }
      }
      if (ok) return { group: c.group, params };
    }
    return null;
  }
}
