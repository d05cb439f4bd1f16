/**
 * A node's threads and processes on a shared core (docs/cluster.md), read from /proc on a running
 * node: the front thread and the front process's helper threads (V8's, which collect the front's
 * garbage; libuv's) at nice 0 in SCHED_OTHER; the management actor in a process of its own whose
 * every thread (V8's garbage collection helpers included) runs at VEXIL_MANAGEMENT_NICE (10) in
 * SCHED_OTHER and stays there. The actor's process
 * ends with its node, however the node ends, and a node whose actor dies starts another. Its share
 * of a busy core without CAP_SYS_NICE, and the opt-in SCHED_IDLE, are actor-share.test.ts's.
 * Linux only.
 */
import { readFileSync, rmSync } from 'node:fs';
import t from 'tap';
import { pgliteCopy } from '../../helpers/node.js';
import { spawnNode } from '../../helpers/process.js';
import { actorOf, alive, SCHED_OTHER, threadsOf, until } from '../../helpers/proc.js';
// The actor's nice value by default (VEXIL_MANAGEMENT_NICE).
import { ACTOR_NICE } from '../../../src/management/transport.js';

// Each subtest starts a node process (seconds each on a busy machine).
t.setTimeout(300_000);

const ADMIN_KEY = 'ab'.repeat(32);

const listFlags = (url: string): Promise<Response> => fetch(`${url}/api/flags?limit=1`, { headers: { 'x-management-key': ADMIN_KEY } });

t.test('threads, processes and priorities', { skip: process.platform !== 'linux' ? 'Linux only' : false }, async (t) => {
  // Each node on a copy of the migrated template (test/helpers/node.ts): what is tested here is not a first start.
  const env = async (extra: Record<string, string> = {}) => {
    const dataDir = await pgliteCopy();
    t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
    return { VEXIL_DATA_DIR: dataDir, VEXIL_BOOTSTRAP_ADMIN_KEY: ADMIN_KEY, ...extra };
  };

  t.test('the front at nice 0; the actor a process of its own, every thread at VEXIL_MANAGEMENT_NICE in SCHED_OTHER, and it stays there', async (t) => {
    const node = await spawnNode(t, { env: await env() });
    const pid = node.child.pid!;
    const front = threadsOf(pid);
    t.same(
      { nice: front.find((x) => x.tid === pid)?.nice, policy: front.find((x) => x.tid === pid)?.policy },
      { nice: 0, policy: SCHED_OTHER },
      'the front thread: nice 0, SCHED_OTHER',
    );
    // Its helpers keep its priority: the front waits for them at the end of a scavenge (docs/cluster.md).
    t.ok(front.length >= 2, 'the front process has helper threads');
    t.same(front.filter((x) => x.nice !== 0), [], "every thread of the front process at nice 0, its helpers included");
    t.same(front.filter((x) => x.policy !== SCHED_OTHER), [], 'no thread of the front process in another policy');
    const actor = actorOf(t, pid);
    t.ok(threadsOf(actor).length >= 2, 'the actor process has its own threads (its V8 helpers among them)');
    // Its garbage collection on its main thread alone (transport.ts ACTOR_V8_FLAGS): no helper
    // threads scavenging beside the front on a shared core.
    t.ok(readFileSync(`/proc/${actor}/cmdline`, 'utf8').split('\0').includes('--single-threaded-gc'), 'the actor runs with --single-threaded-gc');
    t.equal((await listFlags(node.url)).status, 200, 'management requests answer through it (the actor is ready)');
    // The old default moved a ready actor to SCHED_IDLE: give it the time that took.
    await new Promise((r) => setTimeout(r, 500));
    t.same(
      threadsOf(actor).filter((x) => x.nice !== ACTOR_NICE || x.policy !== SCHED_OTHER),
      [],
      `every thread of the actor process at nice ${ACTOR_NICE} in SCHED_OTHER, after it is ready too (never SCHED_IDLE)`,
    );
    await node.kill('SIGTERM');
    t.ok(await until(() => !alive(actor), 5000), 'a node stopped by SIGTERM stops its actor');
  });

  t.test('a node killed outright leaves no actor behind', async (t) => {
    const node = await spawnNode(t, { env: await env() });
    const actor = actorOf(t, node.child.pid!);
    await node.kill('SIGKILL');
    t.ok(await until(() => !alive(actor), 8000), 'the actor process ends when its node is gone');
  });

  t.test('an actor that dies is replaced; management answers again', async (t) => {
    const node = await spawnNode(t, { env: await env() });
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

  t.test('VEXIL_MANAGEMENT_NICE sets every actor thread\'s nice value; VEXIL_MANAGEMENT_PRIORITY=low (the old name of nice) keeps SCHED_OTHER', async (t) => {
    const node = await spawnNode(t, { env: await env({ VEXIL_MANAGEMENT_PRIORITY: 'low', VEXIL_MANAGEMENT_NICE: '12' }) });
    const actor = actorOf(t, node.child.pid!);
    t.equal((await listFlags(node.url)).status, 200, 'the actor is ready');
    await new Promise((r) => setTimeout(r, 300));
    t.same(threadsOf(actor).filter((x) => x.nice !== 12 || x.policy !== SCHED_OTHER), [], 'every thread of the actor process at nice 12, SCHED_OTHER');
    await node.kill('SIGTERM');
  });

});
