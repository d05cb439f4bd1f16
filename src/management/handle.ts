/**
 * The front's handle on the management actor (workers/management.ts, protocol in mailbox.ts, a
 * process of its own: transport.ts): starts it, forwards admitted management requests and hands
 * back their answers as bytes, relays the cluster events their writes publish, hands the updates
 * the actor's replica applies to the front's (and the front's hints and loads to the actor), and
 * serves the front's own database reads (key lookups, version polls) as `reads`, whose queries
 * travel through the mailbox. The front never runs a database driver itself, and writes nothing.
 *
 * If the actor dies, requests in flight answer 503 with Retry-After and a new one is started on
 * the same settings (an in-memory PGlite database does not survive that: tests only); requests
 * that arrive before it is up wait for it (actor.ts), then answer 503 with Retry-After.
 */
import type { Config } from '../config.js';
import type { ManagementKey } from '../domain/types.js';
import type { ClusterEvent } from '../cluster/bus.js';
import { VexilError, type ErrorCode } from '../domain/errors.js';
import type { BodySource, Incoming, Reply } from '../http/handler.js';
import type { Change, OrgUpdate, SnapshotReadKind } from '../snapshots/registry.js';
import type { Queryable } from '../storage/database.js';
import type { EvalCounts } from '../ops/eval-counts.js';
import type { InsightsRows } from '../insights/counter.js';
import type { SampleRows } from '../samples/sampler.js';
import type { Logger } from '../util/log.js';
import { routeId, type Admission, type ErrorData, type FromActor, type InitMessage, type RequestFields, type ToActor, type AskName, type FrontAsks } from './mailbox.js';
import { ActorPriority, type ActorPriorityMode } from './priority.js';
import { spawnActor, type ActorLink } from './transport.js';

export interface ManagementOptions {
  config: Config;
  inMemory: boolean;
  /** An actor process's scheduling once ready (priority.ts). */
  priority: ActorPriorityMode;
  /** The nice value of every thread of an actor's process (transport.ts). */
  nice: number;
  evalCounts: EvalCounts;
  log: Logger;
  /**
   * A cluster event a management write published: the front applies it to its own state (its
   * snapshot, its key cache) and tells the other nodes. A returned promise is awaited before the
   * answer of the request that published it is written (read-your-writes).
   */
  onEvent(event: ClusterEvent): Promise<void> | void;
  /**
   * What the actor's replica applied, with its data (registry.ts `OrgUpdate`): the front's replica
   * applies it, synchronously and in order (before the reply of the request whose write it is).
   */
  onUpdate(update: OrgUpdate): void;
  /** A key the actor created or rotated, with the hash of its value: the front's key cache takes it (before the reply). */
  onKey(hash: string, key: ManagementKey): void;
}

/** The front's reads, run by the actor. */
export interface FrontReads extends Queryable {
  readonly kind: 'pglite' | 'postgres';
}

interface Pending {
  resolve(value: unknown): void;
  reject(err: unknown): void;
}

const toError = (e: ErrorData): VexilError =>
  new VexilError(e.code as ErrorCode, e.message, e.retryAfter === undefined ? {} : { retryAfter: e.retryAfter });

export class ManagementActor {
  private link!: ActorLink;
  /** The scheduling of the current actor's process (null: not ready yet). */
  private priority: ActorPriority | null = null;
  private readonly pending = new Map<number, Pending>();
  /** Piped replies whose pieces are still arriving (in the current actor's piece slots). */
  private readonly piped = new Map<number, PipedBody>();
  /** Front-side work that relayed events started (snapshot applies), awaited before each answer. */
  private readonly applying = new Set<Promise<void>>();
  private nextId = 1;
  private closing = false;
  /** Set once the first actor is ready: only then is an actor that dies replaced. */
  private started = false;
  private alive = false;
  private ready!: Promise<{ generatedAdminKey: string | null; kind: 'pglite' | 'postgres' }>;
  private kind: 'pglite' | 'postgres' = 'pglite';
  private readonly log: Logger;
  /** Statements the actor ran to read snapshot data, by kind, since this node started (vexil_snapshot_reads_total). */
  /** Flags by lifecycle status per organization, as the actor last counted them (`vexil_flags`). */
  flagStatuses: readonly { orgName: string; counts: Record<string, number> }[] = [];
  readonly snapshotReads = new Map<SnapshotReadKind, number>([
    ['changes', 0],
    ['organization', 0],
  ]);

  private constructor(private readonly opts: ManagementOptions) {
    this.log = opts.log.child({ component: 'management' });
  }

  /** Starts the actor: it opens, migrates and bootstraps the database before this resolves. */
  static async start(opts: ManagementOptions): Promise<{ actor: ManagementActor; generatedAdminKey: string | null }> {
    const actor = new ManagementActor(opts);
    actor.spawn();
    try {
      const { generatedAdminKey, kind } = await actor.ready;
      actor.kind = kind;
      actor.started = true;
      return { actor, generatedAdminKey };
    } catch (err) {
      await actor.close();
      throw err;
    }
  }

  private spawn(): void {
    const link = spawnActor(this.opts.nice);
    this.link = link;
    this.alive = true;
    this.ready = new Promise((resolve, reject) => {
      const onReady = (m: FromActor) => {
        if (m.t === 'ready') resolve({ generatedAdminKey: m.generatedAdminKey, kind: m.kind });
        else if (m.t === 'failed') reject(new Error(m.message));
        else return;
        link.offMessage(onReady);
      };
      link.onMessage(onReady);
      link.onExit((code) => reject(new Error(`The management actor exited during start (code ${code})`)));
    });
    this.ready.catch(() => {});
    link.onMessage((m) => this.receive(m));
    link.onError((err) => this.log.error('management actor failed', { err }));
    link.onExit((code) => this.exited(link, code));
    const init: InitMessage = {
      t: 'init',
      config: this.opts.config,
      inMemory: this.opts.inMemory,
      piecesFd: link.piecesFd,
    };
    link.post(init);
  }

  /** A ready actor in a process of its own yields the core (priority.ts). */
  private prioritise(link: ActorLink): void {
    if (link.pid === null || this.closing) return;
    this.priority?.stop();
    this.priority = new ActorPriority(link.pid, this.opts.priority, () => this.pending.size > 0 || this.piped.size > 0, this.log);
    void this.priority.start();
  }

  private exited(link: ActorLink, code: number | null): void {
    if (link !== this.link) return;
    this.priority?.stop();
    this.priority = null;
    this.alive = false;
    const lost = [...this.pending.values()];
    this.pending.clear();
    for (const p of lost) p.reject(new VexilError('UNAVAILABLE', 'The management actor stopped; try again', { retryAfter: 1 }));
    for (const body of this.piped.values()) body.fail();
    this.piped.clear();
    if (this.closing || !this.started) return;
    this.log.error('management actor exited; starting a new one', { code });
    this.spawn();
  }

  private receive(m: FromActor): void {
    switch (m.t) {
      case 'reply': {
        const p = this.pending.get(m.id);
        if (p === undefined) return;
        this.pending.delete(m.id);
        const reply: Reply = { status: m.status, headers: m.headers };
        if (m.body !== null) reply.raw = Buffer.from(m.body.buffer, m.body.byteOffset, m.body.byteLength);
        else if (m.piped !== undefined) {
          const id = m.id;
          const body = new PipedBody(m.piped, {
            more: (slot) => this.post({ t: 'more', id, slot }),
            cancel: (slots) => this.post({ t: 'cancel', id, slots }),
            forget: () => this.piped.delete(id),
          });
          this.piped.set(m.id, body);
          reply.piped = body;
        }
        // Read-your-writes: the events this request's write published are applied here first.
        if (this.applying.size === 0) p.resolve(reply);
        else void Promise.allSettled([...this.applying]).then(() => p.resolve(reply));
        return;
      }
      case 'ready':
        // Also a restarted actor that opened its database only on a later try.
        this.prioritise(this.link);
        return;
      case 'piece': {
        const body = this.piped.get(m.id);
        // The link the piece came through: its slots, whatever actor runs when the piece is read.
        const link = this.link;
        if (body === undefined) this.post({ t: 'cancel', id: m.id, slots: [m.slot] });
        else body.arrived(m.slot, () => link.piece(m.slot, m.length), m.last);
        return;
      }
      case 'counts':
        for (const [reason, n] of m.counts) this.opts.evalCounts.add(reason, n);
        return;
      case 'update':
        try {
          this.opts.onUpdate(m.update);
        } catch (err) {
          this.log.warn('applying a snapshot update failed', { orgId: m.update.orgId, err: err as Error });
        }
        return;
      case 'key':
        this.opts.onKey(m.hash, m.key);
        return;
      case 'read':
        this.snapshotReads.set(m.kind, (this.snapshotReads.get(m.kind) ?? 0) + 1);
        return;
      case 'statuses':
        this.flagStatuses = m.counts;
        return;
      case 'synced':
        this.settle(m.id, m.error, undefined);
        return;
      case 'rows':
        this.settle(m.id, m.error, m.rows);
        return;
      case 'answer':
        this.settle(m.id, m.error, m.value);
        return;
      case 'event': {
        let work: Promise<void> | void;
        try {
          work = this.opts.onEvent(m.event);
        } catch (err) {
          this.log.warn('applying a management event failed', { err: err as Error });
          return;
        }
        if (work instanceof Promise) {
          const tracked = work.catch((err) => this.log.warn('applying a management event failed', { err: err as Error }));
          this.applying.add(tracked);
          void tracked.then(() => this.applying.delete(tracked));
        }
        return;
      }
      case 'log':
        this.log[m.level](m.msg, m.fields);
        return;
      default:
        return;
    }
  }

  /** Answers the pending call `id` (a `rows` or `synced` message): its error, or its value. */
  private settle(id: number, error: ErrorData | undefined, value: unknown): void {
    const p = this.pending.get(id);
    if (p === undefined) return;
    this.pending.delete(id);
    if (error !== undefined) p.reject(toError(error));
    else p.resolve(value);
  }

  private call<T>(message: (id: number) => ToActor): Promise<T> {
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.link.post(message(id));
    });
  }

  /** Runs an admitted management request in the actor; resolves with its answer, body as bytes. */
  forward(route: { method: string; pattern: string }, inc: Incoming, admission: Admission): Promise<Reply> {
    // A copy of its own: the front may reuse the memory the request's body was read into.
    const body = new Uint8Array(inc.body.byteLength);
    body.set(inc.body);
    const fields: RequestFields = {
      method: inc.method,
      path: inc.path,
      query: inc.query,
      params: inc.params,
      contentType: inc.contentType,
      headers: inc.headers,
      remoteAddress: inc.remoteAddress(),
      body,
    };
    return this.call<Reply>((id) => ({ t: 'request', id, route: routeId(route.method, route.pattern), fields, admission }));
  }

  /**
   * A hint above the version the front's replica holds: the actor's replica reads what changed and
   * its updates arrive (onUpdate) before this resolves. With no actor running, nothing to do: the
   * next one loads every organization as it is and sends it.
   */
  hint(change: Change): Promise<void> {
    if (this.closing || !this.alive) return Promise.resolve();
    return this.call<void>((id) => ({ t: 'change', id, change }));
  }

  /** The front's first use of an organization: the actor reads it whole and sends it (onUpdate) before this resolves. */
  load(orgId: string): Promise<void> {
    if (this.closing || !this.alive) return Promise.reject(new VexilError('UNAVAILABLE', 'The management actor stopped; try again', { retryAfter: 1 }));
    return this.call<void>((id) => ({ t: 'load', id, orgId }));
  }

  private post(m: ToActor): void {
    if (!this.closing && this.alive) this.link.post(m);
  }

  /** Evaluation counts for the actor to write (insights/forwarder.ts), and sampled contexts for previews; lost if the actor is down. */
  insights(rows: InsightsRows, samples?: SampleRows): void {
    this.post(samples === undefined ? { t: 'insights', rows } : { t: 'insights', rows, samples });
  }

  /** The front's own reads, by name (mailbox.ts `FrontAsks`): each runs in the actor. */
  readonly asks: FrontAsks = (() => {
    const ask =
      <N extends AskName>(name: N) =>
      (...args: Parameters<FrontAsks[N]>): ReturnType<FrontAsks[N]> =>
        this.call((id) => ({ t: 'ask', id, name, args })) as ReturnType<FrontAsks[N]>;
    return {
      keyByHash: ask('keyByHash'),
      keyById: ask('keyById'),
      orgVersions: ask('orgVersions'),
      registerNode: ask('registerNode'),
      liveNodes: ask('liveNodes'),
      removeNode: ask('removeNode'),
      ping: ask('ping'),
      webhookStats: ask('webhookStats'),
    };
  })();

  /**
   * SQL run in the actor, for tests and operators (VexilNode.db); the front's own code uses `asks`.
   * No transactions: writes are the actor's.
   */
  readonly reads: FrontReads = (() => {
    const self = this;
    return {
      get kind() {
        return self.kind;
      },
      query: <T>(text: string, params?: unknown[]): Promise<T[]> => this.call<T[]>((id) => ({ t: 'query', id, text, params, exec: false })),
      exec: async (script: string): Promise<void> => {
        await this.call((id) => ({ t: 'query', id, text: script, params: undefined, exec: true }));
      },
    };
  })();

  /** Closes the actor's database and ends the actor. */
  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    this.priority?.stop();
    if (!this.alive) return;
    const link = this.link;
    const exited = new Promise<void>((resolve) => link.onExit(() => resolve()));
    link.post({ t: 'close' } satisfies ToActor);
    const timer = setTimeout(() => link.kill(), 10_000);
    await exited;
    clearTimeout(timer);
  }
}

/** A piece's bytes, or the reason they cannot be read (its actor's process has ended). */
function readPiece(read: () => Uint8Array): Promise<Uint8Array> {
  try {
    return Promise.resolve(read());
  } catch (err) {
    return Promise.reject(err);
  }
}

/**
 * A reply body arriving from the actor in pieces (mailbox.ts: piece, more, cancel), each in a piece
 * slot (transport.ts), read only when it is handed out. A piece handed out by `next` is valid until
 * the next call to `next` or `cancel`: then its slot goes back to the actor with a `more`, which
 * also asks for the piece PIECE_WINDOW ahead.
 */
class PipedBody implements BodySource {
  private readonly queue: { slot: number; read: () => Uint8Array }[] = [];
  /** The slot of the piece last handed out. */
  private held: number | null = null;
  private complete = false;
  private done = false;
  private waiter: { resolve(p: Uint8Array | null): void; reject(err: unknown): void } | null = null;

  constructor(
    readonly length: number,
    private readonly tell: { more(slot: number): void; cancel(slots: number[]): void; forget(): void },
  ) {}

  /** The piece in `slot` is there; `read` gives its bytes (once, when it is handed out). */
  arrived(slot: number, read: () => Uint8Array, last: boolean): void {
    if (this.done) {
      this.tell.cancel([slot]);
      return;
    }
    if (last) {
      this.complete = true;
      this.tell.forget();
    }
    const w = this.waiter;
    if (w !== null) {
      this.waiter = null;
      this.held = slot;
      readPiece(read).then(w.resolve, w.reject);
    } else this.queue.push({ slot, read });
  }

  next(): Promise<Uint8Array | null> {
    this.release();
    if (this.done) return Promise.reject(new VexilError('UNAVAILABLE', 'The management actor stopped'));
    const piece = this.queue.shift();
    if (piece !== undefined) {
      this.held = piece.slot;
      return readPiece(piece.read);
    }
    if (this.complete) return Promise.resolve(null);
    return new Promise((resolve, reject) => {
      this.waiter = { resolve, reject };
    });
  }

  /** The piece last handed out has been written: its slot goes back. */
  private release(): void {
    if (this.held === null) return;
    const slot = this.held;
    this.held = null;
    if (!this.done) this.tell.more(slot);
  }

  cancel(): void {
    if (this.done) return;
    this.done = true;
    const slots = this.queue.splice(0).map((p) => p.slot);
    if (this.held !== null) slots.push(this.held);
    this.held = null;
    if (!this.complete) this.tell.forget();
    this.tell.cancel(slots);
  }

  /** The actor stopped before the last piece (its slots went with it). */
  fail(): void {
    this.done = true;
    const w = this.waiter;
    this.waiter = null;
    w?.reject(new VexilError('UNAVAILABLE', 'The management actor stopped'));
  }
}
