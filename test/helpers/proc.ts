/**
 * A running node's processes as Linux's /proc shows them: its children, their command lines, and
 * which of them is its management actor (workers/management.js). Used by the tests that kill or
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
export const actorsOf = (pid: number): number[] => childrenOf(pid).filter((c) => cmdline(c).includes('workers/management.js'));

/** Polls `what` every 50 ms until it holds or `ms` have passed; its last answer. */
export async function until(what: () => boolean | Promise<boolean>, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await what()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return what();
}
