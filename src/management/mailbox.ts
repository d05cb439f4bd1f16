/**
 * The management actor's mailbox: every message that crosses between the front and the
 * management actor (workers/management.ts, a process of its own: transport.ts), in one place. Which
 * requests cross, and what the front checks first, is the admission table's (boundary.ts).
 *
 * The management actor owns the node's database connection and runs every management request
 * (REST flag, key, audit and operator routes; GraphQL documents that are not evaluation-only):
 * database work, GraphQL execution and answer serialisation. The front thread only parses,
 * admits (authentication, subscription, rate limit) and writes the answer bytes it gets back.
 *
 *   front ──init──────────────▶ actor    open the database, migrate, bootstrap
 *   front ◀─ready───────────── actor    (the generated bootstrap key, once)
 *   front ◀─failed──────────── actor    the start failed (a restarted actor tries again)
 *   front ──request──────────▶ actor    a management request: its route id, fields, body and admission
 *   front ◀─event───────────── actor    a cluster event the request's write published (change, key)
 *   front ◀─counts──────────── actor    evaluations the request ran, before its reply
 *   front ◀─reply───────────── actor    status, headers and the serialised body
 *   front ◀─piece───────────── actor    or, for a larger body than PIPE_MIN_BYTES, its pieces (each in
 *   front ──more─────────────▶ actor    a piece slot, outside the message: transport.ts), at most
 *   front ──cancel───────────▶ actor    PIECE_WINDOW ahead of the client: `more` frees a slot and asks
 *                                        for the next piece, `cancel` frees the slots and drops the rest
 *   front ◀─update──────────── actor    what the actor's replica applied (a write's delta, a catch-up,
 *                                        a whole organization), with its data: the front's replica
 *                                        applies the same, and never reads a snapshot itself
 *   front ◀─key─────────────── actor    a key a request created or rotated, with its hash, before the
 *                                        reply: the front's key cache holds it (no ask on its first use)
 *   front ◀─read────────────── actor    a statement the actor's replica read (vexil_snapshot_reads_total)
 *   front ──change───────────▶ actor    a hint (bus, version poll): the replica reads what changed
 *   front ──load─────────────▶ actor    the front's first use of an organization: read it whole
 *   front ◀─synced──────────── actor    a `change` or `load` is done (its updates came before)
 *   front ──ask──────────────▶ actor    the front's own reads, by name (FrontAsks): key lookups,
 *   front ◀─answer──────────── actor    version polls, cluster membership, the health check
 *   front ──query────────────▶ actor    SQL from tests and operators (VexilNode.db), never from
 *   front ◀─rows────────────── actor    the front's own code
 *   front ◀─log─────────────── actor    a log line, written by the front's logger
 *   front ──insights─────────▶ actor    evaluation counts per flag (every thread, the pool, the provider's
 *                                        reports), written by the actor every VEXIL_INSIGHTS_FLUSH_MS;
 *                                        and sampled contexts (VEXIL_CONTEXT_SAMPLE), kept in its memory
 *   front ──close────────────▶ actor    write the last counts, close the database and exit
 *
 * Events that belong to a request, and the updates its write made to the actor's replica, are
 * posted before its reply on the same port, so the front has them (and has applied the write to
 * its own snapshot) before it answers: read-your-writes. A write's `event` comes first, so the
 * front tells the other nodes before the actor has read the change back.
 */
import type { Principal } from '../auth/permissions.js';
import type { Config } from '../config.js';
import type { ClusterEvent } from '../cluster/bus.js';
import type { ManagementKey, ReasonCode } from '../domain/types.js';
import type { Change, OrgUpdate, SnapshotReadKind } from '../snapshots/registry.js';
import type { InsightsRows } from '../insights/counter.js';
import type { SampleRows } from '../samples/sampler.js';

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
  /** The actor's file descriptor of the file that holds the PIECE_SLOTS slots of PIECE_BYTES for piped answers (transport.ts). */
  piecesFd: number;
}

export type ToActor =
  | InitMessage
  | { t: 'request'; id: number; route: string; fields: RequestFields; admission: Admission }
  | { t: 'ask'; id: number; name: AskName; args: unknown[] }
  | { t: 'query'; id: number; text: string; params: unknown[] | undefined; exec: boolean }
  /** A hint above the version the front holds; answered `synced` once the replica holds it. */
  | { t: 'change'; id: number; change: Change }
  /** Read organization `orgId` whole; answered `synced` after its `update`. */
  | { t: 'load'; id: number; orgId: string }
  /** The client took the piece of reply `id` in `slot` (free again): send the next. */
  | { t: 'more'; id: number; slot: number }
  /** The client of reply `id` went away: drop its pieces; `slots` are free again. */
  | { t: 'cancel'; id: number; slots: number[] }
  /** Evaluation counts per flag, stage, application and variant (insights/counter.ts rows), and sampled contexts (samples/sampler.ts rows). */
  | { t: 'insights'; rows: InsightsRows; samples?: SampleRows }
  | { t: 'close' };

/** A VexilError as it crosses the boundary. */
export interface ErrorData {
  code: string;
  message: string;
  retryAfter?: number;
}

/**
 * What the front's own code asks the actor, by name: the front holds no SQL (the stores are the
 * actor's, management/front-asks.ts answers these), so what it may read or record is this list.
 */
export interface FrontAsks {
  /** The key whose value hashes to `hash` (a key-cache miss). */
  keyByHash(hash: string): Promise<ManagementKey | null>;
  /** A key and its hash by id (a cached key's re-check). */
  keyById(id: string): Promise<{ key: ManagementKey; hash: string } | null>;
  /** Every organization's committed version (the version poll, the start). */
  orgVersions(): Promise<Map<string, number>>;
  /** Registers or refreshes this node in `cluster_nodes` (membership). */
  registerNode(nodeId: string): Promise<void>;
  /** The nodes whose `cluster_nodes` rows are fresh. */
  liveNodes(): Promise<Set<string>>;
  /** This node leaving on purpose. */
  removeNode(nodeId: string): Promise<void>;
  /** Whether the database answers (`/readyz`). */
  ping(): Promise<void>;
  /** This node's webhook deliveries by result, and the outbox's pending messages (`/metrics`, docs/webhooks.md). */
  webhookStats(): Promise<{ deliveries: [string, number][]; pending: number; oldestPendingSeconds: number }>;
}
export type AskName = keyof FrontAsks;

export type FromActor =
  | { t: 'ready'; generatedAdminKey: string | null; kind: 'pglite' | 'postgres' }
  | { t: 'failed'; message: string }
  /** `piped`: the body (`body` null) follows in pieces, this many bytes in all. */
  | { t: 'reply'; id: number; status: number; headers: Record<string, string> | undefined; body: Uint8Array | null; piped?: number }
  /** The next `length` bytes of reply `id`, in piece slot `slot` (transport.ts). */
  | { t: 'piece'; id: number; slot: number; length: number; last: boolean }
  /** Evaluations a request ran, by reason (sent before its reply). */
  | { t: 'counts'; counts: [ReasonCode, number][] }
  | { t: 'answer'; id: number; value?: unknown; error?: ErrorData }
  | { t: 'rows'; id: number; rows?: unknown[]; error?: ErrorData }
  | { t: 'event'; event: ClusterEvent }
  /** What the actor's replica applied, in order, with the data it read (registry.ts `OrgUpdate`). */
  | { t: 'update'; update: OrgUpdate }
  /** A key the actor created or rotated (committed) and the hash of its value, before the reply that shows the value. */
  | { t: 'key'; hash: string; key: ManagementKey }
  /** The replica ran a statement to read snapshot data. */
  | { t: 'read'; kind: SnapshotReadKind }
  /** Flags by lifecycle status per organization, after a status round that changed them (features/insights/tracker.ts). */
  | { t: 'statuses'; counts: { orgName: string; counts: Record<string, number> }[] }
  /** A `change` or `load` is done: the updates it caused were posted before this. */
  | { t: 'synced'; id: number; error?: ErrorData }
  | { t: 'log'; level: 'debug' | 'info' | 'warn' | 'error'; msg: string; fields?: Record<string, unknown> };

/**
 * An answer larger than this crosses in pieces, through the piece slots made once per actor
 * (transport.ts): the front then never receives a new buffer for it. (Every buffer that moves into
 * the front counts as memory its garbage collector must account for: tens of MB of answers made the
 * front, whose heap holds the organization's flags, run full collections, each one a pause for
 * every evaluation.) Smaller answers move as they are.
 *
 * A piece is what the front handles in one go (read from its slot, written to the client's
 * socket), while evaluations wait behind it: 256 KiB keeps that short (the read alone is 25 µs
 * here), where 1 MiB pieces held them four times as long.
 */
export const PIPE_MIN_BYTES = 64 * 1024;
export const PIECE_BYTES = 1 << 18;
export const PIECE_SLOTS = 16;
/** Pieces of one answer sent ahead of its client. */
export const PIECE_WINDOW = 4;

/** A management route's name on both sides: the front's admission table, the actor's handlers. */
export const routeId = (method: string, pattern: string): string => `${method} ${pattern}`;
