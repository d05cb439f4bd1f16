/**
 * The main thread's side of the front threads (CONTRACT 20, docs/threads.md): starts them
 * (workers/front.ts), keeps each told what it needs to serve — the shared flag data
 * (snapshots/publisher.ts), key revocations — runs what they relay (relay.ts), gathers their
 * request counts for /metrics, and drains them at shutdown.
 *
 * How they share the port: with SO_REUSEPORT (Linux) every thread listens on it and the kernel
 * spreads connections; with uWebSockets.js's acceptor pattern the main thread's app accepts them
 * and hands each to a thread's app in turn (`Acceptor`), and serves none itself.
 */
import type { InsightsRows } from '../../insights/counter.js';
import type { SampleRows } from '../../samples/sampler.js';
import { createServer } from 'node:net';
import { Worker } from 'node:worker_threads';
import type { Config } from '../../config.js';
import type { KeyCache } from '../../auth/key-cache.js';
import type { RouteStatsSnapshot } from '../../ops/route-stats.js';
import type { LimiterMemory } from '../../ratelimit/shared-limiter.js';
import type { SnapshotPublisher } from '../../snapshots/publisher.js';
import { projectPath } from '../../util/paths.js';
import type { Logger } from '../../util/log.js';
import type { ExchangeContext } from '../exchange.js';
import type { Acceptor } from '../front-interface.js';
import type { Route } from '../router.js';
import type { FromThread, ThreadData, ToThread } from './mailbox.js';
import { RelayServer } from './relay.js';
import { routeMeta } from './thread-routes.js';

export interface FrontThreadsOptions {
  config: Config;
  /** Threads to start besides the main thread. */
  threads: number;
  host: string;
  /** SO_REUSEPORT: the port the main thread listens on. Acceptor: null, and `acceptor` set. */
  port: number | null;
  acceptor: Acceptor | null;
  /** The node's routes; the threads relay to them by index. */
  routes: readonly Route[];
  /** The main thread's exchanges (its streams end at shutdown, relayed ones included). */
  exchanges: ExchangeContext;
  keys: KeyCache;
  publisher: SnapshotPublisher;
  evalCounts: SharedArrayBuffer;
  /** The node's per-key token buckets, which every thread takes from. */
  limits: LimiterMemory;
  log: Logger;
  /** A thread's evaluation counts per flag (insights/counter.ts rows) and sampled contexts, posted every `insightsPostMs` and at its end. */
  onInsights?: (rows: InsightsRows, samples?: SampleRows) => void;
}

/** How long a thread may take to start listening. */
const START_MS = 15_000;
/** How long a scrape waits for a thread's request counts. */
const STATS_MS = 2_000;

class ThreadLink {
  readonly relay: RelayServer;
  private readonly asks = new Map<number, (routes: RouteStatsSnapshot[]) => void>();
  private seq = 0;
  exited = false;
  detach: () => void = () => {};

  constructor(
    readonly worker: Worker,
    opts: FrontThreadsOptions,
  ) {
    this.relay = new RelayServer(opts.routes, opts.exchanges, opts.keys, (msg) => this.post(msg));
    this.onInsights = opts.onInsights ?? (() => {});
  }
  private readonly onInsights: (rows: InsightsRows, samples?: SampleRows) => void;

  post(msg: ToThread): void {
    if (!this.exited) this.worker.postMessage(msg);
  }

  receive(msg: FromThread): void {
    if (this.relay.receive(msg)) return;
    if (msg.t === 'insights') {
      this.onInsights(msg.rows, msg.samples);
      return;
    }
    if (msg.t === 'stats') {
      this.asks.get(msg.id)?.(msg.routes);
      this.asks.delete(msg.id);
    }
  }

  stats(): Promise<RouteStatsSnapshot[]> {
    if (this.exited) return Promise.resolve([]);
    const id = ++this.seq;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.asks.delete(id);
        resolve([]);
      }, STATS_MS);
      this.asks.set(id, (routes) => {
        clearTimeout(timer);
        resolve(routes);
      });
      this.post({ t: 'stats', id });
    });
  }

  /** Resolves once the thread has ended (it ends by itself once drained), or after `ms`. */
  drain(graceMs: number, ms: number): Promise<void> {
    if (this.exited) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        // A thread that did not end: stopped from here (its sockets were closed by the drain, or
        // the thread is stuck; either way the process must be able to exit).
        void this.worker.terminate();
        resolve();
      }, ms);
      this.worker.once('exit', () => {
        clearTimeout(timer);
        resolve();
      });
      this.post({ t: 'drain', graceMs });
    });
  }
}

/**
 * Listens on `port` so that other threads may listen on it too. uSockets sets SO_REUSEPORT only on
 * a port it is given, not on port 0: for 0, a free port is found first (and tried again if it is
 * taken in between).
 */
export async function listenShared(listen: (host: string, port: number) => Promise<number>, host: string, port: number): Promise<number> {
  if (port !== 0) return listen(host, port);
  for (let attempt = 1; ; attempt++) {
    const free = await new Promise<number>((resolve, reject) => {
      const probe = createServer();
      probe.once('error', reject);
      probe.listen(0, host, () => {
        const p = (probe.address() as { port: number }).port;
        probe.close(() => resolve(p));
      });
    });
    try {
      return await listen(host, free);
    } catch (err) {
      if (attempt >= 5) throw err;
    }
  }
}

export class FrontThreads {
  private readonly links: ThreadLink[] = [];
  private readonly epoch: Int32Array;
  private closing = false;

  private constructor(private readonly opts: FrontThreadsOptions) {
    this.epoch = new Int32Array(new SharedArrayBuffer(4));
    // Revocations reach every thread before any request that starts after them (key-mirror.ts):
    // posted first, then the counter every thread checks is bumped.
    opts.keys.onInvalidate((keyId) => this.revoke(keyId === null ? { t: 'keys', all: true } : { t: 'keys', keyId }));
    opts.keys.onInvalidateOrg((orgId) => this.revoke({ t: 'keys', orgId }));
  }

  /** Starts `opts.threads` front threads; resolves once every one listens (or has been adopted). */
  static async start(opts: FrontThreadsOptions): Promise<FrontThreads> {
    const ft = new FrontThreads(opts);
    try {
      await Promise.all(Array.from({ length: opts.threads }, (_, i) => ft.spawn(i + 1)));
    } catch (err) {
      await ft.close(0);
      throw err;
    }
    return ft;
  }

  /** Threads serving besides the main thread. */
  get count(): number {
    return this.links.filter((l) => !l.exited).length;
  }

  /** Every thread's request counts (for /metrics). */
  stats(): Promise<RouteStatsSnapshot[][]> {
    return Promise.all(this.links.map((l) => l.stats()));
  }

  /** Drains every thread (stop accepting, end streams, finish in-flight requests within `graceMs`) and waits for them to end. */
  async close(graceMs: number): Promise<void> {
    this.closing = true;
    await Promise.all(this.links.map((l) => l.drain(graceMs, graceMs + 5_000)));
    for (const l of this.links) {
      l.relay.close();
      l.detach();
    }
  }

  private revoke(msg: ToThread): void {
    for (const l of this.links) l.post(msg);
    Atomics.add(this.epoch, 0, 1);
  }

  private spawn(index: number): Promise<void> {
    const { opts } = this;
    const data: ThreadData = {
      config: opts.config,
      port: opts.port,
      host: opts.host,
      routes: opts.routes.map(routeMeta),
      keyEpoch: this.epoch.buffer as SharedArrayBuffer,
      evalCounts: opts.evalCounts,
      limits: opts.limits,
      index,
    };
    const worker = new Worker(projectPath('dist', 'workers', 'front.js'), { workerData: data, name: `vexil-front-${index}` });
    const link = new ThreadLink(worker, opts);
    this.links.push(link);
    // Every organization's current data now, every change from now on (in order with the rest).
    link.detach = opts.publisher.attach((msg) => link.post({ t: 'store', msg }));
    const log = opts.log.child({ thread: index });
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`Front thread ${index} did not start within ${START_MS} ms`)), START_MS);
      worker.on('message', (msg: FromThread) => {
        if (msg.t === 'ready') {
          clearTimeout(timer);
          if (msg.descriptor !== undefined) opts.acceptor?.adopt(msg.descriptor);
          resolve();
          return;
        }
        link.receive(msg);
      });
      worker.on('error', (err) => {
        clearTimeout(timer);
        log.error('front thread failed', { err });
        reject(err);
      });
      worker.on('exit', (code) => {
        link.exited = true;
        link.relay.close();
        link.detach();
        if (!this.closing) log.error('front thread ended', { code });
      });
    });
  }
}
