/**
 * Thread priorities on a shared core (Linux). `setpriority` with a thread id changes that thread
 * alone (`os.setPriority(0, n)` in a worker: the worker's own thread, as the management actor does).
 *
 * The threads a Node.js process has before it starts any worker are V8's platform workers (garbage
 * collection helpers shared by every isolate of the process: the front, the evaluation workers, the
 * management actor) and libuv's helpers. Measured with 100,000 flags: each unpaged list of 37 MB
 * made the platform workers spend 0.6 s of CPU collecting the management actor's garbage, at nice 0,
 * more than the actor itself spent at nice 10; on a node pinned to one core that CPU came out of the
 * front thread's, and evaluations waited (docs/benchmarks.md, "Large organizations").
 */
import { readdirSync } from 'node:fs';
import { setPriority } from 'node:os';

/**
 * Lowers every thread of this process but the calling one (the main thread, when called first
 * thing) to `nice`; threads started afterwards (evaluation workers, the actor) keep the caller's
 * priority or set their own. Returns how many threads it changed (0 where not Linux or not allowed).
 */
export function yieldHelperThreads(nice: number): number {
  if (process.platform !== 'linux') return 0;
  let tasks: string[];
  try {
    tasks = readdirSync('/proc/self/task');
  } catch {
    return 0;
  }
  let changed = 0;
  for (const task of tasks) {
    const tid = Number(task);
    if (!Number.isInteger(tid) || tid === process.pid) continue;
    try {
      setPriority(tid, nice);
      changed += 1;
    } catch {
      // Gone, or not permitted: it keeps its priority.
    }
  }
  return changed;
}

