/**
 * The mailbox between the main thread and each other front thread (docs/threads.md): every message
 * that crosses a front thread's port, in one place. One MessagePort per thread carries both ways,
 * so what the main thread posts arrives in the order it was posted: a relayed answer after the
 * snapshot change and the key revocation that came before it.
 *
 * What a front thread runs itself: the evaluation routes for a key it holds (thread-routes.ts).
 * Everything else — a key it does not hold, a management request, a stream, /metrics — it relays
 * to the main thread, which runs the node's own route for it and sends the answer back as bytes.
 */
import type { ManagementKey } from '../../domain/types.js';
import type { StoreMessage } from '../../snapshots/shared-store.js';
import type { Method } from '../router.js';
import type { Incoming } from '../handler.js';
import type { RouteStatsSnapshot } from '../../ops/route-stats.js';
import type { Config } from '../../config.js';
import type { InsightsRows } from '../../insights/counter.js';
import type { SampleRows } from '../../samples/sampler.js';
import type { LimiterMemory } from '../../ratelimit/shared-limiter.js';

/** What a front thread is started with (workerData). */
export interface ThreadData {
  config: Config;
  /** The port the main thread listens on (SO_REUSEPORT), or null in acceptor mode. */
  port: number | null;
  host: string;
  /** The main thread's routes, in its order: a relayed request names its route by index. */
  routes: RouteMeta[];
  /** Bumped by the main thread after it posts a key revocation: a front thread drains its port when it moved. */
  keyEpoch: SharedArrayBuffer;
  /** The node's evaluation counters (ops/eval-counts.ts). */
  evalCounts: SharedArrayBuffer;
  /** The node's per-key token buckets (ratelimit/token-bucket.ts). */
  limits: LimiterMemory;
  /** 1, 2, …: names the thread in logs. */
  index: number;
}

/** A route as a front thread needs to know it: how to read its request; the handler stays on the main thread. */
export interface RouteMeta {
  method: Method;
  pattern: string;
  headers: string[];
  maxBodyDepth: number | undefined;
  cors: boolean;
}

/** A request as the main thread needs it to run the route (handler.ts `Incoming`, its address read, its body as bytes). */
export type RelayedRequest = Omit<Incoming, 'body' | 'remoteAddress' | 'admission'> & { body: Uint8Array; remoteAddress: string };

/** Main thread → front thread. */
export type ToThread =
  /** The shared flag data: references and versions (snapshots/publisher.ts). */
  | { t: 'store'; msg: StoreMessage }
  /** Forget a key (disabled, rotated, deleted), every key of an organization (a rename), or all. */
  | { t: 'keys'; keyId: string }
  | { t: 'keys'; orgId: string }
  | { t: 'keys'; all: true }
  /**
   * A relayed request's whole answer (`body` null: none). `learned`: the key the request
   * authenticated with, which the thread may now serve itself until `untilMs` (Date.now()), the end
   * of its lifetime in the main thread's cache.
   */
  | { t: 'reply'; id: number; status: number; headers: Record<string, string> | undefined; body: Uint8Array | string | null; learned?: { hash: string; key: ManagementKey; untilMs: number } }
  /** A large answer of `length` bytes, whose pieces the thread asks for one at a time. */
  | { t: 'piped'; id: number; status: number; headers: Record<string, string>; length: number }
  /** One piece (null: the end; `failed`: the body cannot be completed). */
  | { t: 'piece'; id: number; data: Uint8Array | null; failed?: true }
  /** A stream's status and headers; its chunks follow. */
  | { t: 'stream'; id: number; status: number; headers: Record<string, string> | undefined }
  | { t: 'chunk'; id: number; data: string }
  | { t: 'end'; id: number }
  /** Send the thread's request counts (scrape of /metrics). */
  | { t: 'stats'; id: number }
  /** Shut down: stop accepting, end streams, finish in-flight requests within `graceMs`, close. */
  | { t: 'drain'; graceMs: number };

/** Front thread → main thread. */
export type FromThread =
  /** Listening; in acceptor mode, the app descriptor the main thread hands connections to. */
  | { t: 'ready'; descriptor?: unknown }
  | { t: 'relay'; id: number; route: number; req: RelayedRequest; keyHash: string }
  /** The next piece of piped answer `id`; `cancel`: the client went away. */
  | { t: 'next'; id: number }
  | { t: 'cancel'; id: number }
  /** The client of stream `id` went away. */
  | { t: 'closed'; id: number }
  | { t: 'stats'; id: number; routes: RouteStatsSnapshot[] }
  /** The thread's evaluation counts per flag since its last post (insights/counter.ts), and its sampled contexts (samples/sampler.ts). */
  | { t: 'insights'; rows: InsightsRows; samples?: SampleRows };

/** A route's name across threads: its method and pattern. */
export const routeKey = (method: Method, pattern: string): string => `${method} ${pattern}`;
