/**
 * Relayed requests (docs/threads.md): a front thread that cannot answer a request itself hands it
 * to the main thread, which runs the node's own route for it and sends the answer back, whole, in
 * pieces (a large management answer) or as a stream (server-sent events).
 *
 *   front thread: `RelayClient.relay` → mailbox `relay` → main thread: `RelayServer.serve`
 *   → `replyFor` (exchange.ts: the route's handler, its error shape, CORS) → `reply` | `piped` +
 *   `piece`s | `stream` + `chunk`s + `end` → the front thread's `Reply`, which its own exchange
 *   writes to the socket and records (the request is counted where it was served, once).
 *
 * The front thread has already read and bounded the body (exchange.ts BodyReader), so the main
 * thread sees exactly what it would have seen on its own socket.
 */
import { replyFor, serialiseReply, type ExchangeContext } from '../exchange.js';
import type { BodySource, Incoming, Reply, StreamSink } from '../handler.js';
import type { Route } from '../router.js';
import { Sink } from '../sink.js';
import type { KeyCache } from '../../auth/key-cache.js';
import type { FromThread, RelayedRequest, ToThread } from './mailbox.js';

type Post = (msg: ToThread) => void;

/** The main thread's side, one per front thread. */
export class RelayServer {
  private readonly pipes = new Map<number, BodySource>();
  private readonly streams = new Map<number, RelaySink>();

  constructor(
    private readonly routes: readonly Route[],
    private readonly ctx: ExchangeContext,
    private readonly keys: KeyCache,
    private readonly post: Post,
  ) {}

  /** Handles what the front thread sent about a relayed request; false for any other message. */
  receive(msg: FromThread): boolean {
    switch (msg.t) {
      case 'relay':
        void this.serve(msg.id, msg.route, msg.req, msg.keyHash);
        return true;
      case 'next':
        this.nextPiece(msg.id);
        return true;
      case 'cancel':
        this.pipes.get(msg.id)?.cancel();
        this.pipes.delete(msg.id);
        return true;
      case 'closed':
        this.streams.get(msg.id)?.closedByPeer();
        return true;
      default:
        return false;
    }
  }

  /** The thread is gone: its streams end and its pieces are no longer wanted. */
  close(): void {
    for (const p of this.pipes.values()) p.cancel();
    this.pipes.clear();
    for (const s of this.streams.values()) s.closedByPeer();
  }

  private async serve(id: number, index: number, req: RelayedRequest, keyHash: string): Promise<void> {
    const route = this.routes[index];
    const inc: Incoming = { ...req, body: Buffer.from(req.body.buffer, req.body.byteOffset, req.body.byteLength), remoteAddress: () => req.remoteAddress };
    const reply = await replyFor(this.ctx, route, inc, '');
    if (reply.piped !== undefined) {
      this.pipes.set(id, reply.piped);
      this.post({ t: 'piped', id, status: reply.status, headers: reply.headers ?? {}, length: reply.piped.length });
      return;
    }
    if (reply.stream !== undefined) {
      const sink = new RelaySink(id, this.post, () => this.streams.delete(id));
      this.streams.set(id, sink);
      this.post({ t: 'stream', id, status: reply.status, headers: reply.headers });
      // Ended with the main thread's streams at shutdown (exchange.ts endStreams).
      this.ctx.trackStream(sink);
      if (this.ctx.draining) sink.end();
      else reply.stream(sink);
      return;
    }
    const { reply: out, body } = serialiseReply(reply, this.ctx.maxAnswerBytes, route);
    // The key this request authenticated with, for the thread to serve from now on (key-mirror.ts):
    // until this cache's re-read window for it opens, not for a lifetime of its own, so that no
    // thread serves a key longer than the cache would without a bus, and the thread's next request
    // after that comes here and renews it (key-cache.ts `fresh`); while the window is open, not at all.
    const held = keyHash === '' ? undefined : this.keys.fresh(keyHash);
    const learned = held !== undefined && !held.key.disabled ? { hash: keyHash, key: held.key, untilMs: held.untilMs } : undefined;
    this.post({ t: 'reply', id, status: out.status, headers: out.headers, body, learned });
  }

  private nextPiece(id: number): void {
    const source = this.pipes.get(id);
    if (source === undefined) return;
    source.next().then(
      (piece) => {
        // A piece is valid until the next call: it is copied into the message.
        if (piece === null) this.pipes.delete(id);
        this.post({ t: 'piece', id, data: piece === null ? null : piece.slice() });
      },
      () => {
        this.pipes.delete(id);
        this.post({ t: 'piece', id, data: null, failed: true });
      },
    );
  }
}

/** A stream the main thread writes for a client of another thread. */
class RelaySink extends Sink {
  constructor(
    private readonly id: number,
    private readonly post: Post,
    private readonly forget: () => void,
  ) {
    super();
  }

  protected send(chunk: string): void {
    this.post({ t: 'chunk', id: this.id, data: chunk });
  }

  protected close(): void {
    this.post({ t: 'end', id: this.id });
  }

  protected override closing(): void {
    this.forget();
  }
}

/** What a front thread does with a key the main thread's answer says it may now serve. */
export type Learn = (hash: string, key: NonNullable<Extract<ToThread, { t: 'reply' }>['learned']>['key'], untilMs: number) => void;

/** A front thread's side: relays a request and turns the answer back into a `Reply`. */
export class RelayClient {
  private seq = 0;
  private readonly waiting = new Map<number, (reply: Reply) => void>();
  private readonly pieces = new Map<number, { resolve(p: Uint8Array | null): void; reject(e: Error): void }>();
  private readonly sinks = new Map<number, StreamSink>();
  /** Streams the main thread ended (nothing to tell it when their sink closes). */
  private readonly endedByMain = new Set<number>();
  /** Chunks that arrived before the exchange opened the stream's sink. */
  private readonly early = new Map<number, (string | null)[]>();

  constructor(
    private readonly post: (msg: FromThread) => void,
    private readonly learn: Learn,
  ) {}

  /** Relayed requests not yet answered (whole answers), for diagnostics. */
  get pending(): number {
    return this.waiting.size;
  }

  relay(route: number, inc: Incoming, keyHash: string): Promise<Reply> {
    const id = ++this.seq;
    const req: RelayedRequest = {
      method: inc.method,
      path: inc.path,
      query: inc.query,
      params: inc.params,
      managementKey: inc.managementKey,
      operatorToken: inc.operatorToken,
      contentType: inc.contentType,
      body: inc.body,
      bodyTooDeep: inc.bodyTooDeep,
      headers: inc.headers,
      remoteAddress: inc.remoteAddress(),
    };
    return new Promise((resolve) => {
      this.waiting.set(id, resolve);
      this.post({ t: 'relay', id, route, req, keyHash });
    });
  }

  /** Handles the main thread's message about a relayed request; false for any other message. */
  receive(msg: ToThread): boolean {
    switch (msg.t) {
      case 'reply': {
        if (msg.learned !== undefined) this.learn(msg.learned.hash, msg.learned.key, msg.learned.untilMs);
        const body = msg.body;
        const raw = body === null ? undefined : typeof body === 'string' ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
        this.settle(msg.id, raw === undefined ? { status: msg.status, headers: msg.headers } : { status: msg.status, headers: msg.headers, raw });
        return true;
      }
      case 'piped':
        this.settle(msg.id, { status: msg.status, headers: msg.headers, piped: this.source(msg.id, msg.length) });
        return true;
      case 'piece': {
        const p = this.pieces.get(msg.id);
        this.pieces.delete(msg.id);
        if (msg.failed) p?.reject(new Error('The relayed answer could not be completed'));
        else p?.resolve(msg.data);
        return true;
      }
      case 'stream':
        this.early.set(msg.id, []);
        this.settle(msg.id, { status: msg.status, headers: msg.headers, stream: (sink) => this.attach(msg.id, sink) });
        return true;
      case 'chunk':
      case 'end': {
        const data = msg.t === 'chunk' ? msg.data : null;
        const sink = this.sinks.get(msg.id);
        if (sink === undefined) this.early.get(msg.id)?.push(data);
        else if (data !== null) sink.write(data);
        else {
          this.endedByMain.add(msg.id);
          sink.end();
        }
        return true;
      }
      default:
        return false;
    }
  }

  private settle(id: number, reply: Reply): void {
    const resolve = this.waiting.get(id);
    this.waiting.delete(id);
    resolve?.(reply);
  }

  private source(id: number, length: number): BodySource {
    return {
      length,
      next: () =>
        new Promise<Uint8Array | null>((resolve, reject) => {
          this.pieces.set(id, { resolve, reject });
          this.post({ t: 'next', id });
        }),
      cancel: () => {
        this.pieces.delete(id);
        this.post({ t: 'cancel', id });
      },
    };
  }

  private attach(id: number, sink: StreamSink): void {
    const early = this.early.get(id) ?? [];
    this.early.delete(id);
    this.sinks.set(id, sink);
    // The client left, or this thread ends its streams (shutdown): the main thread stops writing.
    sink.onClose(() => {
      this.sinks.delete(id);
      if (!this.endedByMain.delete(id)) this.post({ t: 'closed', id });
    });
    for (const data of early) {
      if (data !== null) sink.write(data);
      else {
        this.endedByMain.add(id);
        sink.end();
        return;
      }
    }
  }
}
