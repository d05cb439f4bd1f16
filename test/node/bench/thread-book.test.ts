/**
 * bench/threads.ts `ThreadBook`: each thread's CPU and run-queue wait per named stretch, as the
 * isolation and saturation scenarios report them (docs/benchmarks.md). Against a real process: a
 * child whose worker thread burns CPU in one stretch and sleeps in the next, its main thread idle;
 * then two workers spinning on one core, each waiting for it (schedstat's run delay).
 */
import { spawn, spawnSync } from 'node:child_process';
import t from 'tap';
import { ThreadBook } from '../../../bench/threads.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

// The worker spins in 5 ms steps while a shared flag says so; the parent sets the flag through stdin.
// argv[1]: how many workers spin (each alone in one stretch, together on one core in the other test).
const CHILD = `
const { Worker } = require('node:worker_threads');
const flag = new Int32Array(new SharedArrayBuffer(4));
for (let i = 0; i < Number(process.argv[1] ?? 1); i++) new Worker('const { workerData } = require("node:worker_threads"); const f = workerData; for (;;) { if (Atomics.load(f, 0) === 1) { const end = Date.now() + 5; while (Date.now() < end); } else Atomics.wait(f, 0, 0, 20); }', { eval: true, workerData: flag });
process.stdin.on('data', (d) => { Atomics.store(flag, 0, d.toString().trim() === 'spin' ? 1 : 0); Atomics.notify(flag, 0); });
process.stdout.write('ready\\n');
`;

t.test('a thread that spins in one stretch and sleeps in the next: its CPU lands in the first alone', async (t) => {
  const child = spawn(process.execPath, ['-e', CHILD, '1'], { stdio: ['pipe', 'pipe', 'inherit'] });
  t.teardown(() => void child.kill('SIGKILL'));
  await new Promise<void>((r) => child.stdout.once('data', () => r()));
  await sleep(200);
  const book = new ThreadBook<'busy' | 'idle'>(child.pid!);
  child.stdin.write('spin\n');
  book.enter('busy');
  await sleep(600);
  child.stdin.write('stop\n');
  await sleep(50);
  book.enter('idle');
  await sleep(600);
  book.enter(undefined);

  const busy = book.byKind.get('busy')!;
  const idle = book.byKind.get('idle')!;
  t.ok(busy.wallSec > 0.55 && busy.wallSec < 2, `the busy stretch lasted its time (${busy.wallSec.toFixed(2)} s)`);
  // The child's process is named by its pid ("front", as the node's main thread is), its worker by its comm.
  const spinner = (k: typeof busy) => [...k.threads.values()].reduce((a, b) => (b.cpuSec > a.cpuSec ? b : a));
  const hot = spinner(busy);
  t.ok(hot.cpuSec > 0.3, `the spinning thread ran most of the busy stretch (${(hot.cpuSec * 1000).toFixed(0)} ms)`);
  const hotTid = [...busy.threads].find(([, s]) => s === hot)![0];
  const later = idle.threads.get(hotTid);
  t.ok(later !== undefined && later.cpuSec < 0.05, `it ran almost nothing while told to sleep (${((later?.cpuSec ?? 0) * 1000).toFixed(1)} ms)`);
  t.equal(busy.threads.get(child.pid!)?.name, 'front', 'the process main thread is named as the node front is');
  // total() sums the threads by name prefix; describe() lists the spinner first.
  const all = book.total('busy', '');
  t.ok(all.cpuSec >= hot.cpuSec, 'total over every thread includes the spinner');
  t.equal(book.total('busy', 'no-such-thread').cpuSec, 0, 'a prefix no thread has sums to nothing');
  t.match(book.describe('busy'), new RegExp(`^${hot.name}#${hotTid}\\(nice \\d+\\) \\d+/\\d+`), 'describe lists the busiest thread first, as cpu/wait ms per s');
});

t.test('two threads spinning on one core: each waits for it about as long as it runs', { skip: spawnSync('taskset', ['-V']).status === 0 ? false : 'needs taskset' }, async (t) => {
  // Both workers pinned to CPU 0 with their process: when both are runnable, each waits on the run queue.
  const child = spawn('taskset', ['-c', '0', process.execPath, '-e', CHILD, '2'], { stdio: ['pipe', 'pipe', 'inherit'] });
  t.teardown(() => void child.kill('SIGKILL'));
  await new Promise<void>((r) => child.stdout.once('data', () => r()));
  await sleep(200);
  const book = new ThreadBook<'both'>(child.pid!);
  child.stdin.write('spin\n');
  await sleep(50);
  book.enter('both');
  await sleep(800);
  book.enter(undefined);
  const both = book.byKind.get('both')!;
  const spinners = [...both.threads.values()].sort((a, b) => b.cpuSec - a.cpuSec).slice(0, 2);
  for (const s of spinners) {
    t.ok(s.cpuSec > 0.1, `a spinner ran (${(s.cpuSec * 1000).toFixed(0)} ms of ${(both.wallSec * 1000).toFixed(0)})`);
    t.ok(s.waitSec > 0.1, `and waited for the core meanwhile (${(s.waitSec * 1000).toFixed(0)} ms)`);
  }
  const sum = spinners.reduce((a, s) => a + s.cpuSec, 0);
  t.ok(sum <= both.wallSec * 1.1, `together they ran no more than one core's time (${(sum * 1000).toFixed(0)} ms)`);
});
