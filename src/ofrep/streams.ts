/**
 * Open OFREP event streams (docs/ofrep.md, 'The event stream') and what drives them. Every change the snapshot
 * registry applies (local writes and, through the cluster bus, other nodes' writes) sends
 * `{"type": "refetchEvaluation"}` to the streams of the changed flag's application: no database
 * work per event, no polling. A key that is disabled, rotated or deleted ends its streams (the key
 * cache tells us, on every node); when every key may have changed (the bus reconnected), each open
 * key is checked again. An idle stream is one small record in two sets plus the front's socket.
 *
 * At most `maxPerKey` open streams per key on this node (the route answers 429
 * past it), and every `recheckMs` (at most a minute) each key with open streams is read again
 * from the database, so a key disabled while the bus was down (its message lost) still ends its
 * streams: one query per such key per period, nothing per stream.
 */
import type { KeyCache } from '../auth/key-cache.js';
import type { SnapshotRegistry, Touches } from '../snapshots/registry.js';
import type { OrgSnapshot } from '../engine/index.js';
import type { Logger } from '../util/log.js';

/** What the HTTP front hands a streamed reply (structurally its StreamSink). */
export interface EventSink {
  write(chunk: string): void;
  end(): void;
  onClose(cb: () => void): void;
  readonly closed: boolean;
}

interface Stream {
  sink: EventSink;
  orgId: string;
  keyId: string;
  /** The key's application, lower-cased. */
  app: string;
  /** The key's stored hash when the stream opened (a rotation changes it). */
  hash: string;
}

export const REFETCH_EVENT = 'data: {"type":"refetchEvaluation"}\n\n';
/** A comment line every HEARTBEAT_MS, so that dead connections are noticed and proxies keep the stream. */
const HEARTBEAT = ': keep-alive\n\n';
const HEARTBEAT_MS = 25_000;

export interface StreamLimits {
  /** Open streams of one key on this node (VEXIL_SSE_MAX_STREAMS_PER_KEY). */
  maxPerKey: number;
  /** How often each open stream's key is read again from the database (VEXIL_SSE_KEY_RECHECK_MS). */
  recheckMs: number;
}

export class OfrepStreams {
  private readonly byOrg = new Map<string, Set<Stream>>();
  private readonly byKey = new Map<string, Set<Stream>>();
  /** Per organization, what changed since the last flush: application names (lower-cased) or everything. */
  private readonly pending = new Map<string, Set<string> | 'all'>();
  private flushScheduled = false;
  private readonly heartbeat: NodeJS.Timeout;
  private readonly recheck: NodeJS.Timeout;
  private count = 0;
  /** A pass over every open key is under way; `recheckAgain`: another was asked for meanwhile. */
  private rechecking = false;
  private recheckAgain = false;

  constructor(
    registry: SnapshotRegistry,
    private readonly keys: KeyCache,
    private readonly log: Logger,
    private readonly limits: StreamLimits,
  ) {
    registry.onChange((orgId, snap, touches) => this.onChange(orgId, snap, touches));
    keys.onInvalidate((keyId) => (keyId === null ? void this.recheckAll() : this.endKey(keyId)));
    this.heartbeat = setInterval(() => this.beat(), HEARTBEAT_MS);
    this.heartbeat.unref();
    this.recheck = setInterval(() => void this.recheckAll(), limits.recheckMs);
    this.recheck.unref();
  }

  /** Open streams on this node. */
  get size(): number {
    return this.count;
  }

  /** Whether `keyId` has as many open streams on this node as it may (one more is refused). */
  full(keyId: string): boolean {
    return (this.byKey.get(keyId)?.size ?? 0) >= this.limits.maxPerKey;
  }

  /**
   * Registers an open stream; false (and the stream is ended) when its key already has
   * `maxPerKey`: streams admitted together may pass the route's check (`full`) at once.
   */
  add(sink: EventSink, orgId: string, keyId: string, application: string, hash: string): boolean {
    if (sink.closed) return false;
    if (this.full(keyId)) {
      sink.end();
      return false;
    }
    const s: Stream = { sink, orgId, keyId, app: application.toLowerCase(), hash };
    addTo(this.byOrg, orgId, s);
    addTo(this.byKey, keyId, s);
    this.count++;
    sink.onClose(() => this.remove(s));
    return true;
  }

  close(): void {
    clearInterval(this.heartbeat);
    clearInterval(this.recheck);
    for (const set of this.byOrg.values()) for (const s of [...set]) s.sink.end();
  }

  private remove(s: Stream): void {
    if (removeFrom(this.byOrg, s.orgId, s)) this.count--;
    removeFrom(this.byKey, s.keyId, s);
  }

  private onChange(orgId: string, snap: OrgSnapshot | null, touches: Touches): void {
    if (!this.byOrg.has(orgId)) return;
    if (snap === null) {
      // The organization is gone: its keys with it.
      for (const s of [...this.byOrg.get(orgId)!]) s.sink.end();
      return;
    }
    let app: string | null = null;
    if (typeof touches === 'object') {
      // A deleted flag's (segment's) application is no longer known, and an organization-wide
      // segment's flags may be of any application: tell every stream of the organization.
      const project = 'flag' in touches ? snap.flags.get(touches.flag)?.flag.project : snap.segments?.get(touches.segment)?.segment.application;
      if (project != null) app = project.toLowerCase();
    }
    const prev = this.pending.get(orgId);
    if (app === null) this.pending.set(orgId, 'all');
    else if (prev === undefined) this.pending.set(orgId, new Set([app]));
    else if (prev !== 'all') prev.add(app);
    if (!this.flushScheduled) {
      // Changes applied in the same turn (a burst of writes) make one event per stream.
      this.flushScheduled = true;
      setImmediate(() => this.flush());
    }
  }

  private flush(): void {
    this.flushScheduled = false;
    for (const [orgId, apps] of this.pending) {
      const set = this.byOrg.get(orgId);
      if (set === undefined) continue;
      for (const s of set) if (apps === 'all' || apps.has(s.app)) s.sink.write(REFETCH_EVENT);
    }
    this.pending.clear();
  }

  private beat(): void {
    for (const set of this.byOrg.values()) for (const s of set) s.sink.write(HEARTBEAT);
  }

  /** Ends the streams of a key that was disabled, rotated or deleted; reconnecting gets 401. */
  private endKey(keyId: string): void {
    const set = this.byKey.get(keyId);
    if (set !== undefined) for (const s of [...set]) s.sink.end();
  }

  /**
   * Reads each open key again from the database (`KeyCache.readById`, through the management
   * actor's connection; never a cached copy): every `recheckMs`, and after the bus reconnects, when
   * any key may have changed meanwhile. One pass at a time; one asked for during a pass runs after it.
   */
  private async recheckAll(): Promise<void> {
    if (this.rechecking) {
      this.recheckAgain = true;
      return;
    }
    this.rechecking = true;
    try {
      do {
        this.recheckAgain = false;
        for (const keyId of [...this.byKey.keys()]) await this.recheckKey(keyId);
      } while (this.recheckAgain);
    } finally {
      this.rechecking = false;
    }
  }

  private async recheckKey(keyId: string): Promise<void> {
    try {
      const found = await this.keys.readById(keyId);
      const streams = this.byKey.get(keyId);
      if (streams === undefined) return;
      // The token was signed with the hash the stream connected with; a rotation changes it.
      if (found === null || found.key.disabled || [...streams].some((s) => s.hash !== found.hash)) {
        // This node missed the key's change: its cached copy goes too (reconnecting then gets 401,
        // evaluations look the key up again), and its streams end.
        this.keys.invalidateKey(keyId);
        this.endKey(keyId);
      }
    } catch (err) {
      // The database does not answer: the streams stay, and the next pass asks again.
      this.log.warn('OFREP stream key check failed', { err: err as Error });
    }
  }
}

function addTo(map: Map<string, Set<Stream>>, id: string, s: Stream): void {
  let set = map.get(id);
  if (set === undefined) {
    set = new Set();
    map.set(id, set);
  }
  set.add(s);
}

function removeFrom(map: Map<string, Set<Stream>>, id: string, s: Stream): boolean {
  const set = map.get(id);
  if (set === undefined || !set.delete(s)) return false;
  if (set.size === 0) map.delete(id);
  return true;
}
