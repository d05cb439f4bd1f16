/**
 * Cross-origin access for the routes a browser application calls from its own origin (OFREP;
 * docs/ofrep.md, "Browsers on another origin (CORS)"), `VEXIL_CORS_ORIGINS`: `*`, or a list of
 * origins. The Fetch standard's rules, the parts that apply to a key sent in a header (never a
 * cookie): an allowed origin is echoed in `Access-Control-Allow-Origin` (with `Vary: Origin`; `*`
 * when any origin is allowed), the headers a client reads are exposed (ETag for 304 polling,
 * Retry-After for 429), and a preflight `OPTIONS` names the methods and request headers the route
 * takes. No credentials mode: nothing is in cookies. An origin that is not allowed gets no CORS
 * headers (its browser then refuses the answer) and a 403 to its preflight.
 */
import { VexilError } from '../domain/errors.js';
import { errorReply } from './problem.js';
import type { Reply } from './handler.js';

/** The request headers an OFREP client sends: the key's three places, the body's type, the poll's ETag. */
const ALLOW_HEADERS = 'authorization, content-type, if-none-match, x-api-key, x-management-key, x-request-id';
const EXPOSE_HEADERS = 'etag, retry-after, x-request-id';
/** How long a browser may reuse a preflight answer (seconds). */
const MAX_AGE = '600';

export class CorsPolicy {
  private readonly anyOrigin: boolean;
  private readonly origins: Set<string>;
  private readonly anyHeaders: Readonly<Record<string, string>>;

  constructor(origins: readonly string[]) {
    this.anyOrigin = origins.includes('*');
    // Origins compare as the browser serialises them: scheme and host in lower case.
    this.origins = new Set(origins.map((o) => o.toLowerCase()));
    this.anyHeaders = Object.freeze({ 'access-control-allow-origin': '*', 'access-control-expose-headers': EXPOSE_HEADERS });
  }

  /** Whether any origin at all is allowed (no setting: the routes carry no CORS headers). */
  get enabled(): boolean {
    return this.anyOrigin || this.origins.size > 0;
  }

  /** The CORS headers of an answer to a request carrying `Origin: origin` ('' when absent); null: none. */
  headersFor(origin: string): Readonly<Record<string, string>> | null {
    if (origin === '') return null;
    if (this.anyOrigin) return this.anyHeaders;
    if (!this.origins.has(origin.toLowerCase())) return null;
    return { 'access-control-allow-origin': origin, vary: 'Origin', 'access-control-expose-headers': EXPOSE_HEADERS };
  }

  /** `reply` with the CORS headers for `origin` added (itself when none are due). */
  decorate(reply: Reply, origin: string): Reply {
    const h = this.headersFor(origin);
    return h === null ? reply : { ...reply, headers: { ...reply.headers, ...h } };
  }

  /**
   * The answer to `OPTIONS` on a route pattern whose methods are `allow` ("POST" or "GET, POST"):
   * 204 with the preflight headers for an allowed origin, 403 for another.
   */
  preflight(allow: string, origin: string): Reply {
    const h = this.headersFor(origin);
    if (h === null) {
      const reply = errorReply(new VexilError('FORBIDDEN', origin === '' ? 'A CORS preflight needs an Origin header' : `Origin '${origin}' is not allowed (VEXIL_CORS_ORIGINS)`));
      return { ...reply, headers: { ...reply.headers, allow } };
    }
    return {
      status: 204,
      headers: {
        ...h,
        allow,
        'access-control-allow-methods': allow,
        'access-control-allow-headers': ALLOW_HEADERS,
        'access-control-max-age': MAX_AGE,
      },
    };
  }
}
