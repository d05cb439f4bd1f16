/**
 * One Vexil node: the front (this process) and its management actor (a child process that owns
 * storage, migrations and bootstrap), wired once. `startNode` is what `main.ts` runs and what the
 * tests start (several per process if they like).
 *
 * A request's path: the HTTP front (http/uws-front.ts, or http/node-front.ts where no native
 * uWebSockets.js binary loads) → http/exchange.ts (runs the route, writes the answer) → an
 * evaluation route (auth/authenticate.ts, then the evaluation engine), or a management route's
 * admission (management/boundary.ts) → the management actor (management/handle.ts), which runs the
 * feature's handler and service against the store (docs/cluster.md, "The boundary").
 */
import { admissionState } from './auth/admission-state.js';
import { readFileSync } from 'node:fs';
import type { Config } from './config.js';
import { projectPath } from './util/paths.js';
import { LocalBus, type Bus } from './cluster/bus.js';
import { NatsBus } from './cluster/nats-bus.js';
import { ClusterSync } from './cluster/sync.js';
import { Membership, type PeerRegistry } from './cluster/membership.js';
import type { ClusterEvent } from './cluster/bus.js';
import type { ManagementKey } from './domain/types.js';
import { evaluationRoutes } from './features/evaluation/routes.js';
import { managementFrontRoutes } from './management/front-routes.js';
import { readyFlagIndex } from './snapshots/flag-index.js';
import { ManagementActor, type FrontReads } from './management/handle.js';
import { ofrepRoutes } from './ofrep/routes.js';
import { feedRoutes } from './feed/routes.js';
import { uiRoutes } from './features/ui/routes.js';
import { ExchangeContext } from './http/exchange.js';
import { createFront } from './http/front.js';
import type { FrontInfo } from './http/front-interface.js';
import type { Route } from './http/router.js';
import { DbHealth } from './ops/db-health.js';
import { EvalCounts } from './ops/eval-counts.js';
import { NodeMetrics } from './ops/metrics.js';
import { opsRoutes } from './ops/routes.js';
import { openApiRoute } from './openapi/document.js';
import type { FrontRuntime } from './runtime.js';
import { SnapshotRegistry } from './snapshots/registry.js';
import { VexilError } from './domain/errors.js';
import { EvalPool } from './evaluation/pool/eval-pool.js';
import { SnapshotPublisher } from './snapshots/publisher.js';
import { FrontThreads, listenShared } from './http/threads/front-threads.js';
import { planThreads } from './http/threads/plan.js';
import { createLogger, type Logger } from './util/log.js';
import { InsightsForwarder } from './insights/forwarder.js';
import { metricsRoutes } from './insights/metrics-route.js';
import { insightsPostMs } from './insights/counter.js';

const VERSION = (JSON.parse(readFileSync(projectPath('package.json'), 'utf8')) as { version: string }).version;

export interface VexilNode {
  port: number;
  url: string;
  runtime: FrontRuntime;
  /** The database as the front reads it, through the management actor (tests, operations). */
  db: FrontReads;
  /** Which HTTP front serves this node. */
  front: FrontInfo;
  /** Every route this node serves (its route tables). */
  routes: readonly Route[];
  /** The generated bootstrap admin key when this start created the first organization and no key was configured. */
  generatedAdminKey: string | null;
  close(): Promise<void>;
}

export interface StartOptions {
  log?: Logger;
  /** Extra routes (tests). */
  routes?: (rt: FrontRuntime) => Route[];
  /** PGlite in memory instead of VEXIL_DATA_DIR (tests). */
  inMemory?: boolean;
  bus?: Bus;
  /** The NATS subject instead of vexil.events.v1 (tests: one cluster per test on a shared server). */
  busSubject?: string;
}

/** How long answered connections get to flush before the remaining ones are closed at shutdown. */
const LINGER_MS = 250;

export async function startNode(config: Config, opts: StartOptions = {}): Promise<VexilNode> {
  const log = opts.log ?? createLogger(config.logLevel);
  const evalCounts = new EvalCounts(undefined, config.insights, config.contextSample);
  // Filled in below; the actor may relay events only after the node's state exists.
  let relay: (event: ClusterEvent) => Promise<void> | void = () => {};
  let rememberKey: (hash: string, key: ManagementKey) => void = () => {};
  // The front's replica follows the actor's, which reads the database for both (registry.ts): it
  // exists before the actor starts, so that the actor's warm load fills it too.
  let started: ManagementActor | undefined;
  const upstream = (): ManagementActor => {
    if (started === undefined) throw new VexilError('UNAVAILABLE', 'The management actor is starting; try again', { retryAfter: 1 });
    return started;
  };
  const snapshots = SnapshotRegistry.following({ load: async (orgId) => upstream().load(orgId), hint: async (change) => upstream().hint(change) });
  // The management actor opens, migrates and bootstraps the database; the front reads through it.
  const { actor, generatedAdminKey } = await ManagementActor.start({
    config,
    inMemory: opts.inMemory ?? false,
    priority: config.managementPriority,
    nice: config.managementNice,
    evalCounts,
    log,
    onEvent: (event) => relay(event),
    onUpdate: (update) => snapshots.accept(update),
    onKey: (hash, key) => rememberKey(hash, key),
  });
  started = actor;
  const db = actor.reads;
  try {
    const bus =
      opts.bus ??
      (config.natsUrl !== null
        ? new NatsBus({
            url: config.natsUrl,
            nodeId: config.nodeId,
            log: log.child({ component: 'bus' }),
            credsFile: config.natsCreds,
            secret: config.clusterSecret,
            subject: opts.busSubject,
          })
        : new LocalBus());
    const admission = admissionState(config, actor.asks);
    // Evaluation counts per flag from every thread of this node, to the management actor (docs/insights.md).
    const insights = new InsightsForwarder(evalCounts, (rows, samples) => actor.insights(rows, samples), insightsPostMs(config.insightsFlushMs));
    const rt: FrontRuntime = {
      config,
      snapshots,
      ...admission,
      bus,
      log,
      pool: null,
      evalCounts,
      now: Date.now,
    };
    // A management write's events go to the other nodes at once. Its change reaches this node's
    // snapshot as the actor's `update` (the delta its replica read), which comes before the answer.
    relay = (event) => {
      bus.publish(event);
      if (event.kind === 'key') rt.keys.invalidateKey(event.keyId);
    };
    // A key this node's actor created or rotated is known here before its answer (no ask on first use).
    rememberKey = (hash, key) => rt.keys.remember(hash, key);
    // The node's one copy of the flag data in shared memory, for every thread but this one (the
    // evaluation workers, the other front threads), when there are any.
    const publisher =
      config.evalWorkers > 0 || config.frontThreads > 1 ? new SnapshotPublisher(snapshots, { channel: `vexil-snapshots-${config.nodeId}` }) : null;
    if (config.evalWorkers > 0) {
      rt.pool = new EvalPool({
        publisher: publisher!,
        threads: config.evalWorkers,
        channel: `vexil-snapshots-${config.nodeId}`,
        graphqlMaxDepth: config.graphqlMaxDepth,
        graphqlMaxEvaluations: config.graphqlMaxEvaluations,
        maxAnswerBytes: config.maxAnswerBytes,
        queueMax: config.evalQueueMax,
        handoff: config.evalHandoff,
        flagCache: config.workerFlagCache,
        evalCounts: rt.evalCounts.buffer,
        insights: config.insights,
        contextSample: config.contextSample,
        onInsights: (rows, samples) => insights.add(rows, samples),
      }, log.child({ component: 'pool' }));
    }
    // Warm every organization's snapshot so the first evaluation does no database work (the
    // actor's warm load sent those it held; an organization created since is read now).
    const warmStart = performance.now();
    for (const orgId of (await actor.asks.orgVersions()).keys()) await snapshots.get(orgId);
    log.info('snapshots loaded', { orgs: snapshots.loadedOrgIds().length, ms: Math.round(performance.now() - warmStart) });
    // Listen before subscribing, then look once: a change committed before the subscription (while
    // the actor loaded, say) is found by that poll, any later one arrives as a hint.
    const sync = new ClusterSync(() => actor.asks.orgVersions(), snapshots, rt.keys, bus, log.child({ component: 'sync' }), { pollMs: config.syncPollMs, safetyPollMs: config.syncSafetyPollMs });
    if (bus instanceof NatsBus) await bus.start();
    await sync.pollNow();
    // Peers are confirmed by the database's cluster_nodes (membership.ts); a single node has none.
    const peers: PeerRegistry | null =
      bus instanceof NatsBus
        ? { register: () => actor.asks.registerNode(config.nodeId), live: () => actor.asks.liveNodes(), leave: () => actor.asks.removeNode(config.nodeId) }
        : null;
    const membership = new Membership(
      bus,
      config.nodeId,
      (n) => {
        rt.limiter.setNodes(n);
        log.info('cluster size changed', { nodes: n });
      },
      peers,
    );

    // Snapshot age: since the last successful version poll or applied change, whichever is later.
    let snapshotChangedAt = Date.now();
    snapshots.onChange((_orgId, snap, touches) => {
      snapshotChangedAt = Date.now();
      // The flag list's index for the pages this thread answers itself (features/flags/front-page.ts):
      // started whenever an organization arrives whole, in slices, so that the first page asked
      // for finds it built; one-flag changes update it in place.
      if (snap !== null && touches === 'all') readyFlagIndex(snap);
    });
    // The organizations of the warm load, loaded before this listener.
    for (const orgId of snapshots.loadedOrgIds()) {
      const snap = snapshots.peek(orgId);
      if (snap !== undefined) readyFlagIndex(snap);
    }
    const busState = (): 'up' | 'down' | 'local' => (bus instanceof NatsBus ? (bus.connected ? 'up' : 'down') : 'local');
    const metrics = config.metrics
      ? new NodeMetrics(
          {
            queueDepth: () => rt.pool?.queued ?? 0,
            clusterNodes: () => membership.nodes,
            busConnected: () => busState() !== 'down',
            snapshotAgeSeconds: () => (Date.now() - Math.max(snapshotChangedAt, sync.lastPollAt)) / 1000,
            busRejected: () => (bus instanceof NatsBus ? bus.rejected : new Map()),
            snapshotReads: () => actor.snapshotReads,
            flagStatuses: () => actor.flagStatuses,
            webhooks: () => actor.asks.webhookStats(),
          },
          rt.evalCounts,
        )
      : null;
    const exchanges = new ExchangeContext(log, metrics, config.maxAnswerBytes);
    // Front threads serving (1 until the others have started: docs/threads.md).
    let threads: FrontThreads | null = null;
    let frontThreads = 1;
    const health = opsRoutes({
      nodeId: config.nodeId,
      metrics,
      metricsToken: config.metricsToken,
      authFailures: rt.authFailures,
      dbHealth: new DbHealth(() => actor.asks.ping()),
      draining: () => exchanges.draining,
      clusterNodes: () => membership.nodes,
      bus: busState,
      httpFront: () => front.info.kind,
      frontThreads: () => frontThreads,
    });
    const routes: Route[] = [
      ...health,
      ...evaluationRoutes(rt),
      ...managementFrontRoutes(rt, actor),
      ...ofrepRoutes(rt),
      ...feedRoutes(rt),
      ...metricsRoutes(rt, (rows) => insights.add(rows)),
      ...uiRoutes(),
      ...(opts.routes?.(rt) ?? []),
    ];
    routes.push(openApiRoute(() => routes, VERSION));
    const front = createFront(
      exchanges,
      routes,
      { requireNative: config.requireNativeHttp, forceFallback: config.httpFront === 'node', timeouts: config.clientTimeouts },
      log.child({ component: 'http' }),
    );
    const plan = planThreads(config.frontThreads, config.frontAccept, { kind: front.info.kind, acceptor: front.acceptor !== null });
    if (plan.note !== null) log.warn(`front threads: ${plan.note}`);
    const port = plan.mode === 'reuseport' ? await listenShared((h, p) => front.listen(h, p), config.host, config.port) : await front.listen(config.host, config.port);
    // The other front threads listen on the same port (SO_REUSEPORT) or are handed connections by
    // this thread's app (acceptor): docs/threads.md.
    threads =
      plan.extra === 0
        ? null
        : await FrontThreads.start({
            config,
            threads: plan.extra,
            host: config.host,
            port: plan.mode === 'reuseport' ? port : null,
            acceptor: plan.mode === 'acceptor' ? front.acceptor : null,
            routes,
            exchanges,
            keys: rt.keys,
            publisher: publisher!,
            evalCounts: rt.evalCounts.buffer,
            limits: admission.limiter.memory,
            log: log.child({ component: 'front-threads' }),
            onInsights: (rows, samples) => insights.add(rows, samples),
          });
    if (threads !== null) {
      const started = threads;
      metrics?.addThreads(() => started.stats());
      frontThreads = plan.serving;
    }
    const url = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
    log.info('listening', { url, database: db.kind, http: front.info.kind, frontThreads: plan.serving, accept: plan.mode });

    let closing: Promise<void> | null = null;
    return {
      port,
      url,
      runtime: rt,
      db,
      front: front.info,
      routes,
      generatedAdminKey,
      /**
       * Graceful shutdown (README, "Health checks"): /readyz answers 503 at once, no new
       * connections are accepted, open event streams end, in-flight requests get up to
       * VEXIL_SHUTDOWN_GRACE_MS to finish (answered with `Connection: close`), then connections,
       * pool, bus and database close.
       */
      close() {
        closing ??= (async () => {
          exchanges.draining = true;
          log.info('shutting down', { inFlight: exchanges.inFlight, streams: exchanges.openStreams, graceMs: config.shutdownGraceMs });
          front.stopAccepting();
          // The other threads first: what they relay is served here until they have drained.
          await threads?.close(config.shutdownGraceMs);
          exchanges.endStreams();
          const started = Date.now();
          const idle = await exchanges.idle(config.shutdownGraceMs);
          if (!idle) log.warn('shutdown grace time over; closing the remaining connections', { inFlight: exchanges.inFlight });
          // Answers written with `Connection: close` are still leaving their sockets, which the
          // front closes gracefully by itself; a forced close now could reset them before the
          // client reads them. Give them a moment within the grace time.
          else await new Promise((r) => setTimeout(r, Math.max(0, Math.min(LINGER_MS, config.shutdownGraceMs - (Date.now() - started)))));
          front.closeConnections();
          sync.stop();
          await membership.stop();
          await rt.pool?.close();
          publisher?.close();
          await rt.bus.close();
          // Every thread's last counts, then the actor writes them before it closes its database.
          insights.close();
          await actor.close();
          metrics?.close();
        })();
        return closing;
      },
    };
  } catch (err) {
    await actor.close().catch(() => {});
    throw err;
  }
}
