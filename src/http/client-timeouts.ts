/**
 * Slow clients: a connection that has not sent a whole request head within `headMs` (10 s), or a
 * whole body within `bodyMs` (30 s) of its head, is closed; an idle keep-alive connection is closed
 * after `idleMs` (120 s). How each front enforces them
 * (docs/limits.md, "Slow clients"):
 *
 * - uWebSockets.js has one timer per socket, compiled in at 10 s (`HTTP_IDLE_TIMEOUT_S`): armed
 *   when a connection opens and when an answer ends, not rearmed by a partial head, so a head must
 *   be whole within 10 s and an idle keep-alive connection is closed after 10 s (sooner than the
 *   documented 120 s). During a body it is rearmed for 10 s per 160 KiB received, so a 1 MiB body
 *   trickled at 16 KiB/s takes a minute; `BodyDeadlines` bounds it. `headMs` and `idleMs` do not apply there.
 * - node:http has `headersTimeout` (head), `keepAliveTimeout` (idle) and `requestTimeout` (head
 *   and body together, a backstop here for bodies no handler reads); `BodyDeadlines` bounds the
 *   body from its head.
 *
 * A body past its deadline closes the connection without an answer, as the fronts' own timers do.
 */

export interface ClientTimeouts {
  /** A whole request head, from the connection's open (or the first byte of a later request on it). */
  headMs: number;
  /** A whole body, from its head. */
  bodyMs: number;
  /** A keep-alive connection with no request. */
  idleMs: number;
}

export const DEFAULT_CLIENT_TIMEOUTS: ClientTimeouts = { headMs: 10_000, bodyMs: 30_000, idleMs: 120_000 };

interface Pending {
  readonly due: number;
  readonly expire: () => void;
}

/**
 * Bodies being received, each with a deadline `ms` after its head. One timer sweeps them while
 * any is pending (a few times per `ms`); starting or finishing a body is a Set insert or delete,
 * not a timer of its own. A front may start a body's deadline late (only once the body did not
 * arrive whole with its head, the common case for small bodies) by passing the head's time, so the
 * sweep looks at every pending body rather than stopping at the first not yet due: the Set holds
 * only bodies still arriving.
 */
export class BodyDeadlines {
  private readonly pending = new Set<Pending>();
  private timer: NodeJS.Timeout | null = null;
  private readonly sweepMs: number;

  constructor(
    private readonly ms: number,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.sweepMs = Math.max(10, Math.min(1000, Math.floor(ms / 4)));
  }

  /**
   * Starts a body's deadline, `ms` after `since` (the head's `performance.now()`; now by default);
   * `expire` runs once if it passes first. Returns what ends it early.
   */
  start(expire: () => void, since: number = this.now()): () => void {
    const p: Pending = { due: since + this.ms, expire };
    this.pending.add(p);
    if (this.timer === null) {
      this.timer = setInterval(() => this.sweep(), this.sweepMs);
      this.timer.unref();
    }
    return () => {
      this.pending.delete(p);
    };
  }

  /** Stops the sweep (the front closes); pending deadlines are dropped. */
  stop(): void {
    this.pending.clear();
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }

  private sweep(): void {
    const now = this.now();
    for (const p of this.pending) {
      if (p.due > now) continue;
      this.pending.delete(p);
      p.expire();
    }
    if (this.pending.size === 0 && this.timer !== null) {
      clearInterval(this.timer);
      this.timer = null;
    }
  }
}
