/**
 * Where a node's threads spent a stretch of a run: each thread's CPU and its time runnable but
 * waiting for the core (schedstat's run delay), per named stretch ("slice" in the isolation
 * scenario, "phase" in the saturation one), in ms per second of the stretch. A thread that waited
 * as long as it ran was at its share of a busy core; one that ran with no wait had the core when it
 * wanted it.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { clockTicks, processTree, procStat } from './proc.js';
import { Stretches } from './stretches.js';

/** One thread's CPU and run-queue wait so far, in seconds (/proc/<pid>/task/<tid>/stat and schedstat). */
export interface ThreadSample { name: string; nice: number; cpuSec: number; sysSec: number; waitSec: number; minorFaults: number }

/** Every thread of the node's process and of its children (the management actor in a process of its own). */
export function threadSamples(pid: number): Map<number, ThreadSample> {
  const out = new Map<number, ThreadSample>();
  const tick = clockTicks();
  for (const p of processTree(pid)) {
    let tids: string[] = [];
    try {
      tids = readdirSync(`/proc/${p}/task`);
    } catch {
      continue;
    }
    for (const t of tids) {
      try {
        const st = procStat(`/proc/${p}/task/${t}/stat`);
        // schedstat: ns on the CPU, ns waiting on a run queue, timeslices.
        const sched = readFileSync(`/proc/${p}/task/${t}/schedstat`, 'utf8').split(' ');
        const tid = Number(t);
        const name = tid === pid ? 'front' : p === pid ? st.comm : tid === p ? 'actor' : `actor/${st.comm}`;
        // Fields 10 (minflt), 15 (stime), 19 (nice); CPU from schedstat (ns, not ticks).
        out.set(tid, {
          name,
          nice: st.field(19),
          cpuSec: Number(sched[0]) / 1e9,
          sysSec: st.field(15) / tick,
          waitSec: Number(sched[1]) / 1e9,
          minorFaults: st.field(10),
        });
      } catch {
        // The thread has gone.
      }
    }
  }
  return out;
}

interface ThreadStretch { wallSec: number; threads: Map<number, ThreadSample> }
interface ThreadMoment { wall: number; threads: Map<number, ThreadSample> }

/** What one stretch adds: its length, and each thread's CPU, wait and faults (threads seen at both ends). */
function addThreads(acc: ThreadStretch | undefined, before: ThreadMoment, after: ThreadMoment): ThreadStretch {
  const k = acc ?? { wallSec: 0, threads: new Map<number, ThreadSample>() };
  k.wallSec += (after.wall - before.wall) / 1000;
  for (const [tid, t] of after.threads) {
    const b = before.threads.get(tid);
    if (b === undefined) continue;
    const sum = k.threads.get(tid) ?? { name: t.name, nice: t.nice, cpuSec: 0, sysSec: 0, waitSec: 0, minorFaults: 0 };
    sum.cpuSec += t.cpuSec - b.cpuSec;
    sum.sysSec += t.sysSec - b.sysSec;
    sum.waitSec += t.waitSec - b.waitSec;
    sum.minorFaults += t.minorFaults - b.minorFaults;
    k.threads.set(tid, sum);
  }
  return k;
}

/** The threads' CPU and wait per named stretch: `enter(name)` closes the current stretch and opens the next. */
export class ThreadBook<K extends string = string> extends Stretches<K, ThreadMoment, ThreadStretch> {
  constructor(pid: number) {
    super(() => ({ wall: performance.now(), threads: threadSamples(pid) }), addThreads);
  }

  /** The summed CPU and wait (seconds) of the threads whose name starts with `prefix` during `kind`, and the stretch's length. */
  total(kind: K, prefix: string): { wallSec: number; cpuSec: number; waitSec: number } {
    const k = this.byKind.get(kind);
    let cpuSec = 0;
    let waitSec = 0;
    for (const t of k?.threads.values() ?? []) {
      if (!t.name.startsWith(prefix)) continue;
      cpuSec += t.cpuSec;
      waitSec += t.waitSec;
    }
    return { wallSec: k?.wallSec ?? 0, cpuSec, waitSec };
  }

  /**
   * The threads that used or waited for the core during `kind`, busiest first: "name(nice) cpu/wait
   * ms per s" and, where there were any, "(sys N)" ms per s of it in the kernel and "N flt" minor
   * page faults per s (first touches of memory: on a VM whose freed memory goes back to the host,
   * each can stall the whole virtual CPU, whatever the scheduler's priorities).
   */
  describe(kind: K): string {
    const k = this.byKind.get(kind);
    if (k === undefined || k.wallSec === 0) return '-';
    return [...k.threads.entries()]
      .filter(([, t]) => t.cpuSec + t.waitSec > 0.001 * k.wallSec)
      .sort(([, a], [, b]) => b.cpuSec - a.cpuSec)
      .map(([tid, t]) => {
        const perSec = (x: number): string => (x / k.wallSec).toFixed(0);
        const sys = t.sysSec > 0 ? ` (sys ${perSec(t.sysSec * 1000)})` : '';
        const faults = t.minorFaults > 0 ? ` ${perSec(t.minorFaults)} flt` : '';
        return `${t.name}#${tid}(nice ${t.nice}) ${perSec(t.cpuSec * 1000)}/${perSec(t.waitSec * 1000)}${sys}${faults}`;
      })
      .join(', ');
  }
}
