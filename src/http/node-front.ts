/**
 * The fallback front: Node's own `node:http`, for platforms where no native uWebSockets.js binary
 * loads (for example Node 22 or 24 on glibc older than 2.38). It serves the same routes with the
 * same answers as the native front (the exchange logic is shared); only throughput differs.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createNetServer, type AddressInfo, type Socket } from 'node:net';
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
import { capturedHeaders, groupByPattern, HAS_BODY, HTTP_NAME, notFoundReply, RouteTable, type Route } from './router.js';
import { STATUS_TEXT } from './status.js';

class NodeWriter implements ResponseWriter {
  aborted = false;
  private stream: NodeStream | null = null;
  readonly startedAt = performance.now();

  constructor(
    private readonly res: ServerResponse,
    readonly requestId: string,
  ) {
    res.on('close', () => {
      this.aborted = true;
      this.stream?.closedByPeer();
    });
  }

  send(status: number, headers: Record<string, string> | undefined, body: string | Buffer | null, close: boolean): void {
    const res = this.res;
    this.aborted = true;
    res.statusCode = status;
    res.statusMessage = STATUS_TEXT[status] ?? '';
    res.setHeader('x-request-id', this.requestId);
    if (headers !== undefined) for (const h in headers) res.setHeader(h, headers[h]);
    if (close) res.setHeader('connection', 'close');
    if (body === null) res.end();
    else res.end(body);
  }

  async pipe(status: number, headers: Record<string, string>, source: BodySource): Promise<void> {
    const res = this.res;
    res.statusCode = status;
    res.statusMessage = STATUS_TEXT[status] ?? '';
    res.setHeader('x-request-id', this.requestId);
    for (const h in headers) res.setHeader(h, headers[h]);
    res.setHeader('content-length', source.length);
    try {
      for (let piece = await source.next(); piece !== null && !this.aborted; piece = await source.next()) {
        // Back-pressure: the next piece only once the socket has taken this one (or the client left).
        // node:http keeps what it has not sent yet by reference: it gets a copy (the piece's memory is reused).
        if (!res.write(Buffer.from(piece))) await drainedOrClosed(res);
      }
      if (!this.aborted) res.end();
    } catch {
      // The body cannot be completed (the actor stopped): the client must not take it as whole.
      res.destroy();
    }
    if (this.aborted) source.cancel();
    this.aborted = true;
  }

  open(status: number, headers: Record<string, string> | undefined): StreamSink {
    const res = this.res;
    res.statusCode = status;
    res.statusMessage = STATUS_TEXT[status] ?? '';
    res.setHeader('x-request-id', this.requestId);
    if (headers !== undefined) for (const h in headers) res.setHeader(h, headers[h]);
    res.flushHeaders();
    this.stream = new NodeStream(res);
    return this.stream;
  }
}

/** Resolves once `res` can take more bytes, or has closed. */
function drainedOrClosed(res: ServerResponse): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = (): void => {
      res.off('drain', done).off('close', done);
      resolve();
    };
    res.on('drain', done).on('close', done);
  });
}

class NodeStream extends Sink {
  constructor(private readonly res: ServerResponse) {
    super();
  }

  protected send(chunk: string): void {
    this.res.write(chunk);
  }

  protected close(): void {
    this.res.end();
  }
}

const header = (req: IncomingMessage, name: string): string => {
  const v = req.headers[name];
  return v === undefined ? '' : Array.isArray(v) ? v.join(', ') : v;
};

const remoteAddressOf = (req: IncomingMessage): string => {
  const a = req.socket.remoteAddress ?? '';
  return a.startsWith('::ffff:') ? a.slice(7) : a;
};

export function createNodeFront(info: FrontInfo, ctx: ExchangeContext, routes: Route[], timeouts: ClientTimeouts): HttpFront {
  const table = new RouteTable(groupByPattern(routes));
  const bodies = new BodyDeadlines(timeouts.bodyMs);

  // Slow clients (docs/limits.md, "Slow clients"; client-timeouts.ts). Node checks head and request
  // deadlines on an interval (30 s by default): a few times per head timeout keeps them close to
  // their bound.
  const server = createServer({
    headersTimeout: timeouts.headMs,
    // Head and body together: the bound for bodies that no handler reads (404, 405, 413).
    requestTimeout: timeouts.headMs + timeouts.bodyMs,
    keepAliveTimeout: timeouts.idleMs,
    connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(timeouts.headMs / 4))),
  }, (req, res) => {
    ctx.begin();
    const w = new NodeWriter(res, ctx.requestId(header(req, 'x-request-id')));
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    const match = table.match(path);
    if (match === null) {
      sendReply(ctx, w, notFoundReply());
      req.resume();
      return;
    }
    const method = (req.method ?? 'GET').toUpperCase();
    const route = match.group.routes.find((r) => HTTP_NAME[r.method] === method);
    if (route === undefined) {
      sendReply(ctx, w, match.group.otherMethod(method, header(req, 'origin')));
      req.resume();
      return;
    }
    let inc: Incoming;
    try {
      let headers = NO_HEADERS;
      const extra = capturedHeaders(route);
      if (extra.length > 0) {
        headers = {};
        for (const h of extra) headers[h] = header(req, h);
      }
      inc = {
        method,
        path,
        query: q < 0 ? '' : url.slice(q + 1),
        params: match.params.map(decodeParam),
        managementKey: header(req, 'x-management-key'),
        operatorToken: header(req, 'x-operator-token'),
        contentType: header(req, 'content-type'),
        body: EMPTY_BODY,
        bodyTooDeep: null,
        headers,
        remoteAddress: () => remoteAddressOf(req),
      };
    } catch (err) {
      sendError(ctx, w, route, err);
      req.resume();
      return;
    }
    if (!HAS_BODY[route.method]) {
      req.resume();
      runExchange(ctx, route, inc, w);
      return;
    }
    const length = req.headers['content-length'];
    if (length !== undefined && Number(length) > MAX_BODY_BYTES) {
      sendError(ctx, w, null, tooLargeError(), true, route);
      req.resume();
      return;
    }
    const reader = new BodyReader(route, inc);
    let settled = false;
    // A body not whole within its deadline: the connection is closed ('close' below ends the exchange).
    const bodyDone = bodies.start(() => req.socket.destroy());
    req.on('data', (chunk: Buffer) => {
      if (settled) return;
      if (!reader.push(chunk, false)) {
        settled = true;
        bodyDone();
        sendError(ctx, w, null, tooLargeError(), true, route);
      }
    });
    req.on('end', () => {
      if (settled) return;
      settled = true;
      bodyDone();
      reader.finish(inc);
      runExchange(ctx, route, inc, w);
    });
    req.on('close', () => {
      // A client that leaves mid-body never reaches the handler: the exchange ends here.
      bodyDone();
      if (settled) return;
      settled = true;
      ctx.done();
    });
  });

  // The listener is a plain net.Server handing sockets to the HTTP server: closing it stops new
  // connections without touching open ones (http.Server.close() would also close connections it
  // deems idle, including some with a request in flight).
  const sockets = new Set<Socket>();
  const listener = createNetServer((socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    server.emit('connection', socket);
  });
  return {
    info,
    acceptor: null,
    listen: (host, port) =>
      new Promise((resolve, reject) => {
        listener.once('error', reject);
        listener.listen(port, host, () => {
          listener.off('error', reject);
          // node:http starts tracking connections for its head and request deadlines when it
          // listens; it never listens itself here (the net listener hands it sockets), so tell it.
          server.emit('listening');
          resolve((listener.address() as AddressInfo).port);
        });
      }),
    stopAccepting() {
      listener.close();
    },
    closeConnections() {
      for (const s of sockets) s.destroy();
      bodies.stop();
      // Stops node:http's deadline checks (it is not listening: nothing else to close).
      server.close();
    },
  };
}
