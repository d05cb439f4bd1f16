/**
 * The management actor's share of a busy core (docs/cluster.md, "Management never starves"): a
 * node without CAP_SYS_NICE (as in a default container), pinned to a core that a spinning process
 * of normal priority keeps busy, still answers management requests, its actor at VEXIL_MANAGEMENT_NICE
 * (10) in SCHED_OTHER with nothing to lift. And the opt-in VEXIL_MANAGEMENT_PRIORITY=idle: SCHED_IDLE
 * once ready, lifted back to SCHED_OTHER while it starves (which needs CAP_SYS_NICE). Linux only.
 */
import { spawn } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import t from 'tap';
import { boolVariants, pgliteCopy } from '../../helpers/node.js';
import { spawnNode } from '../../helpers/process.js';
import { actorOf, hasSysNice, SCHED_IDLE, SCHED_OTHER, threadsOf, until } from '../../helpers/proc.js';
// The actor's nice value by default (VEXIL_MANAGEMENT_NICE).
import { ACTOR_NICE } from '../../../src/management/transport.js';

// Each subtest starts a node process (seconds each on a busy machine).
t.setTimeout(300_000);

const ADMIN_KEY = 'ab'.repeat(32);
const SETPRIV = ['/usr/bin/setpriv', '/bin/setpriv'].find((p) => existsSync(p));

/** POST /api/flags with the admin key: the answer's status (or the error's name). */
const createFlagRaw = (url: string, name: string): Promise<number | string> =>
  fetch(`${url}/api/flags`, {
    method: 'POST',
    headers: { 'x-management-key': ADMIN_KEY, 'content-type': 'application/json' },
    body: JSON.stringify({ name, project: 'default', type: 'boolean', variants: boolVariants }),
    signal: AbortSignal.timeout(60_000),
  }).then((r) => r.status, (e: Error) => e.name);

const listFlags = (url: string): Promise<Response> => fetch(`${url}/api/flags?limit=1`, { headers: { 'x-management-key': ADMIN_KEY } });

t.test('the actor on a busy core', { skip: process.platform !== 'linux' ? 'Linux only' : false }, async (t) => {
  // Each node on a copy of the migrated template (test/helpers/node.ts): what is tested here is not a first start.
  const env = async (extra: Record<string, string> = {}) => {
    const dataDir = await pgliteCopy();
    t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
    return { VEXIL_DATA_DIR: dataDir, VEXIL_BOOTSTRAP_ADMIN_KEY: ADMIN_KEY, ...extra };
  };

  t.test(
    'without CAP_SYS_NICE, on a core a spinning process of normal priority keeps busy, the actor keeps its share: management answers',
    { skip: !existsSync('/usr/bin/taskset') ? 'no taskset' : SETPRIV === undefined ? 'no setpriv (util-linux)' : false },
    async (t) => {
      // As in a default container: the node cannot leave SCHED_IDLE nor lower a nice value.
      const node = await spawnNode(t, { env: await env(), taskset: '0', wrap: [SETPRIV!, '--bounding-set', '-sys_nice', '--inh-caps', '-sys_nice'] });
      t.notOk(hasSysNice(node.child.pid!), 'the node runs without CAP_SYS_NICE');
      const actor = actorOf(t, node.child.pid!);
      t.equal((await listFlags(node.url)).status, 200, 'the actor is ready');
      const spinner = spawn('taskset', ['-c', '0', process.execPath, '-e', 'for (;;);'], { stdio: 'ignore' });
      t.teardown(() => void spinner.kill('SIGKILL'));
      // Writes: tens of ms of the actor's CPU each. In SCHED_IDLE beside the spinner the actor got
      // next to nothing of the core (a weight of 3 against 1024) and these did not answer for minutes.
      const started = Date.now();
      const statuses = await Promise.all(Array.from({ length: 20 }, (_, i) => createFlagRaw(node.url, `shared-${i}`)));
      t.same([...new Set(statuses)], [201], `management requests answer (${Date.now() - started} ms)`);
      t.same(
        threadsOf(actor).filter((x) => x.nice !== ACTOR_NICE || x.policy !== SCHED_OTHER),
        [],
        `the actor stayed at nice ${ACTOR_NICE} in SCHED_OTHER (nothing to lift, no capability needed)`,
      );
      t.notMatch(node.stderrTail(), /SCHED_IDLE|cannot be lifted/, 'nothing about SCHED_IDLE is logged');
      spinner.kill('SIGKILL');
      await node.kill('SIGTERM');
    },
  );

  t.test('VEXIL_MANAGEMENT_PRIORITY=idle: every thread of the actor process in SCHED_IDLE once it is ready', async (t) => {
    const node = await spawnNode(t, { env: await env({ VEXIL_MANAGEMENT_PRIORITY: 'idle' }) });
    const actor = actorOf(t, node.child.pid!);
    t.ok(await until(() => threadsOf(actor).every((x) => x.policy === SCHED_IDLE), 5000), 'every thread of the actor process in SCHED_IDLE once it is ready');
    t.same(threadsOf(actor).filter((x) => x.nice !== ACTOR_NICE), [], `every thread of the actor process at nice ${ACTOR_NICE}`);
    t.equal((await listFlags(node.url)).status, 200, 'management requests answer through it');
    await node.kill('SIGTERM');
  });

  t.test('VEXIL_MANAGEMENT_PRIORITY=idle: an actor that starves in SCHED_IDLE is lifted to SCHED_OTHER for a while and answers', { skip: !existsSync('/usr/bin/taskset') ? 'no taskset' : !hasSysNice() ? 'leaving SCHED_IDLE needs CAP_SYS_NICE' : false }, async (t) => {
    // The node and a spinning process of normal priority share one core: SCHED_IDLE gets next to nothing of it.
    const node = await spawnNode(t, { env: await env({ VEXIL_MANAGEMENT_PRIORITY: 'idle' }), taskset: '0' });
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
    t.same(threadsOf(actor).filter((x) => x.nice !== ACTOR_NICE), [], `at nice ${ACTOR_NICE}`);
    spinner.kill('SIGKILL');
    await node.kill('SIGTERM');
  });
});
