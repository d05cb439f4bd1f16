/**
 * What every HTTP front offers, whichever carries the requests: `HttpFront`, implemented by
 * uws-front.ts (native uWebSockets.js) and node-front.ts (the node:http fallback), and the
 * `FrontInfo` it reports (/healthz, /readyz). front.ts picks which one runs.
 */

export interface FrontInfo {
  /** `uws`: native uWebSockets.js; `node`: the node:http fallback. */
  kind: 'uws' | 'node';
  /** The npm package whose binary is in use (uws only). */
  package: string | null;
  version: string | null;
  /** Why the native front is not in use (node only). */
  fallbackReason: string | null;
}

export interface HttpFront {
  readonly info: FrontInfo;
  /** Resolves with the port listened on. */
  listen(host: string, port: number): Promise<number>;
  /** Stops accepting new connections; open ones keep being served. */
  stopAccepting(): void;
  /** Closes every remaining connection. */
  closeConnections(): void;
  /**
   * uWebSockets.js's acceptor pattern (docs/threads.md): where the binary has it, this front can
   * hand the connections it accepts to other threads' fronts (`adopt` their `descriptor`s). Null
   * where it does not (the node:http fallback; uWebSockets.js builds without it).
   */
  readonly acceptor: Acceptor | null;
}

export interface Acceptor {
  /** This front's app, as another thread's front adopts it. */
  descriptor(): unknown;
  /** From now on, connections this front accepts go to that app (round robin among those adopted). */
  adopt(descriptor: unknown): void;
}
