/**
 * One delivery attempt (docs/webhooks.md, "Delivery"): a POST of the message body with its
 * Standard Webhooks headers. Redirects are not followed (a 3xx is a failed attempt); at most
 * MAX_RESPONSE_BYTES of the answer are read; the whole attempt is bounded by `timeoutMs`. The
 * address connected to is checked (address.ts), on the resolver's answer and on the socket.
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
}

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
  const mod = u.protocol === 'https:' ? https : http;
  const host = u.hostname.replace(/^\[|\]$/g, '');
  return new Promise((resolve) => {
    let done = false;
    let timer: NodeJS.Timeout | undefined;
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
    const r = mod.request(
      u,
      {
        method: 'POST',
        agent: false,
        headers: { 'content-type': 'application/json', 'user-agent': 'Vexil-Webhooks/1', ...req.headers, 'content-length': Buffer.byteLength(req.body) },
        lookup: guardedLookup(req.resolve ?? systemResolve, req.allowPrivate) as never,
        ...(u.protocol === 'https:' && isIP(host) === 0 ? { servername: host } : {}),
      },
      (res) => {
        const status = res.statusCode ?? 0;
        const retryAfter = typeof res.headers['retry-after'] === 'string' ? res.headers['retry-after'] : null;
        let bytes = 0;
        const end = () => {
          res.destroy();
          finish({ status, error: status >= 200 && status < 300 ? null : `HTTP ${status}${status >= 300 && status < 400 ? ' (redirects are not followed)' : ''}`, retryAfter, responseBytes: bytes });
        };
        res.on('data', (chunk: Buffer) => {
          bytes += chunk.length;
          if (bytes >= MAX_RESPONSE_BYTES) {
            bytes = MAX_RESPONSE_BYTES;
            end();
          }
        });
        res.on('end', end);
        res.on('error', end);
        res.on('close', end);
      },
    );
    r.on('socket', (socket: Socket) => {
      socket.on('connect', () => {
        const remote = socket.remoteAddress;
        if (!req.allowPrivate && (remote === undefined || isBlockedAddress(remote))) {
          r.destroy(new BlockedAddressError(`refused address ${remote ?? '(unknown)'}`));
        }
      });
    });
    r.on('error', (err: NodeJS.ErrnoException) => {
      if (err instanceof BlockedAddressError) fail(err.message);
      else fail(`${err.code ?? 'ERROR'}: ${err.message}`.slice(0, 500));
    });
    timer = setTimeout(() => {
      fail(`timeout after ${req.timeoutMs} ms`);
      r.destroy();
    }, req.timeoutMs);
    r.end(req.body);
  });
}
