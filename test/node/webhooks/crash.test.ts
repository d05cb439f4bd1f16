/**
 * Nothing committed is lost (CONTRACT.md 19, docs/webhooks.md "Delivery"): a node process
 * (front and management actor) SIGKILLed right after its writes were answered 2xx, before any
 * was acknowledged by the receiver, restarted on the same data (embedded PGlite), still delivers
 * every message, in commit order, with the webhook-id of the attempt that was cut off.
 */
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { boolVariants, pgliteCopy, randomKey, request } from '../../helpers/node.js';
import { until } from '../../helpers/cluster.js';
import { spawnNode } from '../../helpers/process.js';
import { Receiver, verify, WEBHOOK_ENV } from '../../helpers/webhooks.js';

t.setTimeout(90_000);

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

t.test('a node killed between commit and send: every message delivered after its restart', async (t) => {
  const dir = await pgliteCopy();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const adminKey = randomKey();
  const env = { ...WEBHOOK_ENV, VEXIL_DATA_DIR: dir, VEXIL_BOOTSTRAP_ADMIN_KEY: adminKey, VEXIL_WEBHOOK_TIMEOUT_MS: '1000' };
  const rx = await new Receiver().start();
  t.teardown(() => rx.close());
  // Before the kill the receiver acknowledges nothing: it holds every request.
  let acking = false;
  rx.on('/h', (_req, res) => {
    if (acking) res.writeHead(204).end();
  });

  const p1 = await spawnNode(t, { env });
  const c = await request(p1.url, 'POST', '/api/webhooks', { key: adminKey, body: { url: `${rx.url}/h`, events: ['flag.create'] } });
  t.equal(c.status, 201, c.text);
  const actorPids = execFileSync('pgrep', ['-P', String(p1.child.pid)]).toString().trim().split('\n').map(Number).filter((n) => n > 0);
  t.ok(actorPids.length >= 1, 'the management actor runs as a child process');
  const names = ['k0', 'k1', 'k2', 'k3', 'k4'];
  for (const name of names) {
    const r = await request(p1.url, 'POST', '/api/flags', { key: adminKey, body: { name, project: 'default', type: 'boolean', variants: boolVariants } });
    t.equal(r.status, 201, `${name} created`);
  }
  // Right after the last 2xx: the whole node dies, actor first (it is the one that sends).
  for (const pid of actorPids) process.kill(pid, 'SIGKILL');
  await p1.kill('SIGKILL');
  await until(async () => actorPids.some(alive), (a) => !a, 5000);
  const before = rx.at('/h').length;
  const cut = new Set(rx.at('/h').map((r) => r.headers['webhook-id']));
  // (Attempts of the first message only: the next waits until it is acknowledged.)
  t.ok(cut.size <= 1, `${before} attempt(s) of ${cut.size} message reached the receiver before the kill, none acknowledged`);

  acking = true;
  const p2 = await spawnNode(t, { env });
  t.teardown(() => p2.kill('SIGKILL'));
  // An attempt cut off by the kill is taken again once its lease (2 x timeout + 1 s) runs out.
  await until(async () => rx.at('/h').length - before, (n) => n >= names.length, 20_000, 100);
  await sleep(300);
  const after = rx.at('/h').slice(before);
  const bodies = after.map((r) => verify(c.body.secret, r));
  t.same(bodies.map((b) => b.data.target.name), names, 'every message, once, in commit order');
  if (before > 0) t.equal(after[0].headers['webhook-id'], rx.at('/h')[0].headers['webhook-id'], 'the cut-off message is sent again with the same webhook-id');
});
