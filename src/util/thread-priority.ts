/**
 * Thread priorities on a shared core (Linux). `setpriority` with a thread id changes that thread
 * alone (`os.setPriority(0, n)` in a worker: the worker's own thread).
 *
 * The threads a Node.js process has before it starts any worker are V8's platform workers (garbage
 * collection and compiler helpers) and libuv's helpers. The management actor lowers them with its
 * own thread (transport.ts), so that none of its process's threads outranks it on a shared core.
 * The node's process keeps its helpers at the front's priority: they collect the front's and the
 * evaluation workers' garbage, and the front waits for them at the end of a scavenge (docs/cluster.md,
 * "Nice 10, with the front's helper threads at the front's priority").
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

