/**
 * When to hand evaluations to the worker pool and when to run them on the front thread.
 *
 * A hand-off only pays when (1) there is a core for the workers that the front thread is not
 * using, (2) the front thread is the bottleneck, and (3) what the front thread saves (the
 * evaluations) costs more than what it spends handing them off (encoding the request, decoding the
 * answer, its share of the task). So, per request:
 *
 * - `never` / `always` (VEXIL_EVAL_HANDOFF) decide alone;
 * - `auto` (default): inline when the process may run on one core only (sched affinity, re-read
 *   every second: `taskset -c 0` gives 1), when the front thread's event loop was busy less than
 *   `busyElu` of the last sampling window (a front thread with headroom answers fastest itself),
 *   or when the workers are behind (more than `threads × 256` evaluations waiting); otherwise hand
 *   off when the measured front-thread cost of the hand-off is at most half the measured cost of
 *   evaluating it inline.
 *
 * The costs are exponentially weighted averages of what this process measures (µs on the front
 * thread): `inline` per evaluation, by transport, and `handoff` per request, by transport. They
 * start from figures measured on the development VM (docs/benchmarks.md) and follow the machine.
 */
import { availableParallelism } from 'node:os';
import { performance } from 'node:perf_hooks';

export type HandOffMode = 'auto' | 'always' | 'never';
/** What is handed off: one evaluation (REST, OFREP single), a GraphQL document, OFREP bulk. */
export type Transport = 'rest' | 'graphql' | 'bulk';

interface Costs {
  /** Front-thread µs per evaluation done inline. */
  inlineUs: number;
  /** Front-thread µs per request handed off (encode, decode, share of the task, settle). */
  handoffUs: number;
}

const ALPHA = 0.05;
const ewma = (prev: number, sample: number) => prev + ALPHA * (sample - prev);

export interface HandOffOptions {
  mode: HandOffMode;
  threads: number;
  /** Event-loop utilisation of the front thread above which it counts as the bottleneck. */
  busyElu?: number;
  sampleMs?: number;
}

export class HandOffPolicy {
  readonly mode: HandOffMode;
  private readonly threads: number;
  private readonly busyElu: number;
  /** Front thread's event-loop utilisation over the last sampling window (0..1). */
  elu = 0;
  /** CPUs this process may run on (sched affinity). */
  cores = availableParallelism();
  readonly costs: Record<Transport, Costs> = {
    rest: { inlineUs: 1.5, handoffUs: 3 },
    graphql: { inlineUs: 2.5, handoffUs: 12 },
    // Until measured: a bulk item costs the worker what a GraphQL document of as many fields does.
    bulk: { inlineUs: 2.5, handoffUs: 12 },
  };
  private last = performance.eventLoopUtilization();
  private ticks = 0;
  private readonly timer: NodeJS.Timeout;

  constructor(opts: HandOffOptions) {
    this.mode = opts.mode;
    this.threads = opts.threads;
    this.busyElu = opts.busyElu ?? 0.75;
    this.timer = setInterval(() => this.sample(), opts.sampleMs ?? 100);
    this.timer.unref();
  }

  private sample(): void {
    const now = performance.eventLoopUtilization();
    this.elu = performance.eventLoopUtilization(now, this.last).utilization;
    this.last = now;
    if (++this.ticks % 10 === 0) this.cores = availableParallelism();
  }

  /** Whether a request with `evaluations` evaluations goes to the pool, given `queued` waiting there. */
  handOff(transport: Transport, evaluations: number, queued: number): boolean {
    if (this.mode !== 'auto') return this.mode === 'always';
    if (this.cores <= 1 || this.elu < this.busyElu || queued > this.threads * 256) return false;
    const c = this.costs[transport];
    return c.handoffUs * 2 <= c.inlineUs * evaluations;
  }

  /** A measured inline run: `us` of front-thread time for `evaluations` evaluations. */
  recordInline(transport: Transport, us: number, evaluations: number): void {
    if (evaluations > 0) this.costs[transport].inlineUs = ewma(this.costs[transport].inlineUs, us / evaluations);
  }

  /** A measured hand-off: `us` of front-thread time for one request. */
  recordHandOff(transport: Transport, us: number): void {
    this.costs[transport].handoffUs = ewma(this.costs[transport].handoffUs, us);
  }

  close(): void {
    clearInterval(this.timer);
  }
}
