/**
 * Picks the HTTP front: native uWebSockets.js where a binary loads on this Node.js and libc, else the
 * `node:http` fallback (with a warning naming the cause and the fix), unless the operator asked
 * to refuse that (`VEXIL_REQUIRE_NATIVE_HTTP=1`). Both serve the same routes through the same
 * exchange logic (exchange.ts); the rest of the code never knows which one runs.
 */
import type { Logger } from '../util/log.js';
import { DEFAULT_CLIENT_TIMEOUTS, type ClientTimeouts } from './client-timeouts.js';
import type { ExchangeContext } from './exchange.js';
import type { HttpFront } from './front-interface.js';
import { createNodeFront } from './node-front.js';
import type { Route } from './router.js';
import { createUwsFront } from './uws-front.js';
import { loadNativeUws, type UwsCandidate, UWS_CANDIDATES } from './uws.js';

export class NativeHttpRequiredError extends Error {
  override name = 'NativeHttpRequiredError';
}

export interface FrontOptions {
  requireNative: boolean;
  /** Tests: force the fallback front. */
  forceFallback?: boolean;
  candidates?: UwsCandidate[];
  /** Slow-client bounds (docs/limits.md, "Slow clients"); 10 s, 30 s and 120 s by default. */
  timeouts?: ClientTimeouts;
}

export function createFront(ctx: ExchangeContext, routes: Route[], opts: FrontOptions, log: Logger): HttpFront {
  const timeouts = opts.timeouts ?? DEFAULT_CLIENT_TIMEOUTS;
  const loaded = opts.forceFallback ? { ok: false as const, reasons: ['VEXIL_HTTP_FRONT=node'] } : loadNativeUws(opts.candidates ?? UWS_CANDIDATES);
  if (loaded.ok) {
    log.info('http front: native uWebSockets.js', { package: loaded.name, version: loaded.version });
    return createUwsFront(loaded.module, { kind: 'uws', package: loaded.name, version: loaded.version, fallbackReason: null }, ctx, routes, timeouts);
  }
  const reason = loaded.reasons.join('; ');
  if (opts.requireNative) {
    throw new NativeHttpRequiredError(
      `No native uWebSockets.js binary loads on Node ${process.version} (${process.platform}-${process.arch}): ${reason}. ` +
        'VEXIL_REQUIRE_NATIVE_HTTP=1 refuses the node:http fallback. Fix: run on a system with glibc 2.38 or newer ' +
        '(Debian 13, Ubuntu 24.04) for Node 20-25, or on Node 20.',
    );
  }
  if (!opts.forceFallback) {
    log.warn(
      'http front: no native uWebSockets.js binary loads here, serving on the slower node:http fallback. ' +
        'Fix: glibc 2.38 or newer (Debian 13, Ubuntu 24.04) for Node 20-25, or Node 20 on older glibc. ' +
        'Set VEXIL_REQUIRE_NATIVE_HTTP=1 to refuse to start instead.',
      { node: process.version, reasons: loaded.reasons },
    );
  }
  return createNodeFront({ kind: 'node', package: null, version: null, fallbackReason: reason }, ctx, routes, timeouts);
}
