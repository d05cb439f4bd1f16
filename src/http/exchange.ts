/**
 * One HTTP exchange, whatever front carries it (native uWebSockets.js or node:http): the one place
 * that runs a handler and turns its `Reply` (handler.ts) or error into bytes through the front's
 * `ResponseWriter`, with the request-body reading and JSON-body helpers handlers share.
 *
 * A front's job is only transport: capture the request's fields, read the body under the 1 MiB cap,
 * call `runExchange`, and implement `ResponseWriter`. Everything a client can observe about errors,
 * content types, streaming and shutdown is decided here, once, for both fronts.
 */
import { isUtf8 } from 'node:buffer';
import { randomBytes } from 'node:crypto';
import { VexilError } from '../domain/errors.js';
import { JsonDepthScanner } from '../domain/validation/json-depth.js';
import { AnswerTooLargeError, boundedJson } from '../util/bounded-json.js';
import type { Logger } from '../util/log.js';
import type { BodySource, Incoming, Reply, StreamSink } from './handler.js';
import { asVexilError, errorReply } from './problem.js';
import type { Route } from './router.js';

export const MAX_BODY_BYTES = 1 << 20;
/** `VEXIL_MAX_ANSWER_BYTES` default: 256 MiB (docs/limits.md, "Large answers"). */
export const DEFAULT_MAX_ANSWER_BYTES = 256 * 1024 * 1024;

/** What a front provides to answer one exchange. */
export interface ResponseWriter {
  /** True once the client went away; nothing may be written then. */
  readonly aborted: boolean;
  /** `performance.now()` when the request arrived (request duration metrics, access log). */
  readonly startedAt: number;
  /** This exchange's request id (`ExchangeContext.requestId`); the writer sends it as `x-request-id`. */
  readonly requestId: string;
  /** Writes a whole answer; `body` null means none (204, 304). */
  send(status: number, headers: Record<string, string> | undefined, body: string | Buffer | null, close: boolean): void;
  /**
   * Writes status, headers and `Content-Length`, then the body as `source` yields it, each piece
   * once the socket has taken the one before (back-pressure). Resolves when the body is written or
   * the client went away (then `source` is cancelled); a source that fails closes the connection
   * (the status is gone by then).
   */
  pipe(status: number, headers: Record<string, string>, source: BodySource): Promise<void>;
  /** Writes status and headers and keeps the response open. */
  open(status: number, headers: Record<string, string> | undefined): StreamSink;
}

/** Receives each answered exchange: pre-bound per route template and method (metrics). */
export interface ExchangeObserver {
  route(template: string, method: string): { observe(status: number, seconds: number): void };
}

/** The route label of requests that matched no route (404) or none of their path's methods (405). */
export const UNMATCHED = '(unmatched)';

/** Client-sent request ids we echo and log; anything else is replaced by one of ours. */
const SANE_REQUEST_ID = /^[A-Za-z0-9._:@\/+=-]{1,128}$/;

export const EMPTY_BODY = Buffer.alloc(0);
export const NO_HEADERS: Record<string, string> = Object.freeze({}) as Record<string, string>;

/**
 * What every front shares: in-flight accounting for graceful shutdown, open streams, and the hook
 * that observes each answer (metrics, access log).
 */
export class ExchangeContext {
  /** Exchanges whose request has arrived and whose answer is not yet written. */
  inFlight = 0;
  /** Set when the node begins shutting down: answers carry `Connection: close`. */
  draining = false;
  private readonly streams = new Set<StreamSink & { end(): void }>();
  private idleWaiters: (() => void)[] = [];
  /** The node's log for HTTP (access lines, unexpected errors). */
  readonly log: Logger;
  private readonly observers = new Map<Route | null, { template: string; method: string; obs: ReturnType<ExchangeObserver['route']> | null }>();
  private readonly idPrefix = randomBytes(4).toString('hex') + '-';
  private seq = 0;

  constructor(
    log: Logger,
    private readonly observer: ExchangeObserver | null = null,
    /** `VEXIL_MAX_ANSWER_BYTES`: the largest body `sendReply` serialises (docs/limits.md). */
    readonly maxAnswerBytes = DEFAULT_MAX_ANSWER_BYTES,
  ) {
    this.log = log.child({ component: 'http' });
  }

  /** The client's `x-request-id` when it is sane, else a fresh one unique to this node. */
  requestId(fromClient: string): string {
    if (fromClient !== '' && SANE_REQUEST_ID.test(fromClient)) return fromClient;
    return this.idPrefix + (++this.seq).toString(36);
  }

  /**
   * Records one answered exchange: request count and duration by route template (metrics), and
   * the access log line (debug, or info for 5xx). Route templates only, never the raw path.
   */
  observe(route: Route | null, w: ResponseWriter, status: number): void {
    if (this.observer === null && status < 500 && !this.log.debugEnabled) return;
    let o = this.observers.get(route);
    if (o === undefined) {
      const template = route === null ? UNMATCHED : route.pattern;
      const method = route === null ? 'ANY' : route.method === 'del' ? 'DELETE' : route.method.toUpperCase();
      o = { template, method, obs: this.observer?.route(template, method) ?? null };
      this.observers.set(route, o);
    }
    const seconds = (performance.now() - w.startedAt) / 1000;
    o.obs?.observe(status, seconds);
    if (status >= 500 || this.log.debugEnabled) {
      const fields = { reqId: w.requestId, method: o.method, route: o.template, status, ms: Math.round(seconds * 1e6) / 1e3 };
      if (status >= 500) this.log.info('request', fields);
      else this.log.debug('request', fields);
    }
  }

  begin(): void {
    this.inFlight++;
  }

  done(): void {
    if (--this.inFlight === 0 && this.idleWaiters.length > 0) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const w of waiters) w();
    }
  }

  trackStream(sink: StreamSink): void {
    this.streams.add(sink);
    sink.onClose(() => this.streams.delete(sink));
  }

  get openStreams(): number {
    return this.streams.size;
  }

  /** Ends every open stream (shutdown). */
  endStreams(): void {
    for (const s of [...this.streams]) s.end();
  }

  /** Resolves when no exchange is in flight, or after `ms`; true when idle. */
  idle(ms: number): Promise<boolean> {
    if (this.inFlight === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.idleWaiters = this.idleWaiters.filter((w) => w !== wake);
        resolve(false);
      }, ms);
      const wake = () => {
        clearTimeout(timer);
        resolve(true);
      };
      this.idleWaiters.push(wake);
    });
  }
}

/** How to ask a route for less, by route pattern (REST paging, docs/api.md#listing-and-paging). */
const PAGING_HINTS: Record<string, string> = {
  '/api/flags': 'page with ?limit= (1-1000) and ?after= (the last flag name of the previous page)',
  '/api/audit': 'page with ?limit= and ?before= (the last event id of the previous page)',
};

/** What names a route in an answer's refusal (a front's route, or a management handler in the actor). */
type RouteName = Pick<Route, 'method' | 'pattern'>;

/**
 * The 400 for an answer over `VEXIL_MAX_ANSWER_BYTES` (docs/limits.md, "Large answers"): it names
 * the bound and the way to page.
 */
export function answerTooLargeError(limit: number, route: RouteName | null): VexilError {
  const hint = (route !== null ? PAGING_HINTS[route.pattern] : undefined) ?? 'ask for less: GET /api/flags pages with ?limit= and ?after=';
  // A write's answer echoes what it wrote: refused only under a bound set below a request body.
  const done = route !== null && route.method !== 'get' ? " (the request's change was made: only its answer is refused)" : '';
  return new VexilError('BAD_REQUEST', `The answer would be larger than VEXIL_MAX_ANSWER_BYTES (${limit} bytes)${done}; ${hint}`);
}

/** A refused answer keeps only its CORS headers. */
function tooLargeReply(reply: Reply, limit: number, route: RouteName | null): Reply {
  const cors: Record<string, string> = {};
  for (const [k, v] of Object.entries(reply.headers ?? {})) if (k.startsWith('access-control-') || k === 'vary') cors[k] = v;
  return errorReply(answerTooLargeError(limit, route), cors);
}

/** Whether `err` is V8 failing to build a string or buffer that large (any answer assembled whole). */
export const isSizeRangeError = (err: unknown): boolean =>
  err instanceof RangeError && /Invalid string length|Array buffer allocation failed|Invalid typed array length/i.test(err.message);

/**
 * A reply's body as the bytes to send (null for 204 and 304): `raw` as it is, else its JSON,
 * bounded by `maxAnswerBytes`: an answer over it becomes the 400 that names the way to page.
 * Run where the answer is made: the front thread for its own routes, the management actor for
 * the management routes (whose answers reach the front as bytes).
 */
export function serialiseReply(reply: Reply, maxAnswerBytes: number, route: RouteName | null): { reply: Reply; body: string | Buffer | null } {
  if (reply.status === 204 || reply.status === 304) return { reply, body: null };
  if (reply.raw !== undefined) return { reply, body: reply.raw };
  if (reply.small === true) return { reply, body: JSON.stringify(reply.body ?? null) };
  try {
    return { reply, body: boundedJson(reply.body ?? null, maxAnswerBytes) ?? 'null' };
  } catch (err) {
    if (!(err instanceof AnswerTooLargeError)) throw err;
    const refused = tooLargeReply(reply, maxAnswerBytes, route);
    return { reply: refused, body: JSON.stringify(refused.body) };
  }
}

/**
 * Writes `reply` through `w` (unless the client has gone away), records it (`ExchangeContext.observe`,
 * under `route`'s template) and ends the exchange.
 */
export function sendReply(ctx: ExchangeContext, w: ResponseWriter, reply: Reply, close = false, route: Route | null = null): void {
  let piping = false;
  try {
    if (w.aborted) {
      reply.piped?.cancel();
      return;
    }
    let body: string | Buffer | null = null;
    if (reply.piped !== undefined) {
      ctx.observe(route, w, reply.status);
      // The exchange ends when the last piece is written (graceful shutdown waits for it).
      piping = true;
      void w.pipe(reply.status, withJsonType(reply.headers), reply.piped).finally(() => ctx.done());
      return;
    }
    if (reply.stream === undefined) ({ reply, body } = serialiseReply(reply, ctx.maxAnswerBytes, route));
    ctx.observe(route, w, reply.status);
    if (reply.stream !== undefined) {
      const sink = w.open(reply.status, reply.headers);
      ctx.trackStream(sink);
      if (ctx.draining) sink.end();
      else reply.stream(sink);
      return;
    }
    w.send(reply.status, body === null ? reply.headers : withJsonType(reply.headers), body, close || ctx.draining);
  } finally {
    if (!piping) ctx.done();
  }
}

const JSON_CONTENT: Record<string, string> = Object.freeze({ 'content-type': 'application/json' }) as Record<string, string>;

/** A body's headers: JSON unless they name another content type. */
const withJsonType = (headers: Record<string, string> | undefined): Record<string, string> =>
  headers === undefined ? JSON_CONTENT : headers['content-type'] === undefined ? { ...headers, 'content-type': 'application/json' } : headers;

function failReply(ctx: ExchangeContext, w: Pick<ResponseWriter, 'requestId'>, route: Route | null, err: unknown): Reply {
  // An answer a handler assembled whole and V8 could not hold: too large, the client's to page.
  const ve = isSizeRangeError(err) ? answerTooLargeError(ctx.maxAnswerBytes, route) : asVexilError(err);
  if (ve.code === 'INTERNAL') ctx.log.error('unexpected error', { reqId: w.requestId, route: route?.pattern, err: (ve.cause ?? ve) as Error });
  return route?.onError ? route.onError(ve) : errorReply(ve);
}

/**
 * Answers with an error (transport failures such as 413 before a handler runs). `route` shapes the
 * error (null: problem+json); `observedAs` is the route it is recorded under (default `route`).
 */
export function sendError(ctx: ExchangeContext, w: ResponseWriter, route: Route | null, err: unknown, close = false, observedAs: Route | null = route): void {
  sendReply(ctx, w, failReply(ctx, w, route, err), close, observedAs);
}

/**
 * Runs `route.handler` and answers. Synchronous all the way when the handler is (the hot path: no
 * promise per request). The caller has called `ctx.begin()`.
 */
export function runExchange(ctx: ExchangeContext, route: Route, inc: Incoming, w: ResponseWriter): void {
  let out: Reply | Promise<Reply>;
  try {
    out = route.handler(inc);
  } catch (err) {
    answer(ctx, w, route, inc, failReply(ctx, w, route, err));
    return;
  }
  if (out instanceof Promise) {
    out.then(
      (reply) => answer(ctx, w, route, inc, reply),
      (err) => answer(ctx, w, route, inc, failReply(ctx, w, route, err)),
    );
  } else {
    answer(ctx, w, route, inc, out);
  }
}

/** Sends a handler's answer; a cross-origin route (cors.ts) adds its CORS headers, errors included. */
function answer(ctx: ExchangeContext, w: ResponseWriter, route: Route, inc: Incoming, reply: Reply): void {
  sendReply(ctx, w, withCors(route, inc, reply), false, route);
}

const withCors = (route: Route, inc: Incoming, reply: Reply): Reply => {
  const cors = route.cors;
  return cors !== undefined && cors.enabled ? cors.decorate(reply, inc.headers.origin ?? '') : reply;
};

/**
 * The answer `runExchange` would send for `inc` (errors shaped by the route, CORS added), without
 * a socket: the main thread runs a request another front thread relays (threads/relay.ts), which
 * writes it and records it there.
 */
export async function replyFor(ctx: ExchangeContext, route: Route, inc: Incoming, requestId: string): Promise<Reply> {
  let reply: Reply;
  try {
    reply = await route.handler(inc);
  } catch (err) {
    reply = failReply(ctx, { requestId }, route, err);
  }
  return withCors(route, inc, reply);
}

export function decodeParam(value: string): string {
  if (value.indexOf('%') === -1) return value; // nothing to decode (the usual flag name): no runtime call
  try {
    return decodeURIComponent(value);
  } catch {
    throw new VexilError('BAD_REQUEST', 'Malformed percent-encoding in the URL');
  }
}

export const tooLargeError = () => new VexilError('PAYLOAD_TOO_LARGE', `Request bodies are limited to ${MAX_BODY_BYTES} bytes`);

// ---- body helpers ---------------------------------------------------------------------------------

/**
 * Collects a request body as its chunks arrive, for every front: the size cap (413), and for a
 * route with `maxBodyDepth` and a JSON content type the nesting scan (docs/limits.md, "Evaluation
 * contexts"). A body found too deep is no longer kept: the rest of it is only counted, never copied
 * or scanned, so a 100,000-deep context costs the node what it reads, not what it would buffer and
 * scan.
 */
export class BodyReader {
  /** The kept chunks; most bodies are one chunk, held in `first` without an array. */
  private first: Buffer | null = null;
  private more: Buffer[] | null = null;
  private size = 0;
  private readonly scanner: JsonDepthScanner | null;

  constructor(route: Route, inc: Incoming) {
    this.scanner = route.maxBodyDepth !== undefined && isJsonContentType(inc.contentType) ? new JsonDepthScanner(route.maxBodyDepth) : null;
  }

  /**
   * Adds a chunk; false once the body is over MAX_BODY_BYTES. `copy`: the chunk's memory is reused
   * after the call (uWS), so a kept chunk is copied.
   */
  push(chunk: Uint8Array, copy: boolean): boolean {
    this.size += chunk.byteLength;
    if (this.size > MAX_BODY_BYTES) return false;
    const sc = this.scanner;
    if (sc !== null && (sc.tooDeep || sc.feed(chunk))) {
      this.first = this.more = null;
      return true;
    }
    const kept = copy ? Buffer.copyBytesFrom(chunk) : (chunk as Buffer);
    if (this.first === null) this.first = kept;
    else (this.more ??= []).push(kept);
    return true;
  }

  /** Puts the body (and the scan's verdict) into `inc`. */
  finish(inc: Incoming): void {
    const first = this.first;
    inc.body = first === null ? EMPTY_BODY : this.more === null ? first : Buffer.concat([first, ...this.more]);
    inc.bodyTooDeep = this.scanner === null ? null : this.scanner.tooDeep;
  }
}

/**
 * A JSON body nested deeper than its route's `Route.maxBodyDepth` (docs/limits.md), as the front
 * found while it arrived (`Incoming.bodyTooDeep`): thrown by `jsonObjectBody`, so it is refused
 * where the handler reads its body (after authentication) and before JSON.parse spends time on it.
 * A 400; a route that words it differently, or answers in another shape, maps this type in its
 * `Route.onError` (or where it already maps `jsonObjectBody`'s errors).
 */
export class BodyTooDeepError extends VexilError {
  constructor() {
    super('BAD_REQUEST', 'The body is nested too deeply');
  }
}

export const isJsonContentType = (ct: string): boolean => {
  if (ct === 'application/json') return true;
  const base = ct.split(';', 1)[0].trim().toLowerCase();
  return base === 'application/json' || (base.startsWith('application/') && base.endsWith('+json'));
};

/**
 * The body as a JSON object. A body the front found nested deeper than the route's `maxBodyDepth`
 * is `BodyTooDeepError` (400), the only place that refusal is made. An empty body is `{}` when
 * `allowEmpty`, else 400. A body that is not UTF-8, not JSON, or not an object is 400; a non-JSON
 * content type is 415.
 */
export function jsonObjectBody(inc: Incoming, allowEmpty = false): Record<string, unknown> {
  if (inc.bodyTooDeep === true) throw new BodyTooDeepError();
  if (inc.body.length === 0) {
    if (allowEmpty) return {};
    throw new VexilError('BAD_REQUEST', 'A JSON object body is required');
  }
  if (!isJsonContentType(inc.contentType)) {
    throw new VexilError('UNSUPPORTED_MEDIA_TYPE', 'Content-Type must be application/json');
  }
  if (!isUtf8(inc.body)) throw new VexilError('BAD_REQUEST', 'The body is not valid UTF-8');
  // RFC 8259 §8.1: a parser may ignore a byte order mark; we do.
  const bom = inc.body.length >= 3 && inc.body[0] === 0xef && inc.body[1] === 0xbb && inc.body[2] === 0xbf;
  let value: unknown;
  try {
    value = JSON.parse(inc.body.toString('utf8', bom ? 3 : 0));
  } catch {
    throw new VexilError('BAD_REQUEST', 'The body is not valid JSON');
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new VexilError('BAD_REQUEST', 'The body must be a JSON object');
  }
  return value as Record<string, unknown>;
}
