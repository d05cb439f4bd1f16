/**
 * The scheduling policy of a management actor in a process of its own (Linux), set by the front.
 *
 * Every thread of the actor runs at nice 10 from its start (transport.ts). With
 * `VEXIL_MANAGEMENT_PRIORITY=idle` (the default), once the actor is ready its whole process moves
 * to SCHED_IDLE (`chrt --idle --all-tasks`): it then runs only on CPU time no other thread wants,
 * and a waking front thread preempts it at once. At nice 10 a waking front waits for the actor's
 * slice to end, up to a scheduler tick or two; on a shared core that was most of what an admin
 * added to the evaluation p99 (docs/benchmarks.md, "Large organizations: isolation and paging").
 *
 * SCHED_IDLE gets next to nothing of a core that evaluation keeps busy. So while the actor has
 * work (a request or a query of the front's in flight), the front reads every WATCH_MS how long the
 * actor's main thread waited runnable (/proc/<pid>/schedstat): past STARVED_SHARE of the time it
 * lifts the actor back to SCHED_OTHER (still nice 10) for LIFT_MS, then moves it to SCHED_IDLE
 * again. Leaving SCHED_IDLE needs CAP_SYS_NICE (or RLIMIT_NICE ≥ 10): without it the front says so
 * once and the actor stays idle; `VEXIL_MANAGEMENT_PRIORITY=low` keeps it at nice 10 instead.
 *
 * Each change starts `chrt` (a fork of the front's process, a few ms): once at start, and twice
 * per starvation episode, never on a calm node's path.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import type { Logger } from '../util/log.js';

export type ActorPriorityMode = 'idle' | 'low';

const WATCH_MS = 250;
/** Runnable-but-waiting share of wall time over one watch period that counts as starving. */
const STARVED_SHARE = 0.5;
/** How long a lifted actor stays at SCHED_OTHER before it returns to SCHED_IDLE. */
const LIFT_MS = 60_000;

const CHRT = ['/usr/bin/chrt', '/bin/chrt'].find((p) => existsSync(p)) ?? null;

export class ActorPriority {
  private state: 'low' | 'idle' | 'stuck' = 'low';
  private timer: NodeJS.Timeout | null = null;
  private liftTimer: NodeJS.Timeout | null = null;
  /** The last reading while busy (`at` 0: none; the next busy period starts a new one). */
  private last = { at: 0, waited: 0 };
  private switching = false;
  private stopped = false;

  /** `busy`: whether the actor has work in flight (only then can it starve). */
  constructor(
    private readonly pid: number,
    private readonly mode: ActorPriorityMode,
    private readonly busy: () => boolean,
    private readonly log: Logger,
  ) {}

  /** The actor is ready: from now on it yields the core to anything else that wants it. */
  async start(): Promise<void> {
    if (this.mode !== 'idle') return;
    if (process.platform !== 'linux' || CHRT === null || Number.isNaN(this.waitedNs())) {
      this.log.info('management actor stays at nice 10 (SCHED_IDLE needs Linux and chrt)');
      return;
    }
    if (!(await this.set('--idle'))) return;
    this.timer = setInterval(() => void this.watch(), WATCH_MS).unref();
  }

  /** Nanoseconds the actor's main thread has waited runnable so far (schedstat's second field). */
  private waitedNs(): number {
    try {
      return Number(readFileSync(`/proc/${this.pid}/schedstat`, 'utf8').split(' ')[1]);
    } catch {
      return NaN;
    }
  }

  private set(policy: '--idle' | '--other'): Promise<boolean> {
    return new Promise((resolve) =>
      execFile(CHRT!, [policy, '--all-tasks', '--pid', '0', String(this.pid)], (err) => {
        if (err === null) {
          if (!this.stopped) this.state = policy === '--idle' ? 'idle' : 'low';
          return resolve(true);
        }
        if (!this.stopped) this.log.warn(`management actor: chrt ${policy} failed; it stays as it is`, { message: err.message.trim() });
        resolve(false);
      }),
    );
  }

  private async watch(): Promise<void> {
    // Only while idle and with work in flight: no /proc read on the front thread otherwise.
    if (this.state !== 'idle' || this.switching || !this.busy()) {
      this.last.at = 0;
      return;
    }
    const now = performance.now();
    const waited = this.waitedNs();
    const fresh = this.last.at === 0;
    const share = (waited - this.last.waited) / 1e6 / (now - this.last.at);
    this.last = { at: now, waited };
    if (fresh || !(share > STARVED_SHARE)) return;
    this.switching = true;
    const lifted = await this.set('--other');
    this.switching = false;
    if (this.stopped) return;
    if (!lifted) {
      // Without CAP_SYS_NICE a process cannot leave SCHED_IDLE: stop trying.
      this.log.warn('management actor starves in SCHED_IDLE and cannot be lifted (needs CAP_SYS_NICE); VEXIL_MANAGEMENT_PRIORITY=low avoids it');
      this.state = 'stuck';
      return;
    }
    this.log.warn('management actor starved in SCHED_IDLE; at nice 10 for a while', { waitedShare: Number(share.toFixed(2)), forMs: LIFT_MS });
    this.liftTimer = setTimeout(() => void this.set('--idle'), LIFT_MS).unref();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== null) clearInterval(this.timer);
    if (this.liftTimer !== null) clearTimeout(this.liftTimer);
    this.timer = this.liftTimer = null;
  }
}
