/**
 * The scheduling policy of a management actor in a process of its own (Linux), set by the front.
 *
 * `VEXIL_MANAGEMENT_PRIORITY=nice` (the default) does nothing here: every thread of the actor runs
 * at VEXIL_MANAGEMENT_NICE (10) in SCHED_OTHER from its start (transport.ts) and stays there. That is
 * a bounded share of a busy core (at nice 10 the actor weighs 110 against 1024 for each runnable
 * thread at nice 0: about 10 % of the core beside a saturated front, 5 % beside a saturated front
 * and a second busy process) which it keeps without any capability, so management never starves;
 * and on a core with time to spare it takes only what it needs. 10 is the value found to meet the
 * saturation aims without costing evaluation latency more than the isolation check allows, once
 * the node's own helper threads keep the front's priority (docs/cluster.md, "Nice 10, with the
 * front's helper threads at the front's priority"). Why not SCHED_IDLE by default: see
 * docs/cluster.md, "Management never starves".
 *
 * `VEXIL_MANAGEMENT_PRIORITY=idle` (opt-in) moves the whole process to SCHED_IDLE once the actor is
 * ready (`chrt --idle --all-tasks`): it then runs only on CPU time no other thread wants, and a
 * waking front thread preempts it at once. SCHED_IDLE gets next to nothing of a core that
 * evaluation keeps busy. So while the actor has work (a request or a query of the front's in
 * flight), the front reads every WATCH_MS how long the actor's main thread ran and waited runnable
 * (/proc/<pid>/schedstat). Starving is a whole STARVE_WINDOW_MS with work in flight throughout in
 * which it waited runnable more than STARVED_WAIT_SHARE of the time and ran less than
 * STARVED_RUN_SHARE. Then the front lifts it back to SCHED_OTHER (still at its nice value) for
 * LIFT_MS and moves it to SCHED_IDLE again, where the next window starts. Leaving SCHED_IDLE needs
 * CAP_SYS_NICE (or RLIMIT_NICE): without it (a default container) the front says so once and the
 * actor stays idle, starving under saturation; the default `nice` needs no such lift.
 *
 * Each change starts `chrt` (a fork of the front's process, a few ms): once at start, and twice
 * per lift, only while the core is saturated, never on a calm node's path.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import type { Logger } from '../util/log.js';

/** `nice`: the actor keeps its nice value in SCHED_OTHER; `idle`: SCHED_IDLE once ready, lifted while it starves. */
export type ActorPriorityMode = 'nice' | 'idle';

const WATCH_MS = 250;
/** How long the actor must have had work in flight, and starved all along, before it is lifted. */
const STARVE_WINDOW_MS = 1000;
/** Over the window: waited runnable more than this share of the wall time… */
const STARVED_WAIT_SHARE = 0.5;
/** …and ran less than this share of it. */
const STARVED_RUN_SHARE = 0.05;
/** How long a lifted actor stays at SCHED_OTHER before it returns to SCHED_IDLE. */
const LIFT_MS = 1000;
/** At most one log line per this many ms about lifts. */
const LOG_EVERY_MS = 60_000;

const CHRT = ['/usr/bin/chrt', '/bin/chrt'].find((p) => existsSync(p)) ?? null;

export class ActorPriority {
  private state: 'other' | 'idle' | 'stuck' = 'other';
  private timer: NodeJS.Timeout | null = null;
  private liftTimer: NodeJS.Timeout | null = null;
  /** The start of the current window (`at` 0: none; the next busy reading starts one). */
  private window = { at: 0, ran: 0, waited: 0 };
  private switching = false;
  /** Lifts not yet logged, and when the last log line was written. */
  private lifts = 0;
  private loggedAt = -Infinity;
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
    if (process.platform !== 'linux' || CHRT === null || Number.isNaN(this.reading().waited)) {
      this.log.info('management actor stays in SCHED_OTHER at its nice value (SCHED_IDLE needs Linux and chrt)');
      return;
    }
    if (!(await this.set('--idle'))) return;
    this.timer = setInterval(() => void this.watch(), WATCH_MS).unref();
  }

  /** Milliseconds the actor's main thread has run and waited runnable so far (schedstat's first two fields). */
  private reading(): { ran: number; waited: number } {
    try {
      const f = readFileSync(`/proc/${this.pid}/schedstat`, 'utf8').split(' ');
      return { ran: Number(f[0]) / 1e6, waited: Number(f[1]) / 1e6 };
    } catch {
      return { ran: NaN, waited: NaN };
    }
  }

  private set(policy: '--idle' | '--other'): Promise<boolean> {
    return new Promise((resolve) =>
      execFile(CHRT!, [policy, '--all-tasks', '--pid', '0', String(this.pid)], (err) => {
        if (err === null) {
          if (!this.stopped) this.state = policy === '--idle' ? 'idle' : 'other';
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
      this.window.at = 0;
      return;
    }
    const now = performance.now();
    const { ran, waited } = this.reading();
    if (this.window.at === 0) {
      this.window = { at: now, ran, waited };
      return;
    }
    const span = now - this.window.at;
    if (span < STARVE_WINDOW_MS) return;
    const waitedShare = (waited - this.window.waited) / span;
    const ranShare = (ran - this.window.ran) / span;
    this.window = { at: now, ran, waited };
    if (!(waitedShare > STARVED_WAIT_SHARE && ranShare < STARVED_RUN_SHARE)) return;
    this.switching = true;
    const lifted = await this.set('--other');
    this.switching = false;
    if (this.stopped) return;
    if (!lifted) {
      // Without CAP_SYS_NICE a process cannot leave SCHED_IDLE: stop trying.
      this.log.warn('management actor starves in SCHED_IDLE and cannot be lifted (needs CAP_SYS_NICE); VEXIL_MANAGEMENT_PRIORITY=nice (the default) avoids it');
      this.state = 'stuck';
      return;
    }
    // Under saturation a lift comes every couple of seconds: say so once a minute, with a count.
    this.lifts++;
    if (now - this.loggedAt >= LOG_EVERY_MS) {
      this.log.warn('management actor starved in SCHED_IDLE; in SCHED_OTHER for a while', {
        waitedShare: Number(waitedShare.toFixed(2)),
        ranShare: Number(ranShare.toFixed(3)),
        forMs: LIFT_MS,
        liftsSinceLastSaid: this.lifts,
      });
      this.lifts = 0;
      this.loggedAt = now;
    }
    this.liftTimer = setTimeout(() => {
      this.liftTimer = null;
      this.window.at = 0;
      void this.set('--idle');
    }, LIFT_MS).unref();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== null) clearInterval(this.timer);
    if (this.liftTimer !== null) clearTimeout(this.liftTimer);
    this.timer = this.liftTimer = null;
  }
}
