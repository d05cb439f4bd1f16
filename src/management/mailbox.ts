/**
 * The management actor's mailbox: every message that crosses between the front thread and the
 * management worker (workers/management.ts), in one place.
 *
 * The management actor owns the node's database connection and runs every management request
 * (REST flag, key, audit and operator routes; GraphQL documents that are not evaluation-only):
 * database work, GraphQL execution and answer serialisation. The front thread only parses,
 * admits (authentication, subscription, rate limit) and writes the answer bytes it gets back.
 *
 *   front ──init──────────────▶ actor    open the database, migrate, bootstrap
 *   front ◀─ready───────────── actor    (the generated bootstrap key, once)
 *   front ──request──────────▶ actor    a management request: its fields, body and admission
 *   front ◀─event───────────── actor    a cluster event the request's write published (change, key)
 *   front ◀─reply───────────── actor    status, headers and the serialised body (transferred)
 *   front ◀─piece───────────── actor    or, for a large body, its pieces of PIECE_BYTES, at most
 *   front ──more─────────────▶ actor    PIECE_WINDOW ahead of what the client has taken: each
 *   front ──cancel───────────▶ actor    `more` asks for the next, `cancel` drops the rest
 *   front ──query────────────▶ actor    the front's own reads: key lookups, snapshot loads, polls
 *   front ◀─rows────────────── actor
 *   front ──change───────────▶ actor    a change the front's snapshot applied (bus, poll, own write)
 *   front ◀─log─────────────── actor    a log line, written by the front's logger
 *   front ──close────────────▶ actor    close the database and exit
 *
 * Events that belong to a request are posted before its reply on the same port, so the front has
 * them (and applies a write to its own snapshot) before it answers: read-your-writes.
 */
import type { Principal } from '../auth/permissions.js';
import type { Config } from '../config.js';
import type { ClusterEvent } from '../cluster/bus.js';
import type { Change } from '../snapshots/registry.js';

/** Who the front admitted a request as. */
export type Admission =
  /** A Management Key; `version` is the organization's snapshot version the front held then. */
  | { kind: 'key'; principal: Principal; version: number }
  /** The operator API's token. */
  | { kind: 'operator' }
  /** Nothing to admit (a route that checks its own input). */
  | { kind: 'none' };

/** The parts of an `Incoming` a management handler reads. */
export interface RequestFields {
  method: string;
  path: string;
  query: string;
  params: string[];
  contentType: string;
  headers: Record<string, string>;
  remoteAddress: string;
  body: Uint8Array;
}

export interface InitMessage {
  t: 'init';
  config: Config;
  inMemory: boolean;
  /** The node's evaluation counters (a management document may evaluate). */
  evalCounts: SharedArrayBuffer;
}

export type ToActor =
  | InitMessage
  | { t: 'request'; id: number; route: string; fields: RequestFields; admission: Admission }
  | { t: 'query'; id: number; text: string; params: unknown[] | undefined; exec: boolean }
  | { t: 'change'; change: Change }
  /** The client took a piece of reply `id`: send the next. */
  | { t: 'more'; id: number }
  /** The client of reply `id` went away: drop its pieces. */
  | { t: 'cancel'; id: number }
  | { t: 'close' };

/** A VexilError as it crosses the boundary. */
export interface ErrorData {
  code: string;
  message: string;
  retryAfter?: number;
}

export type FromActor =
  | { t: 'ready'; generatedAdminKey: string | null; kind: 'pglite' | 'postgres' }
  | { t: 'failed'; message: string }
  /** `piped`: the body (`body` null) follows in pieces, this many bytes in all. */
  | { t: 'reply'; id: number; status: number; headers: Record<string, string> | undefined; body: Uint8Array | null; piped?: number }
  | { t: 'piece'; id: number; bytes: Uint8Array; last: boolean }
  | { t: 'rows'; id: number; rows?: unknown[]; error?: ErrorData }
  | { t: 'event'; event: ClusterEvent }
  | { t: 'log'; level: 'debug' | 'info' | 'warn' | 'error'; msg: string; fields?: Record<string, unknown> };

/**
 * A body larger than this crosses in pieces of this size: the front then never holds (nor makes
 * its garbage collector account for) a whole large answer, and writes each piece in well under a
 * millisecond between evaluations.
 */
export const PIECE_BYTES = 1 << 20;
/** Pieces sent ahead of the client. */
export const PIECE_WINDOW = 4;

/** A management route's name in both threads' route tables. */
export const routeId = (method: string, pattern: string): string => `${method} ${pattern}`;
