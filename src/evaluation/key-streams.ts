/**
 * Open event streams of Management Keys, whatever protocol they speak (docs/ofrep.md, "The event
 * stream"; docs/feed.md, "The stream"): what every such stream needs, owned here once.
 *
 * - At most `maxPerKey` open streams per key on this node, whatever their protocol (routes answer
 *   429 past it; `full`): the hubs of one node count together (`sharedCounts`).
 * - A key that is disabled, rotated or deleted ends its streams (the key cache tells us, on every
 *   node); when every key may have changed (the bus reconnected), each open key is checked again;
 *   and every `recheckMs` (at most a minute) each key with open streams is read again from the
 *   database, so a key disabled while the bus was down (its message lost) still ends its streams:
 *   one query per such key per period, nothing per stream.
 * - A comment line every HEARTBEAT_MS keeps proxies from closing idle streams and lets the node
 *   notice clients that are gone.
 * - Every change the snapshot registry applies (local writes and, through the cluster bus, other
 *   nodes' writes) to an organization with open streams is handed to the protocol's `deliver`,
 *   once per event-loop turn with what each version touched, in order: no database work per
 *   event, no polling. An organization that is gone ends its streams.
 */
import { VexilError } from '../domain/errors.js';
import type { OrgSnapshot } from '../engine/index.js';
import type { SnapshotRegistry, Touches } from '../snapshots/registry.js';
import type { Logger } from '../util/log.js';
import type { KeyCache } from '../auth/key-cache.js';

/** What the HTTP front hands a streamed reply (structurally its StreamSink). */
export interface EventSink {
  write(chunk: string): void;
  end(): void;
  onClose(cb: () => void): void;
  readonly closed: boolean;
}

/** An open stream: whose it is. Protocols extend it with what they deliver by. */
export interface KeyStream {
  sink: EventSink;
  orgId: string;
  keyId: string;
  /** The key's stored hash when the stream opened (a rotation changes it). */
  hash: string;
}

export interface StreamLimits {
  /** Open streams of one key on this node (VEXIL_SSE_MAX_STREAMS_PER_KEY). */
  maxPerKey: number;
  /** How often each open stream's key is read again from the database (VEXIL_SSE_KEY_RECHECK_MS). */
  recheckMs: number;
}

/**
 * The changes applied to an organization since the last turn, for its open streams: `touches` in
 * version order ('all' after a reload), `snapshot` as it is now.
 */
export type Deliver<S extends KeyStream> = (orgId: string, snapshot: OrgSnapshot, touches: readonly Touches[], streams: ReadonlySet<S>) => void;

/** Seconds a client refused for too many streams is asked to wait: a stream of the key must end first. */
const STREAMS_RETRY_AFTER_S = 5;

/** The 429 past VEXIL_SSE_MAX_STREAMS_PER_KEY (`KeyStreams.full`), with Retry-After. */
export const tooManyStreams = (max: number): VexilError =>
  new VexilError('RATE_LIMITED', `This key has ${max} open event streams on this node (VEXIL_SSE_MAX_STREAMS_PER_KEY); close one first`, { retryAfter: STREAMS_RETRY_AFTER_S });

/**
 * Open streams per key id, shared by every hub of a node: kept per key cache, of which a node has
 * one, so OFREP's and the feed's streams of a key count toward one cap.
 */
const countsByNode = new WeakMap<KeyCache, Map<string, number>>();

function sharedCounts(keys: KeyCache): Map<string, number> {
  let counts = countsByNode.get(keys);
  if (counts === undefined) countsByNode.set(keys, (counts = new Map()));
  return counts;
}

const HEARTBEAT = ': keep-alive\n\n';
const HEARTBEAT_MS = 25_000;

export class KeyStreams<S extends KeyStream> {
  private readonly byOrg = new Map<string, Set<S>>();
  private readonly byKey = new Map<string, Set<S>>();
  /** Open streams per key on this node, every hub's (`sharedCounts`). */
  private readonly perKey: Map<string, number>;
  /** Per organization, what each version touched since the last flush. */
  private readonly pending = new Map<string, Touches[]>();
  private flushScheduled = false;
  private readonly heartbeat: NodeJS.Timeout;
  private readonly recheck: NodeJS.Timeout;
  private count = 0;
  /** A pass over every open key is under way; `recheckAgain`: another was asked for meanwhile. */
  private rechecking = false;
  private recheckAgain = false;

  constructor(
    private readonly registry: SnapshotRegistry,
    private readonly keys: KeyCache,
    private readonly log: Logger,
    private readonly limits: StreamLimits,
    private readonly deliver: Deliver<S>,
  ) {
    this.perKey = sharedCounts(keys);
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

  /** Whether `keyId` has as many open streams on this node as it may, of any protocol (one more is refused). */
  full(keyId: string): boolean {
    return (this.perKey.get(keyId) ?? 0) >= this.limits.maxPerKey;
  }

  /**
   * Registers an open stream; false (and the stream is ended) when its key already has
   * `maxPerKey`: streams admitted together may pass the route's check (`full`) at once.
   */
  add(s: S): boolean {
    if (s.sink.closed) return false;
    if (this.full(s.keyId)) {
      s.sink.end();
      return false;
    }
    addTo(this.byOrg, s.orgId, s);
    addTo(this.byKey, s.keyId, s);
    this.perKey.set(s.keyId, (this.perKey.get(s.keyId) ?? 0) + 1);
    this.count++;
    s.sink.onClose(() => this.remove(s));
    return true;
  }

  /** Delivers what is pending for `orgId` now, before the turn ends (a stream joining must see the latest state). */
  flushOrg(orgId: string): void {
    const touches = this.pending.get(orgId);
    if (touches === undefined) return;
    this.pending.delete(orgId);
    const set = this.byOrg.get(orgId);
    const snap = this.registry.peek(orgId);
    if (set !== undefined && snap !== undefined) this.deliver(orgId, snap, touches, set);
  }

  close(): void {
    clearInterval(this.heartbeat);
    clearInterval(this.recheck);
    for (const set of this.byOrg.values()) for (const s of [...set]) s.sink.end();
  }

  private remove(s: S): void {
    if (removeFrom(this.byOrg, s.orgId, s)) this.count--;
    if (!removeFrom(this.byKey, s.keyId, s)) return;
    const left = (this.perKey.get(s.keyId) ?? 1) - 1;
    if (left > 0) this.perKey.set(s.keyId, left);
    else this.perKey.delete(s.keyId);
  }

  private onChange(orgId: string, snap: OrgSnapshot | null, touches: Touches): void {
    if (!this.byOrg.has(orgId)) return;
    if (snap === null) {
      // The organization is gone: its keys with it.
      this.pending.delete(orgId);
      for (const s of [...this.byOrg.get(orgId)!]) s.sink.end();
      return;
    }
    const list = this.pending.get(orgId);
    if (list === undefined) this.pending.set(orgId, [touches]);
    else list.push(touches);
    if (!this.flushScheduled) {
      // Changes applied in the same turn (a burst of writes) are delivered together.
      this.flushScheduled = true;
      setImmediate(() => this.flush());
    }
  }

  private flush(): void {
    this.flushScheduled = false;
    for (const orgId of [...this.pending.keys()]) this.flushOrg(orgId);
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
      // A stream holds the hash its key had when it connected; a rotation changes it.
      if (found === null || found.key.disabled || [...streams].some((s) => s.hash !== found.hash)) {
        // This node missed the key's change: its cached copy goes too (reconnecting then gets 401,
        // evaluations look the key up again), and its streams end.
        this.keys.invalidateKey(keyId);
        this.endKey(keyId);
      }
    } catch (err) {
      // The database does not answer: the streams stay, and the next pass asks again.
      this.log.warn('event stream key check failed', { err: err as Error });
    }
  }
}

function addTo<S>(map: Map<string, Set<S>>, id: string, s: S): void {
  let set = map.get(id);
  if (set === undefined) {
    set = new Set();
    map.set(id, set);
  }
  set.add(s);
}

function removeFrom<S>(map: Map<string, Set<S>>, id: string, s: S): boolean {
  const set = map.get(id);
  if (set === undefined || !set.delete(s)) return false;
  if (set.size === 0) map.delete(id);
  return true;
}
