/**
 * `npm run bench -- wake-latency` (docs/cluster.md, "Scheduler slices, tried"): how late a
 * front-like thread wakes on a core it shares with busy threads at the management actor's nice
 * value, with its own scheduler slice at the kernel's default and at 100 µs (Linux 6.12+ custom
 * slices, `sched_setattr`'s `sched_runtime`; the kernel's minimum).
 *
 * On CPU 0: 1 and 4 spinners at nice 15 (ACTOR_NICE) that never sleep (the actor's threads busy
 * with an admin's work: its main thread, at times libuv's beside it), and a waker at nice 0 that,
 * like a front thread serving paced requests, sleeps 1 ms, works 0.2 ms, and records how late each
 * wake-up was. Rounds of --duration seconds alternate the waker's two slices
 * (VEXIL_BENCH_WAKE_PAIRS pairs, 3 by default; VEXIL_BENCH_WAKE_SPINNERS, a comma-separated list
 * of spinner counts, 1,4 by default); the figures are the medians over the pairs of each round's
 * lateness percentiles. Linux only (x64 and arm64: the system call's number).
 *
 * Node.js cannot make the system call, so Perl does (`syscall`, with `struct sched_attr` as of
 * Linux 3.14: size, policy, flags, nice, priority, runtime, deadline, period).
 *
 * The children: `node dist/bench/wake-latency.js spin` and `… wake <seconds> <sliceUs>` (one JSON line).
 */
import { execFileSync } from 'node:child_process';
import { setPriority } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { ACTOR_NICE } from '../src/management/transport.js';
import type { CustomScenario } from './custom-scenario.js';
import { log, median, percentile, ROOT, type Measurement } from './harness.js';
import { startChild } from './proc.js';

/** The waker's short slice, µs: the kernel's minimum. */
const SHORT_SLICE_US = 100;

interface Lateness {
  wakes: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

const HERE = (): string => path.join(ROOT, 'dist/bench/wake-latency.js');
const SCHED_SETATTR: Partial<Record<NodeJS.Architecture, number>> = { x64: 314, arm64: 274 };

/** Sets this process's main thread (its tid is the pid) to SCHED_OTHER at nice 0 with a slice of `sliceUs`. */
function setOwnSlice(sliceUs: number): void {
  const nr = SCHED_SETATTR[process.arch];
  if (nr === undefined) throw new Error(`no sched_setattr number for ${process.arch}`);
  const script = 'exit(syscall($ARGV[0], $ARGV[1] + 0, pack("LLQlLQQQ", 48, 0, 0, 0, 0, $ARGV[2], 0, 0), 0) == 0 ? 0 : 1)';
  execFileSync('perl', ['-e', script, String(nr), String(process.pid), String(sliceUs * 1000)]);
}

/** One round: `spinners` spinners beside the waker with a slice of `sliceUs` (0: the kernel's default), all on CPU 0. */
async function round(spinners: number, sliceUs: number, seconds: number, verbose: boolean): Promise<Lateness> {
  const started = Array.from({ length: spinners }, () => startChild('spinner', process.execPath, [HERE(), 'spin'], { cpus: '0', echo: verbose }));
  try {
    await Promise.all(started.map((s) => s.waitForLine(/^spinning/, 10_000)));
    const waker = startChild('waker', process.execPath, [HERE(), 'wake', String(seconds), String(sliceUs)], { cpus: '0', echo: verbose });
    const [, json] = await waker.waitForLine(/^(\{.*\})$/, (seconds + 30) * 1000);
    await waker.stop();
    return JSON.parse(json) as Lateness;
  } finally {
    for (const s of started) await s.stop();
  }
}

export const wakeLatency: CustomScenario = {
  name: 'wake-latency',
  description:
    'How late a nice-0 thread that sleeps 1 ms and works 0.2 ms wakes on a core it shares with 1 and with 4 spinning nice-15 threads (the ' +
    "management actor at work), its own scheduler slice at the kernel's default and at 100 µs; paired rounds, medians of each round's percentiles.",
  async run(rc) {
    if (process.platform !== 'linux') return [{ name: 'wake-latency', description: this.description, status: 'not available', error: 'Linux only' }];
    const pairs = Number(process.env.VEXIL_BENCH_WAKE_PAIRS ?? '3');
    const counts = (process.env.VEXIL_BENCH_WAKE_SPINNERS ?? '1,4').split(',').map(Number);
    const seconds = rc.opts.durationSec;
    const rows: Measurement[] = [];
    for (const spinners of counts) {
      const rounds: { kernel: Lateness; short: Lateness }[] = [];
      for (let i = 1; i <= pairs; i++) {
        log(`wake-latency: ${spinners} spinner(s), pair ${i}/${pairs}`);
        const kernel = await round(spinners, 0, seconds, rc.opts.verbose);
        const short = await round(spinners, SHORT_SLICE_US, seconds, rc.opts.verbose);
        rounds.push({ kernel, short });
        log(`  kernel's slice: p90 ${kernel.p90.toFixed(3)} p99 ${kernel.p99.toFixed(3)} ms; ${SHORT_SLICE_US} µs: p90 ${short.p90.toFixed(3)} p99 ${short.p99.toFixed(3)} ms`);
      }
      const med = (side: 'kernel' | 'short', q: keyof Lateness): number => median(rounds.map((r) => r[side][q]));
      const range = (side: 'kernel' | 'short', q: keyof Lateness): string =>
        `${Math.min(...rounds.map((r) => r[side][q])).toFixed(3)}–${Math.max(...rounds.map((r) => r[side][q])).toFixed(3)}`;
      for (const side of ['kernel', 'short'] as const) {
        rows.push({
          name: `wake-latency-${spinners}-${side === 'kernel' ? 'kernel' : `${SHORT_SLICE_US}us`}`,
          description:
            `a front-like thread's wake-up lateness beside ${spinners} busy nice-${ACTOR_NICE} thread(s), its own slice ` +
            (side === 'kernel' ? "the kernel's default" : `${SHORT_SLICE_US} µs`),
          status: 'ok',
          notes: [
            `lateness in ms, median of ${pairs} rounds of ${seconds} s (range): p50 ${med(side, 'p50').toFixed(3)}, p90 ${med(side, 'p90').toFixed(3)} ` +
              `(${range(side, 'p90')}), p99 ${med(side, 'p99').toFixed(3)} (${range(side, 'p99')}), max ${med(side, 'max').toFixed(3)}; ` +
              `wake-ups per round ${med(side, 'wakes').toFixed(0)}`,
          ],
          extra: { wakeLatency: { spinners, sliceUs: side === 'kernel' ? 0 : SHORT_SLICE_US, rounds: rounds.map((r) => r[side]) } },
        });
      }
    }
    return rows;
  },
};

/** A spinner: the actor's nice value, then a core kept busy. */
function spin(): void {
  setPriority(0, ACTOR_NICE);
  process.stdout.write('spinning\n');
  for (;;);
}

/** The waker: its slice, then sleep 1 ms, work 0.2 ms, for `seconds`; prints its lateness percentiles. */
async function wake(seconds: number, sliceUs: number): Promise<void> {
  if (sliceUs > 0) setOwnSlice(sliceUs);
  const lates: number[] = [];
  const end = performance.now() + seconds * 1000;
  await new Promise<void>((done) => {
    const tick = (): void => {
      const due = performance.now() + 1;
      setTimeout(() => {
        lates.push(performance.now() - due);
        const s = performance.now();
        while (performance.now() - s < 0.2);
        if (performance.now() < end) tick();
        else done();
      }, 1);
    };
    tick();
  });
  lates.sort((a, b) => a - b);
  const out: Lateness = { wakes: lates.length, p50: percentile(lates, 50), p90: percentile(lates, 90), p99: percentile(lates, 99), max: lates[lates.length - 1] };
  process.stdout.write(`${JSON.stringify(out)}\n`);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [mode, a, b] = process.argv.slice(2);
  if (mode === 'spin') spin();
  else if (mode === 'wake') void wake(Number(a), Number(b));
  else throw new Error('usage: wake-latency.js spin | wake <seconds> <sliceUs>');
}
