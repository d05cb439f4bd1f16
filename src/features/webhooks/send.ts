/**
 * One delivery attempt (docs/webhooks.md, "Delivery"): a POST of the message body with its
 * Standard Webhooks headers. Redirects are not followed (a 3xx is a failed attempt); at most
 * MAX_RESPONSE_BYTES of the answer are read; the whole attempt is bounded by `timeoutMs`. The
 * address connected to is checked (address.ts), on the resolver's answer and on the socket, when
 * the connection is made.
 *
 * With `agents` (the dispatcher's), connections are kept alive and reused by the next attempt to
 * the same host and port (an endpoint's backlog costs one connection, not one per message). An
 * answer read to its end leaves its connection for reuse; one cut short (over 64 KiB, a timeout)
 * closes it. A reused connection the endpoint closed meanwhile (ECONNRESET or EPIPE before any
 * answer) is retried once on a new connection, within the same timeout: the receiver may see the
 * message twice, which at-least-once delivery allows.
 */
import http from 'node:http';
import https from 'node:https';
import { isIP, type Socket } from 'node:net';
import { BlockedAddressError, guardedLookup, isBlockedAddress, systemResolve, type Resolve } from './address.js';

export const MAX_RESPONSE_BYTES = 64 * 1024;

export interface SendRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
  allowPrivate: boolean;
  /** The resolver (tests inject one that answers differently the second time). */
  resolve?: Resolve;
  /** Keep-alive agents; without them every attempt has a connection of its own. */
  agents?: Agents;
}

export interface Agents {
  http: http.Agent;
  https: https.Agent;
}

/** Errors of a reused connection that the endpoint had closed: the request never reached it. */
const STALE = new Set(['ECONNRESET', 'EPIPE']);

export interface SendResult {
  /** The HTTP status, or null when none came (timeout, network error, refused address). */
  status: number | null;
  /** Why the attempt failed (null when 2xx); never a secret. */
  error: string | null;
  retryAfter: string | null;
  durationMs: number;
  /** The first bytes of the answer (at most MAX_RESPONSE_BYTES). */
  responseBytes: number;
}

export function send(req: SendRequest): Promise<SendResult> {
  const started = performance.now();
  const u = new URL(req.url);
  const secure = u.protocol === 'https:';
  const mod = secure ? https : http;
  const host = u.hostname.replace(/^\[|\]$/g, '');
  const pooled = req.agents === undefined ? undefined : secure ? req.agents.https : req.agents.http;
  return new Promise((resolve) => {
    let done = false;
    let timer: NodeJS.Timeout | undefined;
    let current: http.ClientRequest | undefined;
    const finish = (r: Omit<SendResult, 'durationMs'>) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve({ ...r, durationMs: Math.round(performance.now() - started) });
    };
    const fail = (error: string) => finish({ status: null, error, retryAfter: null, responseBytes: 0 });
    // An IP literal is not looked up: it is checked here, and on the socket below.
    if (!req.allowPrivate && isIP(host) !== 0 && isBlockedAddress(host)) {
      fail(`refused address ${host}`);
      return;
    }
    const checkSocket = (r: http.ClientRequest, socket: Socket) => {
      const remote = socket.remoteAddress;
      if (!req.allowPrivate && (remote === undefined || isBlockedAddress(remote))) {
        r.destroy(new BlockedAddressError(`refused address ${remote ?? '(unknown)'}`));
      }
    };
    /** `agent`: the keep-alive agent, or false for a connection of this request's own. */
    const attempt = (agent: http.Agent | false) => {
      let answered = false;
      const r = mod.request(
        u,
        {
          method: 'POST',
          agent,
          headers: { 'content-type': 'application/json', 'user-agent': 'Vexil-Webhooks/1', ...req.headers, 'content-length': Buffer.byteLength(req.body) },
          lookup: guardedLookup(req.resolve ?? systemResolve, req.allowPrivate) as never,
          ...(secure && isIP(host) === 0 ? { servername: host } : {}),
        },
        (res) => {
          answered = true;
          const status = res.statusCode ?? 0;
          const retryAfter = typeof res.headers['retry-after'] === 'string' ? res.headers['retry-after'] : null;
          let bytes = 0;
          const end = () =>
            finish({ status, error: status >= 200 && status < 300 ? null : `HTTP ${status}${status >= 300 && status < 400 ? ' (redirects are not followed)' : ''}`, retryAfter, responseBytes: bytes });
          res.on('data', (chunk: Buffer) => {
            bytes += chunk.length;
            if (bytes >= MAX_RESPONSE_BYTES) {
              bytes = MAX_RESPONSE_BYTES;
              end();
              // Not read further: the connection goes with it.
              res.destroy();
            }
          });
          // Read to its end: the connection goes back to the agent for the next attempt.
          res.on('end', end);
          res.on('error', end);
          res.on('close', end);
        },
      );
      current = r;
      r.on('socket', (socket: Socket) => {
        // A new connection is checked once connected; a reused one was, when it connected.
        if (socket.connecting) socket.once('connect', () => checkSocket(r, socket));
        else checkSocket(r, socket);
      });
      r.on('error', (err: NodeJS.ErrnoException) => {
        if (done) return;
        if (agent !== false && r.reusedSocket && !answered && err.code !== undefined && STALE.has(err.code)) {
          attempt(false);
          return;
        }
        if (err instanceof BlockedAddressError) fail(err.message);
        else fail(`${err.code ?? 'ERROR'}: ${err.message}`.slice(0, 500));
      });
      r.end(req.body);
    };
    timer = setTimeout(() => {
      fail(`timeout after ${req.timeoutMs} ms`);
      current?.destroy();
    }, req.timeoutMs);
    attempt(pooled ?? false);
  });
}
