/**
 * One Vexil node: storage, migrations, bootstrap, in-memory state and the HTTP front, wired once.
 * `startNode` is what `main.ts` runs and what the tests start (several per process if they like).
 *
 * A request's path: uWS socket → http/exchange.ts (headers, body) → a feature's routes.ts
 * (auth/authenticate.ts, then the feature's service.ts) → the evaluation engine or the store.
 */
import type { Config } from './config.js';
import { KeyCache } from './auth/key-cache.js';
import { LocalBus, type Bus } from './cluster/bus.js';
import { NatsBus } from './cluster/nats-bus.js';
import { ClusterSync } from './cluster/sync.js';
import { Membership } from './cluster/membership.js';
import { bootstrap } from './features/organizations/bootstrap.js';
import { orgVersions } from './features/organizations/store.js';
import { evaluationRoutes } from './features/evaluation/routes.js';
import { flagRoutes } from './features/flags/routes.js';
import { graphqlRoutes } from './graphql/routes.js';
import { keyRoutes } from './features/keys/routes.js';
import { operatorRoutes } from './features/operator/routes.js';
import { mount, type Route } from './http/router.js';
import { assertNativeUws, uws, type us_listen_socket } from './http/uws.js';
import { RateLimiter } from './ratelimit/token-bucket.js';
import type { Runtime } from './runtime.js';
import { SnapshotRegistry } from './snapshots/registry.js';
import { EvalPool } from './pool/eval-pool.js';
import type { Database } from './storage/database.js';
import { migrate } from './storage/migrate.js';
import { openPGlite } from './storage/pglite.js';
import { openPostgres } from './storage/postgres.js';
import { createLogger, type Logger } from './util/log.js';

export interface VexilNode {
  port: number;
  url: string;
  runtime: Runtime;
  /** The generated bootstrap admin key when this start created the first organization and no key was configured. */
  generatedAdminKey: string | null;
  close(): Promise<void>;
}

export interface StartOptions {
  log?: Logger;
  /** Extra routes (tests, later features). */
  routes?: (rt: Runtime) => Route[];
  /** PGlite in memory instead of VEXIL_DATA_DIR (tests). */
  inMemory?: boolean;
  bus?: Bus;
}

export async function openDatabase(config: Config, inMemory = false): Promise<Database> {
  if (config.databaseUrl !== null) return openPostgres(config.databaseUrl);
  return openPGlite(inMemory ? null : config.dataDir);
}

export async function startNode(config: Config, opts: StartOptions = {}): Promise<VexilNode> {
  const log = opts.log ?? createLogger(config.logLevel);
  assertNativeUws(config.allowUwsFallback);

  const db = await openDatabase(config, opts.inMemory);
  try {
    const applied = await migrate(db);
    if (applied.length > 0) log.info('migrations applied', { versions: applied, database: db.kind });
    const boot = await bootstrap(db, config.bootstrapAdminKey);
    if (boot.created) log.info('bootstrapped organization "default"');

    const snapshots = new SnapshotRegistry(db);
    const bus = opts.bus ?? (config.natsUrl !== null ? new NatsBus(config.natsUrl, config.nodeId, log) : new LocalBus());
    if (bus instanceof NatsBus) await bus.start();
    const rt: Runtime = {
      config,
      db,
      snapshots,
      keys: new KeyCache(db, config.keyCacheTtlMs),
      limiter: new RateLimiter({ eval: config.rateLimitEval, mgmt: config.rateLimitMgmt }),
      bus,
      log,
      pool: null,
      now: Date.now,
    };
    if (config.evalWorkers > 0) {
      rt.pool = new EvalPool(snapshots, {
        threads: config.evalWorkers,
        channel: `vexil-snapshots-${config.nodeId}`,
        graphqlMaxDepth: config.graphqlMaxDepth,
        graphqlMaxEvaluations: config.graphqlMaxEvaluations,
      }, log);
    }
    // Warm every organization's snapshot so the first evaluation does no database work.
    const started = performance.now();
    for (const orgId of (await orgVersions(db)).keys()) await snapshots.get(orgId);
    log.info('snapshots loaded', { orgs: snapshots.loadedOrgIds().length, ms: Math.round(performance.now() - started) });
    const sync = new ClusterSync(db, snapshots, rt.keys, bus, log, { pollMs: config.syncPollMs, safetyPollMs: config.syncSafetyPollMs });
    const membership = new Membership(bus, config.nodeId, (n) => {
      rt.limiter.setNodes(n);
      log.info('cluster size changed', { nodes: n });
    });

    const app = uws.App();
    app.get('/healthz', (res) => {
      const body = JSON.stringify({ status: 'ok', node: config.nodeId, nodes: membership.nodes, bus: bus instanceof NatsBus ? (bus.connected ? 'up' : 'down') : 'local' });
      res.cork(() => res.writeHeader('content-type', 'application/json').end(body));
    });
    mount(app, log, [
      ...evaluationRoutes(rt),
      ...flagRoutes(rt),
      ...keyRoutes(rt),
      ...operatorRoutes(rt),
      ...graphqlRoutes(rt),
      ...(opts.routes?.(rt) ?? []),
    ]);
    const listenSocket = await new Promise<us_listen_socket>((resolve, reject) => {
      app.listen(config.host, config.port, (s) => (s ? resolve(s) : reject(new Error(`Cannot listen on ${config.host}:${config.port}`))));
    });
    const port = uws.us_socket_local_port(listenSocket);
    const url = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
    log.info('listening', { url, database: db.kind });

    let closed = false;
    return {
      port,
      url,
      runtime: rt,
      generatedAdminKey: boot.printKey,
      async close() {
        if (closed) return;
        closed = true;
        uws.us_listen_socket_close(listenSocket);
        sync.stop();
        membership.stop();
        await rt.pool?.close();
        await rt.bus.close();
        await db.close();
      },
    };
  } catch (err) {
    await db.close().catch(() => {});
    throw err;
  }
}
