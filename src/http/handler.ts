/**
 * What a route handler takes and gives, whatever front carries the exchange: the request as it
 * sees it (`Incoming`), the answer it returns (`Reply`, possibly streamed or piped), and the
 * `Handler` signature itself. Types only; exchange.ts runs handlers and writes their replies.
 */
import type { Admission } from '../management/mailbox.js';

export interface Incoming {
  /** 'GET', 'POST', … (upper case). */
  method: string;
  /** URL path without the query string, not decoded. */
  path: string;
  /** Raw query string, without `?`. */
  query: string;
  /** Path parameters, URL-decoded. */
  params: string[];
  managementKey: string;
  operatorToken: string;
  contentType: string;
  /** The raw body; empty when there is none, or when the front stopped keeping it (`bodyTooDeep`). */
  body: Buffer;
  /**
   * For a route with `Route.maxBodyDepth` and a JSON body: whether the body nests deeper than that,
   * as the front found while it arrived (it then keeps none of it). null: not scanned.
   */
  bodyTooDeep: boolean | null;
  /** The headers the route listed in `Route.headers` (lower-case names); '' when absent. */
  headers: Record<string, string>;
  /** The client's IP address as text. */
  remoteAddress(): string;
  /** In the management actor: who the front admitted the request as (management/boundary.ts). */
  admission?: Admission;
}

export interface StreamSink {
  write(chunk: string): void;
  end(): void;
  /** Called once when the client goes away, the stream is ended, or the node shuts down. */
  onClose(cb: () => void): void;
  readonly closed: boolean;
}

export interface Reply {
  status: number;
  /**
   * JSON-serialised unless `raw` is set; absent for 204 and 304. Serialised with `boundedJson`
   * (src/util/bounded-json.ts): an answer past `ExchangeContext.maxAnswerBytes` is refused with
   * 400 naming the way to page, never built whole.
   */
  body?: unknown;
  /**
   * The body is known to be small (an evaluation answer, an error): plain `JSON.stringify`, the
   * hot path's fastest, without the size bound.
   */
  small?: boolean;
  raw?: string | Buffer;
  headers?: Record<string, string>;
  /** A streamed answer (server-sent events): called once status and headers are written. */
  stream?: (sink: StreamSink) => void;
  /**
   * A large body that arrives in pieces (a management answer from the actor): written with its
   * `Content-Length` as the pieces come, each only once the client has taken the one before, so
   * the front never holds the whole answer (docs/cluster.md, "Large answers").
   */
  piped?: BodySource;
}

/** A body of known length, handed over piece by piece (`Reply.piped`). */
export interface BodySource {
  /** Bytes in all. */
  readonly length: number;
  /**
   * The next piece, or null after the last; rejects when the body cannot be completed. A piece is
   * valid until the next call to `next` or `cancel` (its memory is reused): write it or copy it.
   */
  next(): Promise<Uint8Array | null>;
  /** The client went away: no more pieces are wanted. */
  cancel(): void;
}

export type Handler = (inc: Incoming) => Reply | Promise<Reply>;
