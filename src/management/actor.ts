/**
 * The management actor, in a process of its own (workers/management.ts starts it; the protocol is
 * mailbox.ts; the channel transport.ts). It owns the node's database: it opens, migrates and
 * bootstraps it, runs every management request the front forwards (handlers.ts: one handler per
 * route of the admission table, boundary.ts, against its own replica of the flag data),
 * serialises each answer, and answers the front's own queries. It runs at a lower priority than
 * the front (priority.ts), so on a shared core evaluation goes first.
 *
 * Its replica is the node's one reader of snapshot data: every update it applies (its own writes,
 * the front's hints from the bus and the version poll, whole loads) goes to the front's replica
 * as read (`update`), so the node reads each change from the database once. A request waits until
 * the replica holds at least the version the front held when it admitted it, so a management read
 * never shows older data than evaluation on the same node.
 *
 * A restarted actor takes requests before its database is open: each waits for the start (up to
 * START_WAIT_MS), then answers 503 with Retry-After if the actor is still not up.
 */
import type { Bus, ClusterEvent } from '../cluster/bus.js';
import { VexilError } from '../domain/errors.js';
import { ScheduleRunner } from '../features/schedules/runner.js';
import { LifecycleTracker, setTracker, tracker } from '../features/insights/tracker.js';
import { WebhookDispatcher } from '../features/webhooks/dispatcher.js';
import { bootstrap } from '../features/organizations/bootstrap.js';
import { orgVersions } from '../features/organizations/store.js';
import { snapshotSource } from '../features/snapshot-source.js';
import { encodeAnswer } from '../http/content-encoding.js';
import { DEFAULT_MAX_ANSWER_BYTES, serialiseReply } from '../http/exchange.js';
import type { Incoming, Reply } from '../http/handler.js';
import { asVexilError, errorReply } from '../http/problem.js';
import { EvalCounts } from '../ops/eval-counts.js';
import { ContextSampler } from '../samples/sampler.js';
import { SampleStore } from '../samples/store.js';
import type { Config } from '../config.js';
import type { ActorRuntime } from '../runtime.js';
import { flagIndexOf } from '../snapshots/flag-index.js';
import { SnapshotRegistry } from '../snapshots/registry.js';
import { isConnectionError, type Database } from '../storage/database.js';
import { migrate } from '../storage/migrate.js';
import { openPGlite } from '../storage/pglite.js';
import { openPostgres } from '../storage/postgres.js';
import { outsideWrite } from '../storage/poll-gate.js';
import type { ReasonCode } from '../domain/types.js';
import type { Logger } from '../util/log.js';
import { BYPASS_HEADER, isIdempotentWrite, type ManagementHandler } from './boundary.js';
import { withBypass } from '../features/policies/bypass.js';
import { InsightsFlusher } from '../insights/flush.js';
import type { InsightsRows } from '../insights/counter.js';
import { managementHandlers } from './handlers.js';
import { withIdempotency } from './idempotency.js';
import { PIECE_BYTES, PIECE_SLOTS, PIECE_WINDOW, PIPE_MIN_BYTES, type ErrorData, type FromActor, type InitMessage, type ToActor, type AskName, type FrontAsks } from './mailbox.js';
import { frontAsks } from './front-asks.js';
import { pieceWriter, type ActorPort } from './transport.js';
/** How long a request waits for the replica to reach the front's version before it reads what changed itself. */
const CATCH_UP_MS = 2000;
/** How long a request waits for a (re)starting actor to open its database before it answers 503. */
const START_WAIT_MS = 2000;
/** A restarted actor that cannot open its database tries again this often. */
const INIT_RETRY_MS = 1000;

/** A logger whose lines the front writes (one log stream per node, its redaction included). */
class RelayLogger implements Logger {
  constructor(
    private readonly post: (m: FromActor) => void,
    readonly debugEnabled: boolean,
    private readonly bindings: Record<string, unknown> = {},
  ) {}
  private line(level: 'debug' | 'info' | 'warn' | 'error', msg: string, fields?: Record<string, unknown>): void {
    if (level === 'debug' && !this.debugEnabled) return;
    const all = { ...this.bindings, ...fields };
    // Errors do not survive structured cloning whole: send what a log line shows of them.
    for (const [k, v] of Object.entries(all)) if (v instanceof Error) all[k] = { type: v.name, message: v.message, stack: v.stack };
    this.post({ t: 'log', level, msg, fields: all });
  }
  debug(msg: string, fields?: Record<string, unknown>): void {
    this.line('debug', msg, fields);
  }
  info(msg: string, fields?: Record<string, unknown>): void {
    this.line('info', msg, fields);
  }
  warn(msg: string, fields?: Record<string, unknown>): void {
    this.line('warn', msg, fields);
  }
  error(msg: string, fields?: Record<string, unknown>): void {
    this.line('error', msg, fields);
  }
  child(bindings: Record<string, unknown>): Logger {
    return new RelayLogger(this.post, this.debugEnabled, { ...this.bindings, ...bindings });
  }
}

/** The bus as the actor sees it: what its writes publish goes to the front, which applies and sends it. */
class RelayBus implements Bus {
  constructor(private readonly post: (m: FromActor) => void) {}
  publish(event: ClusterEvent): void {
    this.post({ t: 'event', event });
  }
  onEvent(): void {}
  async close(): Promise<void> {}
}

const errorData = (err: unknown): ErrorData => {
  const ve = asVexilError(err);
  return { code: ve.code, message: ve.code === 'INTERNAL' ? 'Unexpected server error' : ve.message, ...(ve.retryAfter === undefined ? {} : { retryAfter: ve.retryAfter }) };
};

async function openDatabase(init: InitMessage): Promise<Database> {
  if (init.config.databaseUrl !== null) return openPostgres(init.config.databaseUrl, { statementTimeoutMs: init.config.dbStatementTimeoutMs });
  return openPGlite(init.inMemory ? null : init.config.dataDir);
}

/** Counts posted before the database is open (a restarted actor), up to a bound. */
class PendingInsights {
  readonly rows: InsightsRows[] = [];
  private held = 0;
  add(rows: InsightsRows): void {
    if (this.held + rows.length > 8_000_000) return;
    this.held += rows.length;
    this.rows.push(rows);
  }
}

/**
 * The node's sampled contexts (samples/store.ts) when VEXIL_CONTEXT_SAMPLE is set: the actor's own
 * evaluations (a management GraphQL document) are sampled too, and drained at each read.
 */
function contextSamples(config: Config, counts: EvalCounts): SampleStore | null {
  if (config.contextSample === 0) return null;
  counts.samples = new ContextSampler(config.contextSample);
  return new SampleStore(config.contextSample, config.contextSampleMaxBytes, counts.samples);
}

export class ManagementActorMain {
  private rt!: ActorRuntime;
  private routes = new Map<string, ManagementHandler>();
  /** Piped replies whose pieces are not all sent: the body, the bytes sent so far, pieces it may still send ahead. */
  private readonly outgoing = new Map<number, { body: Uint8Array; sent: number; credit: number }>();
  /** Writes a piece into a slot (transport.ts); the slots that are free, and replies waiting for one. */
  private putPiece: (slot: number, bytes: Uint8Array) => void = () => {
    throw new Error('no piece slots before init');
  };
  private readonly freeSlots: number[] = Array.from({ length: PIECE_SLOTS }, (_, i) => i);
  private readonly waitingForSlot = new Set<number>();
  /** Requests waiting for the replica to reach a version, by organization. */
  private readonly waiters = new Map<string, { version: number; wake(): void }[]>();
  /** Resolves once `rt` is set (the database open, migrated, the replica warm). */
  private readonly started: Promise<void>;
  private markStarted!: () => void;
  private closing = false;
  /** The front's asks over this actor's database (front-asks.ts), made on the first ask. */
  private asks: FrontAsks | null = null;
  /** Applies due schedules (features/schedules/runner.ts); set once started. */
  private runner: ScheduleRunner | null = null;
  /** Sends webhook messages (features/webhooks/dispatcher.ts); set once started. */
  private webhooks: WebhookDispatcher | null = null;
  /** Counts its own evaluations (a management GraphQL document may evaluate), sent to the front with each reply. */
  private readonly counts = new EvalCounts();
  /** Writes the node's evaluation counts (insights/flush.ts); its database is set at the start. */
  private insights: { add(rows: InsightsRows): void; stop?(): Promise<void> } = new PendingInsights();

  constructor(private readonly port: ActorPort) {
    this.started = new Promise((r) => (this.markStarted = r));
    this.guardDriverFaults();
    port.onMessage((m) => this.receive(m));
    port.onLost(() => void this.close());
  }

  /**
   * A cut database connection must not end this process (docs/storage.md): a driver error about a
   * lost connection that reaches no caller (a rejection nobody awaits, a socket error after its
   * connection was dropped) is logged and dropped; the driver reconnects on the next query. Any
   * other uncaught error still ends the process, and the front starts a new actor.
   */
  private guardDriverFaults(): void {
    const report = (kind: string, err: unknown) =>
      this.post({ t: 'log', level: 'warn', msg: `database connection lost (${kind}); ignored`, fields: { code: (err as { code?: string }).code, message: (err as Error).message } });
    process.on('unhandledRejection', (reason) => {
      if (isConnectionError(reason)) return report('unhandled rejection', reason);
      throw reason;
    });
    process.on('uncaughtException', (err) => {
      if (isConnectionError(err)) return report('uncaught exception', err);
      this.post({ t: 'log', level: 'error', msg: 'management actor failed', fields: { err: { type: err.name, message: err.message, stack: err.stack } } });
      process.exit(1);
    });
  }

  /** False when the actor did not start within `START_WAIT_MS` (its database is unreachable). */
  private async whenStarted(): Promise<boolean> {
    if (this.rt !== undefined) return true;
    let timer: NodeJS.Timeout | undefined;
    const started = await Promise.race([
      this.started.then(() => true),
      new Promise<boolean>((r) => (timer = setTimeout(() => r(false), START_WAIT_MS))),
    ]);
    clearTimeout(timer);
    return started;
  }

  private post = (m: FromActor): void => {
    this.port.post(m);
  };

  private receive(m: ToActor): void {
    switch (m.t) {
      case 'init':
        void this.init(m);
        return;
      case 'request':
        void this.request(m.id, m.route, m);
        return;
      case 'ask':
        void this.ask(m.id, m.name, m.args);
        return;
      case 'query':
        void this.query(m.id, m.text, m.params, m.exec);
        return;
      case 'change':
        void this.sync(m.id, (snapshots) => snapshots.apply(m.change), false);
        return;
      case 'load':
        void this.sync(m.id, (snapshots) => snapshots.reload(m.orgId), true);
        return;
      case 'more': {
        const out = this.outgoing.get(m.id);
        if (out !== undefined) out.credit += 1;
        this.freeSlots.push(m.slot);
        this.pump(m.id);
        this.pumpWaiting();
        return;
      }
      case 'cancel':
        this.outgoing.delete(m.id);
        this.waitingForSlot.delete(m.id);
        this.freeSlots.push(...m.slots);
        this.pumpWaiting();
        return;
      case 'insights':
        // Before the start (a restarted actor) they wait in the flusher made below.
        this.insights.add(m.rows);
        // Samples arriving before the start are dropped: they are only samples.
        if (m.samples !== undefined) this.rt?.samples?.add(m.samples);
        return;
      case 'close':
        void this.close();
        return;
    }
  }

  private async init(m: InitMessage): Promise<void> {
    const config = m.config;
    this.putPiece = pieceWriter(m.piecesFd);
    const log = new RelayLogger(this.post, config.logLevel === 'debug');
    let db: Database;
    try {
      db = await openDatabase(m);
    } catch (err) {
      this.initFailed(m, err);
      return;
    }
    try {
      const applied = await migrate(db);
      if (applied.length > 0) log.info('migrations applied', { versions: applied, database: db.kind });
      const boot = await bootstrap(db, config.bootstrapAdminKey);
      if (boot.created) log.info('bootstrapped organization "default"');
      const snapshots = new SnapshotRegistry(snapshotSource(db, (kind) => this.post({ t: 'read', kind })));
      snapshots.onChange((orgId, snap, touches) => {
        // The flag list's index (snapshots/flag-index.ts) is built here, off the first request's
        // path, whenever an organization is loaded whole; one-flag changes update it in place.
        if (snap !== null && touches === 'all') flagIndexOf(snap);
        this.wake(orgId, snap?.org.version ?? Number.MAX_SAFE_INTEGER);
        // Any change may be a schedule created or cancelled, here or on another node.
        this.runner?.changed();
      });
      // The front's replica applies what this one read (its warm load below included), in order.
      snapshots.onUpdate((update) => this.post({ t: 'update', update }));
      this.rt = {
        config,
        db,
        snapshots,
        bus: new RelayBus(this.post),
        // A new key goes to the front's key cache before its answer: its first evaluation asks nothing.
        keyIssued: (hash, key) => this.post({ t: 'key', hash, key }),
        log,
        pool: null,
        evalCounts: this.counts,
        now: Date.now,
        samples: contextSamples(config, this.counts),
      };
      this.routes = managementHandlers(this.rt);
      // Flag statuses (features/insights/tracker.ts): known before the first request.
      const lifecycle = new LifecycleTracker(this.rt, (counts) => this.post({ t: 'statuses', counts }));
      setTracker(lifecycle);
      await lifecycle.start();
      // The replica is warm before the first request, like the front's.
      for (const orgId of (await orgVersions(db)).keys()) await snapshots.get(orgId);
      this.markStarted();
      this.post({ t: 'ready', generatedAdminKey: boot.printKey, kind: db.kind });
      // Scheduled changes run here, off the front thread (docs/cluster.md, "Scheduled changes").
      this.runner = new ScheduleRunner(this.rt);
      this.runner.start();
      // Evaluation counts (docs/insights.md): written every VEXIL_INSIGHTS_FLUSH_MS, one statement each time.
      const flusher = new InsightsFlusher(db, log.child({ component: 'insights' }), { flushMs: config.insightsFlushMs, maxPending: config.insightsMaxPending, own: config.insights ? this.counts.insights : null, onWritten: () => lifecycle.usageFlushed() });
      const early = this.insights;
      this.insights = flusher;
      if (early instanceof PendingInsights) for (const rows of early.rows) flusher.add(rows);
      if (!this.closing) flusher.start();
      // Webhook deliveries run here too, off the front thread (docs/webhooks.md).
      this.webhooks = new WebhookDispatcher(this.rt);
      this.webhooks.start();
    } catch (err) {
      await db.close().catch(() => {});
      this.initFailed(m, err);
    }
  }

  /**
   * The front stops a first start that failed (the node does not start); a restarted actor (its
   * database lost meanwhile) keeps trying, answering 503 until it is up.
   */
  private initFailed(m: InitMessage, err: unknown): void {
    this.post({ t: 'failed', message: (err as Error).message });
    if (!this.closing) setTimeout(() => void (this.closing ? undefined : this.init(m)), INIT_RETRY_MS).unref();
  }

  private wake(orgId: string, version: number): void {
    const list = this.waiters.get(orgId);
    if (list === undefined) return;
    const keep = list.filter((w) => {
      if (w.version > version) return true;
      w.wake();
      return false;
    });
    if (keep.length === 0) this.waiters.delete(orgId);
    else this.waiters.set(orgId, keep);
  }

  /** Resolves once the replica holds `orgId` at `version` or later (after CATCH_UP_MS it reads what changed itself). */
  private async caughtUp(orgId: string, version: number): Promise<void> {
    const snap = await this.rt.snapshots.get(orgId);
    if (snap === null || snap.org.version >= version) return;
    const reached = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => {
        this.waiters.set(orgId, (this.waiters.get(orgId) ?? []).filter((w) => w !== waiter));
        resolve(false);
      }, CATCH_UP_MS);
      const waiter = { version, wake: () => (clearTimeout(timer), resolve(true)) };
      this.waiters.set(orgId, [...(this.waiters.get(orgId) ?? []), waiter]);
    });
    if (!reached) await this.rt.snapshots.apply({ orgId, version, touches: 'all' });
  }

  private async request(id: number, name: string, m: ToActor & { t: 'request' }): Promise<void> {
    const f = m.fields;
    const inc: Incoming = {
      method: f.method,
      path: f.path,
      query: f.query,
      params: f.params,
      managementKey: '',
      operatorToken: '',
      contentType: f.contentType,
      body: Buffer.from(f.body.buffer, f.body.byteOffset, f.body.byteLength),
      bodyTooDeep: null,
      headers: f.headers,
      remoteAddress: () => f.remoteAddress,
      admission: m.admission,
    };
    // A (re)started actor has no handlers before its start: the request waits for it, or is 503.
    if (!(await this.whenStarted())) {
      this.answer(id, errorReply(new VexilError('UNAVAILABLE', 'The database is unavailable; try again later', { retryAfter: 1 })), null, '');
      return;
    }
    const route = this.routes.get(name);
    let reply: Reply;
    try {
      if (route === undefined) throw new VexilError('INTERNAL', `No management route ${name}`);
      if (m.admission.kind === 'key') await this.caughtUp(m.admission.principal.orgId, m.admission.version);
      const handler = route.handler;
      // A write may carry a review bypass (features/policies/bypass.ts): 400 when malformed.
      reply = isIdempotentWrite(route) ? await withBypass(inc.headers[BYPASS_HEADER], () => withIdempotency(this.rt, inc, m.admission, async () => handler(inc))) : await handler(inc);
    } catch (err) {
      const ve = asVexilError(err);
      if (ve.code === 'INTERNAL') this.rt.log.error('unexpected error', { route: route?.pattern, err: (ve.cause ?? ve) as Error });
      reply = route?.onError ? route.onError(ve) : errorReply(ve);
    }
    this.answer(id, reply, route ?? null, f.headers['accept-encoding'] ?? '');
  }

  /**
   * Serialises the answer here, off the front thread, compresses a large one in a coding the
   * client accepts (content-encoding.ts), and moves its bytes to the front.
   */
  private answer(id: number, reply: Reply, route: ManagementHandler | null, acceptEncoding: string): void {
    this.sendCounts();
    const out = serialiseReply(reply, this.rt?.config.maxAnswerBytes ?? DEFAULT_MAX_ANSWER_BYTES, route);
    const status = out.reply.status;
    const { headers, body: raw } = out.body === null ? { headers: out.reply.headers, body: null } : encodeAnswer(out.reply.headers, out.body, acceptEncoding);
    if (raw !== null && typeof raw !== 'string' && raw.byteLength > PIPE_MIN_BYTES) {
      // A large body crosses in pieces, through the piece slots, as its client takes them.
      this.post({ t: 'reply', id, status, headers, body: null, piped: raw.byteLength });
      this.outgoing.set(id, { body: raw, sent: 0, credit: PIECE_WINDOW });
      this.pump(id);
      return;
    }
    // The IPC channel's serialisation copies a byte view's own bytes only, whatever memory it is part of.
    const body = raw === null ? null : typeof raw === 'string' ? new TextEncoder().encode(raw) : raw;
    this.post({ t: 'reply', id, status, headers, body });
  }

  /** The evaluations requests ran since the last reply, to the front. */
  private sendCounts(): void {
    const counts: [ReasonCode, number][] = [];
    this.counts.drain((reason, n) => counts.push([reason, n]));
    if (counts.length > 0) this.post({ t: 'counts', counts });
  }

  /** Sends pieces of piped reply `id` while it has credit and a slot is free. */
  private pump(id: number): void {
    const out = this.outgoing.get(id);
    while (out !== undefined && out.credit > 0 && out.sent < out.body.byteLength) {
      const end = Math.min(out.sent + PIECE_BYTES, out.body.byteLength);
      const length = end - out.sent;
      const last = end === out.body.byteLength;
      const slot = this.freeSlots.pop();
      if (slot === undefined) {
        this.waitingForSlot.add(id);
        return;
      }
      this.putPiece(slot, out.body.subarray(out.sent, end));
      this.post({ t: 'piece', id, slot, length, last });
      out.sent = end;
      out.credit -= 1;
      if (last) this.outgoing.delete(id);
    }
  }

  /** Replies that waited for a slot, in turn, while slots are free. */
  private pumpWaiting(): void {
    for (const id of this.waitingForSlot) {
      if (this.freeSlots.length === 0) return;
      this.waitingForSlot.delete(id);
      this.pump(id);
    }
  }

  /**
   * A hint or a load from the front: the replica applies it (reading once), its updates go to the
   * front, then `synced`. Before the start there is nothing to bring up to date (the warm load
   * after it reads the current data, and sends it); a load then waits for the start.
   */
  private async sync(id: number, work: (snapshots: SnapshotRegistry) => Promise<void>, needsStart: boolean): Promise<void> {
    if (this.rt === undefined && !needsStart) {
      this.post({ t: 'synced', id });
      return;
    }
    if (!(await this.whenStarted())) {
      this.post({ t: 'synced', id, error: errorData(new VexilError('UNAVAILABLE', 'The database is unavailable; try again later', { retryAfter: 1 })) });
      return;
    }
    try {
      await work(this.rt.snapshots);
      this.post({ t: 'synced', id });
    } catch (err) {
      this.rt.log.warn('snapshot reload failed', { err: err as Error });
      this.post({ t: 'synced', id, error: errorData(err) });
    }
  }

  /** One of the front's asks (mailbox.ts `FrontAsks`), answered from the database. */
  private async ask(id: number, name: AskName, args: unknown[]): Promise<void> {
    if (!(await this.whenStarted())) {
      this.post({ t: 'answer', id, error: errorData(new VexilError('UNAVAILABLE', 'The database is unavailable; try again later', { retryAfter: 1 })) });
      return;
    }
    try {
      this.asks ??= frontAsks(this.rt.db, async () => (this.webhooks === null ? { deliveries: [], pending: 0, oldestPendingSeconds: 0 } : this.webhooks.stats()));
      const answer = (this.asks[name] as (...a: unknown[]) => Promise<unknown>)(...args);
      this.post({ t: 'answer', id, value: await answer });
    } catch (err) {
      this.post({ t: 'answer', id, error: errorData(err) });
    }
  }

  /** SQL from tests and operators (VexilNode.db); the front's own code asks by name instead. */
  private async query(id: number, text: string, params: unknown[] | undefined, exec: boolean): Promise<void> {
    if (!(await this.whenStarted())) {
      this.post({ t: 'rows', id, error: errorData(new VexilError('UNAVAILABLE', 'The database is unavailable; try again later', { retryAfter: 1 })) });
      return;
    }
    try {
      if (exec) {
        await this.rt.db.exec(text);
        this.post({ t: 'rows', id, rows: [] });
      } else {
        this.post({ t: 'rows', id, rows: await this.rt.db.query(text, params) });
      }
    } catch (err) {
      this.post({ t: 'rows', id, error: errorData(err) });
    } finally {
      // It may have written what the background polls read (storage/poll-gate.ts).
      outsideWrite(this.rt.db);
    }
  }

  private async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    this.runner?.stop();
    tracker()?.stop();
    this.webhooks?.stop();
    try {
      // A graceful stop writes the last counts (the front posted its own before `close`).
      await this.insights.stop?.().catch(() => {});
      await this.rt?.db.close();
    } finally {
      process.exit(0);
    }
  }
}
