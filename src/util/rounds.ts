/**
 * One round of background work at a time (the schedule runner, features/schedules/runner.ts; the
 * webhook dispatcher, features/webhooks/dispatcher.ts):
 *
 * - `request()` starts a round now, or, during a round, asks for one more after it (many requests
 *   during a round make one more, not many);
 * - `arm(ms)` sets the one timer that requests a round `ms` from now (null: none), replacing the
 *   one set before; `pollMs` requests one at that interval besides;
 * - a round that has not settled within `timeoutMs` is abandoned (a database connection cut
 *   mid-query must not hold the work forever): the next may start;
 * - a failing round is reported to `onError` with `first` true for the first failure after a
 *   success (one warning per outage, not one per retry);
 * - `stop()` ends it: no round starts after it, no timer stays.
 *
 * Timers are unref'd: they never keep a process alive.
 */
export interface RoundsOptions {
  /** The work of one round. */
  round: () => Promise<void>;
  /** A round failed (or was abandoned); `first`: the first failure since the last success. */
  onError: (err: unknown, first: boolean) => void;
  /** A round is abandoned after this long (none: never). */
  timeoutMs?: number;
  /** A round is requested at this interval (none: only on request and by `arm`). */
  pollMs?: number;
  /** What to call the work in the abandonment error ("a webhook claim round"). */
  name?: string;
}

export class Rounds {
  private running = false;
  private again = false;
  private stopped = false;
  private failing = false;
  private timer: NodeJS.Timeout | null = null;
  private readonly poll: NodeJS.Timeout | null;

  constructor(private readonly o: RoundsOptions) {
    if (o.pollMs === undefined) this.poll = null;
    else {
      this.poll = setInterval(() => this.request(), o.pollMs);
      this.poll.unref();
    }
  }

  get isStopped(): boolean {
    return this.stopped;
  }

  /** A round now, or one more after the current one. */
  request(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = true;
    const o = this.o;
    void (o.timeoutMs === undefined ? o.round() : within(o.round(), o.timeoutMs, o.name ?? 'a round'))
      .then(() => {
        this.failing = false;
      })
      .catch((err) => {
        const first = !this.failing;
        this.failing = true;
        o.onError(err, first);
      })
      .finally(() => {
        this.running = false;
        if (this.again) {
          this.again = false;
          this.request();
        }
      });
  }

  /** The timer: a round `ms` from now (replacing the timer set before), or none (null). */
  arm(ms: number | null): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    if (ms === null || this.stopped) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.request();
    }, ms);
    this.timer.unref();
  }

  stop(): void {
    this.stopped = true;
    if (this.poll !== null) clearInterval(this.poll);
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }
}

/**
 * `p`, or a rejection once `ms` have passed: work that never settles (a database connection cut
 * mid-query) must not hold what waits for it forever.
 */
export function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not settle within ${ms} ms; abandoned`)), ms);
    timer.unref();
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}
