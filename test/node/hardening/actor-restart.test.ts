/**
 * An actor that dies is replaced, and the gap leaks nothing (docs/cluster.md, "The boundary"):
 * the management actor process is SIGKILLed while evaluations (their key cached on the front) and
 * management requests keep coming. Every evaluation answers 200: they never reach the actor. Every
 * management request answers 200, or 503 with Retry-After while no actor can run it (in flight
 * when it died, or sent before the new one had opened its database); never 500. Once the new
 * actor is up, management reads and writes answer again. Linux only (the actor is found in /proc).
 */
import { rmSync } from 'node:fs';
import t from 'tap';
import { boolVariants, pgliteCopy } from '../../helpers/node.js';
import { actorsOf, alive, until } from '../../helpers/proc.js';
import { spawnNode } from '../../helpers/process.js';

const ADMIN_KEY = 'cd'.repeat(32);

interface Answer {
  status: number;
  retryAfter: string | null;
  /** When it was sent, in ms since the load started. */
  at: number;
}

const send = async (url: string, path: string, init: RequestInit = {}, key = ADMIN_KEY): Promise<Omit<Answer, 'at'> & { body: string }> => {
  const r = await fetch(`${url}${path}`, { ...init, headers: { 'x-management-key': key, 'content-type': 'application/json', ...init.headers } });
  return { status: r.status, retryAfter: r.headers.get('retry-after'), body: await r.text() };
};

const evaluate = (url: string, key: string) => send(url, '/flags/steady', { method: 'POST', body: JSON.stringify({ userId: 'u1', stage: 'production' }) }, key);
const listFlags = (url: string) => send(url, '/api/flags?limit=1');
const createFlag = (url: string, name: string) =>
  send(url, '/api/flags', { method: 'POST', body: JSON.stringify({ name, project: 'default', type: 'boolean', variants: boolVariants }) });

t.test('SIGKILL of the management actor under load', { skip: process.platform !== 'linux' ? 'Linux only' : false }, async (t) => {
  // A copy of the migrated template (test/helpers/node.ts): what is tested here is not a first start.
  const dir = await pgliteCopy();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const node = await spawnNode(t, {
    env: { VEXIL_DATA_DIR: dir, VEXIL_BOOTSTRAP_ADMIN_KEY: ADMIN_KEY, VEXIL_RATE_LIMIT_MGMT: '100000', VEXIL_RATE_LIMIT_EVAL: '1000000' },
  });
  const url = node.url;
  t.equal((await createFlag(url, 'steady')).status, 201, 'a flag to evaluate');
  const config = { stage: 'production', enabled: true, defaultVariantKey: 'off', rolloutPercentage: 100 };
  t.equal((await send(url, '/api/flags/steady/configs', { method: 'POST', body: JSON.stringify(config) })).status, 200, 'its configuration');
  const created = await send(url, '/api/keys', { method: 'POST', body: JSON.stringify({ name: 'evaluator', permissions: ['CanEvaluate'], application: 'default' }) });
  t.equal(created.status, 201, 'an evaluation key');
  const evalKey = (JSON.parse(created.body) as { key: string }).key;
  t.equal((await evaluate(url, evalKey)).status, 200, 'an evaluation (the key now cached on the front)');
  const [first] = actorsOf(node.child.pid!);
  t.ok(first !== undefined, 'the actor process');

  const started = Date.now();
  const evaluations: Answer[] = [];
  const management: Answer[] = [];
  let running = true;
  let failures = 0;
  const loop = async (into: Answer[], run: () => Promise<Omit<Answer, 'at'>>) => {
    while (running) {
      const at = Date.now() - started;
      try {
        const { status, retryAfter } = await run();
        into.push({ status, retryAfter, at });
      } catch {
        failures += 1;
        into.push({ status: 0, retryAfter: null, at });
      }
    }
  };
  const loops = [
    ...Array.from({ length: 4 }, () => loop(evaluations, () => evaluate(url, evalKey))),
    ...Array.from({ length: 2 }, () => loop(management, () => listFlags(url))),
  ];

  await new Promise((r) => setTimeout(r, 500));
  const killedAt = Date.now() - started;
  process.kill(first, 'SIGKILL');
  t.ok(await until(() => !alive(first), 5000), 'the first actor is gone');
  // Sent the moment it is gone: no new actor can have opened its database yet, so these meet the gap.
  const probes = await Promise.all(Array.from({ length: 4 }, async () => ({ ...(await listFlags(url)), at: Date.now() - started })));
  management.push(...probes);
  // Recovered: a new actor process, and a management request sent after the kill answered 200.
  const recovered = await until(() => actorsOf(node.child.pid!).some((p) => p !== first) && management.some((a) => a.at > killedAt && a.status === 200), 30_000);
  t.ok(recovered, 'a new actor answers management requests');
  await new Promise((r) => setTimeout(r, 300));
  running = false;
  await Promise.all(loops);

  t.equal(failures, 0, 'no request failed to get an answer');
  const evalStatuses = new Map<number, number>();
  for (const a of evaluations) evalStatuses.set(a.status, (evalStatuses.get(a.status) ?? 0) + 1);
  t.same([...evalStatuses.keys()], [200], `every evaluation answered 200 (${evaluations.length}: ${JSON.stringify([...evalStatuses])})`);
  t.ok(evaluations.some((a) => a.at > killedAt), 'evaluations ran through the gap');

  t.pass(`management requests sent in the gap answered ${JSON.stringify(probes.map((a) => a.status))}`);
  const wrong = management.filter((a) => !(a.status === 200 || (a.status === 503 && a.retryAfter !== null)));
  t.same(wrong, [], 'every management request answered 200, or 503 with Retry-After');

  t.equal((await listFlags(url)).status, 200, 'management reads answer from the new actor');
  t.equal((await createFlag(url, 'after-restart')).status, 201, 'and writes');
  t.equal((await evaluate(url, evalKey)).status, 200, 'evaluation still answers');
  t.match(node.stderrTail(), /management actor exited; starting a new one/, 'the replacement is logged');
  await node.kill('SIGTERM');
});
