/**
 * A running node's processes as Linux's /proc shows them: its children, their command lines,
 * which of them is its management actor (dist/workers/management.bundle.js), their threads' nice values and
 * scheduling policies, and whether a process holds CAP_SYS_NICE. Used by the tests that kill or
 * inspect the actor process.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** The child processes of `pid` (every thread's /proc children list). */
export function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    try {
      for (const c of readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').trim().split(/\s+/)) if (c !== '') out.push(Number(c));
    } catch {
      // the thread ended meanwhile
    }
  }
  return out;
}

export const cmdline = (pid: number): string => {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
  } catch {
    return '';
  }
};

export const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** The management actor processes among `pid`'s children (one, for a running node). */
export const actorsOf = (pid: number): number[] => childrenOf(pid).filter((c) => cmdline(c).includes('workers/management.bundle.js'));

/** Polls `what` every 50 ms until it holds or `ms` have passed; its last answer. */
export async function until(what: () => boolean | Promise<boolean>, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await what()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return what();
}

export const SCHED_OTHER = 0;
export const SCHED_IDLE = 5;

export interface ThreadInfo {
  tid: number;
  nice: number;
  policy: number;
  /** CPU time so far, in clock ticks (utime + stime). */
  cpu: number;
}

/** Every thread of `pid`: its nice value, scheduling policy and CPU time (/proc/<pid>/task/<tid>/stat fields 19, 41, 14 and 15). */
export function threadsOf(pid: number): ThreadInfo[] {
  const out: ThreadInfo[] = [];
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/task/${task}/stat`, 'utf8');
    } catch {
      continue; // the thread ended meanwhile
    }
    // Fields after the command name, which is in parentheses and may hold spaces.
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // rest[0] is field 3 (state): field n is rest[n - 3].
    out.push({ tid: Number(task), nice: Number(rest[19 - 3]), policy: Number(rest[41 - 3]), cpu: Number(rest[14 - 3]) + Number(rest[15 - 3]) });
  }
  return out;
}

/** The node's management actor process (the one child running dist/workers/management.bundle.js), checked to be the only one. */
export function actorOf(t: { equal(a: unknown, b: unknown, msg: string): unknown }, pid: number): number {
  const actors = actorsOf(pid);
  t.equal(actors.length, 1, 'one management actor process, a child of the node');
  return actors[0];
}

/** Whether process `pid` (by default this one, and so a node it starts) holds CAP_SYS_NICE (bit 23 of CapEff). */
export function hasSysNice(pid: number | 'self' = 'self'): boolean {
  const m = /^CapEff:\s*([0-9a-f]+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m !== null && (BigInt('0x' + m[1]) & (1n << 23n)) !== 0n;
}
