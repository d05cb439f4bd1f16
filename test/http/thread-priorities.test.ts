/**
 * A node's threads on a shared core (docs/cluster.md), read from /proc on a running node process:
 * the front thread stays at nice 0; the management actor and the helper threads started before any
 * worker (V8's and libuv's) run at nice 10; none is in SCHED_IDLE (measured worse:
 * docs/benchmarks.md, "Large organizations: isolation and paging"). Linux only.
 */
import { readdirSync, readFileSync } from 'node:fs';
import t from 'tap';
import { spawnNode } from '../helpers/process.js';

const SCHED_OTHER = 0;
const SCHED_IDLE = 5;

interface ThreadInfo {
  tid: number;
  nice: number;
  policy: number;
}

/** Every thread of `pid`: its nice value and scheduling policy (/proc/<pid>/task/<tid>/stat fields 19 and 41). */
function threadsOf(pid: number): ThreadInfo[] {
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
    out.push({ tid: Number(task), nice: Number(rest[19 - 3]), policy: Number(rest[41 - 3]) });
  }
  return out;
}

t.test('threads and priorities', { skip: process.platform !== 'linux' ? 'Linux only' : false }, async (t) => {
  t.test('no SCHED_IDLE thread; the front at nice 0, the actor and helpers at nice 10', async (t) => {
    const node = await spawnNode(t, {});
    const pid = node.child.pid!;
    const threads = threadsOf(pid);
    t.equal(threads.filter((x) => x.policy === SCHED_IDLE).length, 0, 'no SCHED_IDLE thread');
    const front = threads.find((x) => x.tid === pid);
    t.same({ nice: front?.nice, policy: front?.policy }, { nice: 0, policy: SCHED_OTHER }, 'the front thread: nice 0, SCHED_OTHER');
    t.ok(threads.filter((x) => x.nice === 10).length >= 2, 'helpers and the actor at nice 10');
    await node.kill('SIGTERM');
  });
});
