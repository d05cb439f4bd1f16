/**
 * A node's threads on a shared core (docs/cluster.md, "Threads"), read from /proc on a running
 * node process: the front thread stays at nice 0 with the normal policy; the management actor runs
 * at nice 10, and in SCHED_IDLE as well with VEXIL_ACTOR_PRIORITY=idle; the helper threads started
 * before any worker (V8's and libuv's) are at nice 10. Linux only.
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

/** `fn`'s first answer other than undefined, asked every 50 ms for up to `ms`. */
async function waitFor<T>(fn: () => T | undefined, ms: number): Promise<T | undefined> {
  const until = Date.now() + ms;
  for (;;) {
    const v = fn();
    if (v !== undefined || Date.now() > until) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
}

t.test('threads and priorities', { skip: process.platform !== 'linux' ? 'Linux only' : false }, async (t) => {
  t.test('VEXIL_ACTOR_PRIORITY=idle: exactly one thread, the actor, is SCHED_IDLE at nice 10; the front is not', async (t) => {
    const node = await spawnNode(t, { env: { VEXIL_ACTOR_PRIORITY: 'idle' } });
    const pid = node.child.pid!;
    const idle = await waitFor(() => {
      const found = threadsOf(pid).filter((x) => x.policy === SCHED_IDLE);
      return found.length > 0 ? found : undefined;
    }, 5000);
    t.equal(idle?.length, 1, 'one SCHED_IDLE thread');
    t.equal(idle?.[0].nice, 10, 'at nice 10');
    const front = threadsOf(pid).find((x) => x.tid === pid);
    t.same({ nice: front?.nice, policy: front?.policy }, { nice: 0, policy: SCHED_OTHER }, 'the front thread: nice 0, SCHED_OTHER');
    // The node answers while the actor is idle-scheduled: a management request goes through it.
    const res = await fetch(`${node.url}/api/flags`, { headers: { 'x-management-key': 'f'.repeat(64) } });
    t.equal(res.status, 401, 'the actor answers (an unknown key)');
    await node.kill('SIGTERM');
  });

  t.test('the default (nice): no SCHED_IDLE thread; the front at nice 0, other threads at nice 10', async (t) => {
    const node = await spawnNode(t, {});
    const pid = node.child.pid!;
    const threads = threadsOf(pid);
    t.equal(threads.filter((x) => x.policy === SCHED_IDLE).length, 0, 'no SCHED_IDLE thread');
    t.equal(threads.find((x) => x.tid === pid)?.nice, 0, 'the front thread at nice 0');
    t.ok(threads.filter((x) => x.nice === 10).length >= 2, 'helpers and the actor at nice 10');
    await node.kill('SIGTERM');
  });
});
