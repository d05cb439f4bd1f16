/**
 * One HTTP exchange on uWebSockets.js: capture what the handler needs from the request before the
 * first await (uWS requests are only valid synchronously), read the body under the 1 MiB cap,
 * run the handler, and write its reply (or a problem+json error) in one corked write, unless the
 * client has gone away.
 */
import { isUtf8 } from 'node:buffer';
import { VexilError } from '../domain/errors.js';
import type { HttpRequest, HttpResponse } from './uws.js';
import { asVexilError, PROBLEM_CONTENT_TYPE, toProblem } from './problem.js';
import { STATUS_LINE } from './status.js';
import type { Logger } from '../util/log.js';

export const MAX_BODY_BYTES = 1 << 20;

export interface Incoming {
  /** Raw query string, without `?`. */
  query: string;
  /** Path parameters, URL-decoded. */
  params: string[];
  managementKey: string;
  operatorToken: string;
  contentType: string;
  /** The raw body; empty when there is none. */
  body: Buffer;
}

export interface Reply {
  status: number;
  /** JSON-serialised unless `raw` is set; absent for 204. */
  body?: unknown;
  raw?: string;
  headers?: Record<string, string>;
}

export type Handler = (inc: Incoming) => Reply | Promise<Reply>;

const EMPTY = Buffer.alloc(0);

function decodeParam(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    throw new VexilError('BAD_REQUEST', 'Malformed percent-encoding in the URL');
  }
}

export function writeReply(res: HttpResponse, reply: Reply): void {
  res.cork(() => {
    res.writeStatus(STATUS_LINE[reply.status] ?? String(reply.status));
    if (reply.headers) for (const h in reply.headers) res.writeHeader(h, reply.headers[h]);
    if (reply.status === 204) {
      res.endWithoutBody();
      return;
    }
    if (!reply.headers?.['content-type']) res.writeHeader('content-type', 'application/json');
    res.end(reply.raw ?? JSON.stringify(reply.body ?? null));
  });
}

export function errorReply(err: VexilError, extraHeaders?: Record<string, string>): Reply {
  const problem = toProblem(err);
  const headers: Record<string, string> = { 'content-type': PROBLEM_CONTENT_TYPE, ...extraHeaders };
  if (err.retryAfter !== undefined) headers['retry-after'] = String(err.retryAfter);
  return { status: problem.status, body: problem, headers };
}

/**
 * Wraps a handler for uWS. `paramCount` path parameters are captured; `readBody` says whether the
 * method may carry a body.
 */
export function exchange(log: Logger, paramCount: number, readBody: boolean, handler: Handler, onError?: (err: VexilError) => Reply) {
  const fail = (res: HttpResponse, state: { aborted: boolean }, err: unknown) => {
    const ve = asVexilError(err);
    if (ve.code === 'INTERNAL') log.error('unexpected error', { err: (ve.cause ?? ve) as Error });
    if (!state.aborted) writeReply(res, onError ? onError(ve) : errorReply(ve));
  };

  return (res: HttpResponse, req: HttpRequest): void => {
    const state = { aborted: false };
    res.onAborted(() => {
      state.aborted = true;
    });
    let inc: Incoming;
    try {
      const params: string[] = [];
      for (let i = 0; i < paramCount; i++) params.push(decodeParam(req.getParameter(i) ?? ''));
      inc = {
        query: req.getQuery() ?? '',
        params,
        managementKey: req.getHeader('x-management-key'),
        operatorToken: req.getHeader('x-operator-token'),
        contentType: req.getHeader('content-type'),
        body: EMPTY,
      };
    } catch (err) {
      fail(res, state, err);
      return;
    }
    const run = () => {
      let out: Reply | Promise<Reply>;
      try {
        out = handler(inc);
      } catch (err) {
        fail(res, state, err);
        return;
      }
      if (out instanceof Promise) {
        out.then(
          (reply) => {
            if (!state.aborted) writeReply(res, reply);
          },
          (err) => fail(res, state, err),
        );
      } else if (!state.aborted) {
        writeReply(res, out);
      }
    };

    const length = req.getHeader('content-length');
    const chunked = req.getHeader('transfer-encoding') !== '';
    if (!readBody || (!chunked && (length === '' || length === '0'))) {
      run();
      return;
    }
    if (length !== '' && Number(length) > MAX_BODY_BYTES) {
      tooLarge(res, state);
      return;
    }
    let chunks: Buffer[] | null = [];
    let size = 0;
    res.onData((chunk, isLast) => {
      if (chunks === null) return;
      size += chunk.byteLength;
      if (size > MAX_BODY_BYTES) {
        chunks = null;
        tooLarge(res, state);
        return;
      }
      // uWS reuses the chunk's memory after this callback returns: copy it.
      chunks.push(Buffer.from(new Uint8Array(chunk)));
      if (isLast) {
        inc.body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
        chunks = null;
        run();
      }
    });
  };
}

function tooLarge(res: HttpResponse, state: { aborted: boolean }): void {
  if (state.aborted) return;
  state.aborted = true;
  const reply = errorReply(new VexilError('PAYLOAD_TOO_LARGE', `Request bodies are limited to ${MAX_BODY_BYTES} bytes`), { connection: 'close' });
  res.cork(() => {
    res.writeStatus(STATUS_LINE[413]);
    for (const h in reply.headers) res.writeHeader(h, reply.headers![h]);
    res.end(JSON.stringify(reply.body), true);
  });
}

// ---- body helpers ---------------------------------------------------------------------------------

export const isJsonContentType = (ct: string): boolean => {
  if (ct === 'application/json') return true;
  const base = ct.split(';', 1)[0].trim().toLowerCase();
  return base === 'application/json' || (base.startsWith('application/') && base.endsWith('+json'));
};

/**
 * The body as a JSON object. An empty body is `{}` when `allowEmpty`, else 400. A body that is not
 * UTF-8, not JSON, or not an object is 400; a non-JSON content type is 415.
 */
export function jsonObjectBody(inc: Incoming, allowEmpty = false): Record<string, unknown> {
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
