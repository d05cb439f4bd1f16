/**
 * The native front: uWebSockets.js. Request fields are captured before the first await (uWS
 * requests are only valid synchronously); every write after that is corked and skipped once the
 * client has gone away.
 */
import {
  decodeParam,
  BodyReader,
  EMPTY_BODY,
  MAX_BODY_BYTES,
  NO_HEADERS,
  runExchange,
  sendError,
  sendReply,
  tooLargeError,
  type ExchangeContext,
  type ResponseWriter,
} from './exchange.js';
import type { BodySource, Incoming, StreamSink } from './handler.js';
import { Sink } from './sink.js';
import { BodyDeadlines, type ClientTimeouts } from './client-timeouts.js';
import type { FrontInfo, HttpFront } from './front-interface.js';
import { capturedHeaders, groupByPattern, HAS_BODY, HTTP_NAME, notFoundReply, paramCount, type Route } from './router.js';
import { STATUS_LINE } from './status.js';
import type { HttpRequest, HttpResponse, TemplatedApp, UwsModule, us_listen_socket } from './uws.js';

const textDecoder = new TextDecoder();

/** One exchange's response side. */
class UwsWriter implements ResponseWriter {
  aborted = false;
  /** The body is still arriving: the exchange has not reached its handler. */
  bodyPending = false;
  /** Ends the pending body's deadline (client-timeouts.ts) when the client leaves first. */
  bodyDeadline: (() => void) | null = null;
  private stream: UwsStream | null = null;
  /** Wakes a `pipe` waiting for the socket when the client goes away. */
  private wake: (() => void) | null = null;
  /** A piece of a piped body the socket has not taken whole yet. */
  private blocked: { piece: Uint8Array; start: number; total: number; resolve(ok: boolean): void } | null = null;
  readonly startedAt = performance.now();

  constructor(
    private readonly res: HttpResponse,
    ctx: ExchangeContext,
    readonly requestId: string,
  ) {
    res.onAborted(() => {
      this.aborted = true;
      this.stream?.closedByPeer();
      this.wake?.();
      // A client that leaves mid-body never reaches the handler: the exchange ends here.
      if (this.bodyPending) {
        this.bodyPending = false;
        this.bodyDeadline?.();
        ctx.done();
      }
    });
  }

  remoteAddress = (): string => (this.aborted ? '' : textDecoder.decode(this.res.getRemoteAddressAsText()));

  send(status: number, headers: Record<string, string> | undefined, body: string | Buffer | null, close: boolean): void {
    const res = this.res;
    this.aborted = true; // nothing may touch `res` after `end`
    res.cork(() => {
      res.writeStatus(STATUS_LINE[status] ?? String(status));
      res.writeHeader('x-request-id', this.requestId);
      if (headers !== undefined) for (const h in headers) res.writeHeader(h, headers[h]);
      if (body === null) {
        // 204/304 carry no Content-Length. Passing any argument to endWithoutBody makes uWS write
        // one (an undefined length as 2^63), so the close is signalled by the header alone here.
        if (close) res.writeHeader('connection', 'close');
        res.endWithoutBody();
      } else res.end(body, close);
    });
  }

  async pipe(status: number, headers: Record<string, string>, source: BodySource): Promise<void> {
    const res = this.res;
    const total = source.length;
    res.cork(() => {
      res.writeStatus(STATUS_LINE[status] ?? String(status));
      res.writeHeader('x-request-id', this.requestId);
      for (const h in headers) res.writeHeader(h, headers[h]);
    });
    res.onWritable((offset) => this.onWritable(offset));
    try {
      for (let piece = await source.next(); piece !== null && !this.aborted; piece = await source.next()) {
        if (!(await this.tryEnd(piece, total))) break;
      }
    } catch {
      // The body cannot be completed (the actor stopped): the client must not take it as whole.
      if (!this.aborted) res.close();
    }
    if (this.aborted) source.cancel();
    this.aborted = true;
  }

  /** Writes `piece` (part of a body of `total` bytes), waiting for the socket as long as it must; false if the client left. */
  private tryEnd(piece: Uint8Array, total: number): Promise<boolean> | boolean {
    const res = this.res;
    const start = res.getWriteOffset();
    let ok = false;
    res.cork(() => {
      [ok] = res.tryEnd(piece, total);
    });
    if (ok) return true;
    return new Promise<boolean>((resolve) => {
      this.wake = () => resolve(false);
      this.blocked = { piece, start, total, resolve };
    });
  }

  /**
   * The socket drained: the rest of the blocked piece (uWS keeps one writable handler per response,
   * so there is one). A method, bound only by `pipe`: most answers are never piped.
   */
  private onWritable(offset: number): boolean {
    const b = this.blocked;
    if (b === null) return true;
    let ok = false;
    this.res.cork(() => {
      [ok] = this.res.tryEnd(b.piece.subarray(offset - b.start), b.total);
    });
    if (ok) {
      this.blocked = null;
      this.wake = null;
      b.resolve(true);
    }
    return ok;
  }

  open(status: number, headers: Record<string, string> | undefined): StreamSink {
    const res = this.res;
    res.cork(() => {
      res.writeStatus(STATUS_LINE[status] ?? String(status));
      res.writeHeader('x-request-id', this.requestId);
      if (headers !== undefined) for (const h in headers) res.writeHeader(h, headers[h]);
      // Sends status and headers now, with chunked encoding for what follows.
      res.write('');
    });
    this.stream = new UwsStream(res, () => {
      this.aborted = true;
    });
    return this.stream;
  }
}

class UwsStream extends Sink {
  constructor(
    private readonly res: HttpResponse,
    private readonly onFinish: () => void,
  ) {
    super();
  }

  protected send(chunk: string): void {
    this.res.cork(() => this.res.write(chunk));
  }

  protected close(): void {
    this.res.cork(() => this.res.end());
  }

  protected override closing(): void {
    this.onFinish();
  }
}

function handlerFor(ctx: ExchangeContext, route: Route, bodies: BodyDeadlines) {
  const params = paramCount(route.pattern);
  const method = HTTP_NAME[route.method];
  const readBody = HAS_BODY[route.method];
  const extra = capturedHeaders(route);
  const lean = route.lean === true;

  return (res: HttpResponse, req: HttpRequest): void => {
    ctx.begin();
    const w = new UwsWriter(res, ctx, ctx.requestId(req.getHeader('x-request-id')));
    let inc: Incoming;
    try {
      // Sized up front: an empty array grown by push takes room for 17.
      const values = new Array<string>(params);
      for (let i = 0; i < params; i++) values[i] = decodeParam(req.getParameter(i) ?? '');
      let headers = NO_HEADERS;
      if (extra.length > 0) {
        headers = {};
        for (const h of extra) headers[h] = req.getHeader(h);
      }
      inc = {
        method,
        path: lean ? '' : req.getUrl(),
        query: req.getQuery() ?? '',
        params: values,
        managementKey: req.getHeader('x-management-key'),
        operatorToken: lean ? '' : req.getHeader('x-operator-token'),
        contentType: req.getHeader('content-type'),
        body: EMPTY_BODY,
        bodyTooDeep: null,
        headers,
        remoteAddress: w.remoteAddress,
      };
    } catch (err) {
      sendError(ctx, w, route, err);
      return;
    }

    // No body: a method without one, or neither a length nor chunked encoding (transfer-encoding is
    // asked for only then: a body with a length is read whatever it says).
    if (!readBody) {
      runExchange(ctx, route, inc, w);
      return;
    }
    const length = req.getHeader('content-length');
    if ((length === '' || length === '0') && req.getHeader('transfer-encoding') === '') {
      runExchange(ctx, route, inc, w);
      return;
    }
    if (length !== '' && Number(length) > MAX_BODY_BYTES) {
      tooLarge(ctx, w, route);
      return;
    }
    let reader: BodyReader | null = new BodyReader(route, inc);
    w.bodyPending = true;
    // A body not whole within its deadline from the head closes the connection (onAborted ends the
    // exchange). Armed only once a chunk arrives that is not the last: a small body comes whole with
    // its head and costs no deadline; one whose bytes never come is closed by uWS's own 10 s timer
    // (client-timeouts.ts).
    let bodyDone: (() => void) | null = null;
    res.onData((chunk, isLast) => {
      if (reader === null) return;
      // uWS reuses the chunk's memory after this callback returns: the reader copies what it keeps,
      // except a lean route's last chunk, lent (below).
      const bytes = Buffer.from(chunk);
      const lent = lean && isLast;
      if (!reader.push(bytes, !lent)) {
        reader = null;
        bodyDone?.();
        tooLarge(ctx, w, route);
        return;
      }
      if (isLast) {
        reader.finish(inc);
        reader = null;
        bodyDone?.();
        w.bodyPending = false;
        runExchange(ctx, route, inc, w);
        // A lean handler reads `inc.body` where it needs it (Route.lean): one that answered already
        // needed no copy (the usual evaluation, answered in this call); one still running (a key
        // being looked up) gets the bytes copied before uWS takes its memory back.
        if (lent && inc.body === bytes && !w.aborted) inc.body = Buffer.copyBytesFrom(bytes);
      } else if (bodyDone === null) {
        w.bodyDeadline = bodyDone = bodies.start(() => {
          reader = null;
          if (!w.aborted) res.close();
        }, w.startedAt);
      }
    });
  };
}

/** 413 and close the connection: the rest of the body is not read. */
function tooLarge(ctx: ExchangeContext, w: UwsWriter, route: Route): void {
  w.bodyPending = false;
  sendError(ctx, w, null, tooLargeError(), true, route);
}

/**
 * `timeouts.bodyMs` is enforced here; uWS's own timer bounds heads and idle connections at 10 s
 * (client-timeouts.ts), so `headMs` and `idleMs` do not apply.
 */
export function createUwsFront(uws: UwsModule, info: FrontInfo, ctx: ExchangeContext, routes: Route[], timeouts: ClientTimeouts): HttpFront {
  const app: TemplatedApp = uws.App();
  const bodies = new BodyDeadlines(timeouts.bodyMs);
  for (const group of groupByPattern(routes)) {
    for (const r of group.routes) app[r.method](r.pattern, handlerFor(ctx, r, bodies));
    app.any(group.pattern, (res, req) => {
      ctx.begin();
      sendReply(ctx, new UwsWriter(res, ctx, ctx.requestId(req.getHeader('x-request-id'))), group.otherMethod(req.getMethod(), req.getHeader('origin')));
    });
  }
  app.any('/*', (res, req) => {
    ctx.begin();
    sendReply(ctx, new UwsWriter(res, ctx, ctx.requestId(req.getHeader('x-request-id'))), notFoundReply());
  });

  let listenSocket: us_listen_socket | null = null;
  // Missing from @trufflesuite/uws-js-unofficial 20.30 and its typings; present in later builds.
  const threaded = app as TemplatedApp & { getDescriptor?(): unknown; addChildAppDescriptor?(d: unknown): void };
  const acceptor =
    typeof threaded.getDescriptor === 'function' && typeof threaded.addChildAppDescriptor === 'function'
      ? { descriptor: () => threaded.getDescriptor!(), adopt: (d: unknown) => threaded.addChildAppDescriptor!(d) }
      : null;
  return {
    info,
    acceptor,
    listen: (host, port) =>
      new Promise((resolve, reject) => {
        app.listen(host, port, (s) => {
          if (!s) {
            reject(new Error(`Cannot listen on ${host}:${port}`));
            return;
          }
          listenSocket = s;
          resolve(uws.us_socket_local_port(s));
        });
      }),
    stopAccepting() {
      if (listenSocket !== null) uws.us_listen_socket_close(listenSocket);
      listenSocket = null;
    },
    closeConnections() {
      bodies.stop();
      // Closes every socket of the app; present in both packages, missing from 20.30's typings.
      (app as TemplatedApp & { close(): void }).close();
    },
  };
}
