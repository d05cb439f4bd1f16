/**
 * A node's threads and processes on a shared core (docs/cluster.md), read from /proc on a running
 * node: the front thread at nice 0 and SCHED_OTHER, the front process's helper threads at nice 10;
 * the management actor in a process of its own whose every thread (V8's garbage collection helpers
 * included) runs at nice 10 and, once ready, in SCHED_IDLE (src/management/priority.ts), lifted
 * back to SCHED_OTHER while evaluation starves it. The actor's process ends with its node, however
 * the node ends, and a node whose actor dies starts another. Linux only.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { boolVariants } from '../../helpers/node.js';
import { spawnNode } from '../../helpers/process.js';
import { actorsOf, alive, until } from '../../helpers/proc.js';

const SCHED_OTHER = 0;
const SCHED_IDLE = 5;
const ADMIN_KEY = 'ab'.repeat(32);

interface ThreadInfo {
  tid: number;
  nice: number;
  policy: number;
  /** CPU time so far, in clock ticks (utime + stime). */
  cpu: number;
}

/** Every thread of `pid`: its nice value, scheduling policy and CPU time (/proc/<pid>/task/<tid>/stat fields 19, 41, 14 and 15). */
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
    out.push({ tid: Number(task), nice: Number(rest[19 - 3]), policy: Number(rest[41 - 3]), cpu: Number(rest[14 - 3]) + Number(rest[15 - 3]) });
  }
  return out;
}

/** The node's management actor process (the one child running workers/management.js). */
function actorOf(t: Test, pid: number): number {
  const actors = actorsOf(pid);
  t.equal(actors.length, 1, 'one management actor process, a child of the node');
  return actors[0];
}

/** Whether this process (and so a node it starts) holds CAP_SYS_NICE (bit 23 of CapEff). */
function mayLeaveIdle(): boolean {
  const m = /^CapEff:\s*([0-9a-f]+)$/m.exec(readFileSync('/proc/self/status', 'utf8'));
  return m !== null && (BigInt('0x' + m[1]) & (1n << 23n)) !== 0n;
}

/** POST /api/flags with the admin key: the answer's status. */
const createFlagRaw = (url: string, name: string): Promise<number> =>
  fetch(`${url}/api/flags`, {
    method: 'POST',
    headers: { 'x-management-key': ADMIN_KEY, 'content-type': 'application/json' },
    body: JSON.stringify({ name, project: 'default', type: 'boolean', variants: boolVariants }),
  }).then((r) => r.status);

const listFlags = (url: string): Promise<Response> => fetch(`${url}/api/flags?limit=1`, { headers: { 'x-management-key': ADMIN_KEY } });

t.test('threads, processes and priorities', { skip: process.platform !== 'linux' ? 'Linux only' : false }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'vexil-threads-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  let n = 0;
  const env = (extra: Record<string, string> = {}) => ({ VEXIL_DATA_DIR: join(dir, `node-${++n}`), VEXIL_BOOTSTRAP_ADMIN_KEY: ADMIN_KEY, ...extra });

  t.test('the front at nice 0; the actor a process of its own, every thread at nice 10 and in SCHED_IDLE', async (t) => {
    const node = await spawnNode(t, { env: env() });
    const pid = node.child.pid!;
    const front = threadsOf(pid);
    t.same(
      { nice: front.find((x) => x.tid === pid)?.nice, policy: front.find((x) => x.tid === pid)?.policy },
      { nice: 0, policy: SCHED_OTHER },
      'the front thread: nice 0, SCHED_OTHER',
    );
    t.ok(front.filter((x) => x.tid !== pid && x.nice === 10).length >= 1, "the front process's helper threads at nice 10");
    t.same(front.filter((x) => x.policy !== SCHED_OTHER), [], 'no thread of the front process in another policy');
    const actor = actorOf(t, pid);
    t.ok(threadsOf(actor).length >= 2, 'the actor process has its own threads (its V8 helpers among them)');
    t.ok(await until(() => threadsOf(actor).every((x) => x.policy === SCHED_IDLE), 5000), 'every thread of the actor process in SCHED_IDLE once it is ready');
    t.same(threadsOf(actor).filter((x) => x.nice !== 10), [], 'every thread of the actor process at nice 10');
    t.equal((await listFlags(node.url)).status, 200, 'management requests answer through it');
    await node.kill('SIGTERM');
    t.ok(await until(() => !alive(actor), 5000), 'a node stopped by SIGTERM stops its actor');
  });

  t.test('a node killed outright leaves no actor behind', async (t) => {
    const node = await spawnNode(t, { env: env() });
    const actor = actorOf(t, node.child.pid!);
    await node.kill('SIGKILL');
    t.ok(await until(() => !alive(actor), 8000), 'the actor process ends when its node is gone');
  });

  t.test('an actor that dies is replaced; management answers again', async (t) => {
    const node = await spawnNode(t, { env: env() });
    const pid = node.child.pid!;
    const first = actorOf(t, pid);
    process.kill(first, 'SIGKILL');
    t.ok(await until(() => !alive(first), 5000), 'the first actor is gone');
    const answered = await until(async () => (await listFlags(node.url).catch(() => null))?.status === 200, 20_000);
    t.ok(answered, 'management answers 200 again, from a new actor');
    const second = actorOf(t, pid);
    t.not(second, first, 'a new actor process');
    t.match(node.stderrTail(), /management actor exited; starting a new one/, 'the replacement is logged');
    t.equal(node.exit, null, 'the node itself kept running');
    await node.kill('SIGTERM');
  });

  t.test('VEXIL_MANAGEMENT_PRIORITY=low: the actor process stays in SCHED_OTHER at nice 10', async (t) => {
    const node = await spawnNode(t, { env: env({ VEXIL_MANAGEMENT_PRIORITY: 'low' }) });
    const actor = actorOf(t, node.child.pid!);
    t.equal((await listFlags(node.url)).status, 200, 'the actor is ready');
    await new Promise((r) => setTimeout(r, 300));
    t.same(
      threadsOf(actor).filter((x) => x.nice !== 10 || x.policy !== SCHED_OTHER),
      [],
      'every thread of the actor process at nice 10, SCHED_OTHER',
    );
    await node.kill('SIGTERM');
  });

  t.test('an actor that starves in SCHED_IDLE is lifted to SCHED_OTHER for a while and answers', { skip: !existsSync('/usr/bin/taskset') ? 'no taskset' : !mayLeaveIdle() ? 'leaving SCHED_IDLE needs CAP_SYS_NICE' : false }, async (t) => {
    // The node and a spinning process of normal priority share one core: SCHED_IDLE gets next to nothing of it.
    const node = await spawnNode(t, { env: env(), taskset: '0' });
    const actor = actorOf(t, node.child.pid!);
    t.ok(await until(() => threadsOf(actor).every((x) => x.policy === SCHED_IDLE), 5000), 'the actor in SCHED_IDLE');
    const spinner = spawn('taskset', ['-c', '0', process.execPath, '-e', 'for (;;);'], { stdio: 'ignore' });
    t.teardown(() => void spinner.kill('SIGKILL'));
    // Work the actor cannot finish on the crumbs SCHED_IDLE leaves it (writes: tens of ms of its
    // CPU), so that it starves for whole seconds whatever else the machine runs. (A one-flag read
    // could finish on those crumbs before the front judged it starving: no lift, a flaky test.)
    const started = Date.now();
    const statuses = await Promise.all(Array.from({ length: 20 }, (_, i) => createFlagRaw(node.url, `starved-${i}`)));
    t.same([...new Set(statuses)], [201], `management requests still answer (${Date.now() - started} ms)`);
    // The lift is logged only once chrt has moved the actor to SCHED_OTHER.
    t.ok(await until(() => /management actor starved in SCHED_IDLE/.test(node.stderrTail()), 5000), 'the actor was lifted to SCHED_OTHER, and it is logged');
    // A lift is short: with nothing in flight the actor goes back to SCHED_IDLE, spinner or not.
    t.ok(await until(() => threadsOf(actor).every((x) => x.policy === SCHED_IDLE), 5000), 'once the lift ends, the actor is back in SCHED_IDLE');
    t.same(threadsOf(actor).filter((x) => x.nice !== 10), [], 'at nice 10');
    spinner.kill('SIGKILL');
    await node.kill('SIGTERM');
  });
});
