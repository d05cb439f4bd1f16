/**
 * A key this node's management actor creates or rotates is handed to the front's key cache before
 * the answer that shows its value (mailbox `key`; docs/cluster.md, "Management never starves"), so
 * its first evaluation on this node never asks the actor: it answers 200 while the actor process is
 * stopped (SIGSTOP: a starved or busy actor, as far as the front can tell). A key this node did not
 * issue still asks the actor, which the same stop shows: no answer until the actor runs again.
 */
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { boolVariants, pgliteCopy } from '../../helpers/node.js';
import { spawnNode } from '../../helpers/process.js';
import { actorsOf } from '../../helpers/proc.js';

const ADMIN_KEY = 'cd'.repeat(32);
const BODY = JSON.stringify({ userId: 'u1', stage: 'production', context: {} });

async function call(url: string, method: string, path: string, key: string, body?: unknown, timeoutMs = 30_000): Promise<{ status: number; json: any }> {
  const r = await fetch(url + path, {
    method,
    headers: { 'x-management-key': key, 'content-type': 'application/json' },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await r.text();
  return { status: r.status, json: text === '' ? null : JSON.parse(text) };
}

t.test('a key created or rotated here evaluates while the actor is stopped', { skip: process.platform === 'win32' ? 'no SIGSTOP' : false }, async (t) => {
  // A copy of the migrated template (test/helpers/node.ts): what is tested here is not a first start.
  const dir = await pgliteCopy();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const node = await spawnNode(t, { env: { VEXIL_DATA_DIR: dir, VEXIL_BOOTSTRAP_ADMIN_KEY: ADMIN_KEY } });
  const url = node.url;
  t.equal((await call(url, 'POST', '/api/flags', ADMIN_KEY, { name: 'f', project: 'default', type: 'boolean', variants: boolVariants })).status, 201);
  const config = { stage: 'production', enabled: true, defaultVariantKey: 'on', rolloutPercentage: 100, rules: [] };
  t.equal((await call(url, 'POST', '/api/flags/f/configs', ADMIN_KEY, config)).status, 200);
  const created = await call(url, 'POST', '/api/keys', ADMIN_KEY, { name: 'fresh', permissions: ['CanEvaluate'], application: 'default' });
  t.equal(created.status, 201, 'a key created');
  const toRotate = await call(url, 'POST', '/api/keys', ADMIN_KEY, { name: 'rotated', permissions: ['CanEvaluate'], application: 'default' });
  const rotated = await call(url, 'POST', `/api/keys/${toRotate.json.id}/rotate`, ADMIN_KEY);
  t.equal(rotated.status, 200, 'another key rotated');
  t.not(rotated.json.key, toRotate.json.key, 'to a new value');

  const [actor] = actorsOf(node.child.pid!);
  t.ok(actor, 'the management actor process');
  process.kill(actor, 'SIGSTOP');
  t.teardown(() => {
    try {
      process.kill(actor, 'SIGCONT');
    } catch {
      // gone
    }
  });

  // Neither key was used yet: each first evaluation would be a key-cache miss without the handover.
  const first = await call(url, 'POST', '/flags/f', created.json.key, BODY, 5000).catch((e: Error) => ({ status: e.name, json: null }));
  t.same({ status: first.status, variant: first.json?.key }, { status: 200, variant: 'on' }, "the created key's first evaluation answers 200 with the actor stopped");
  const second = await call(url, 'POST', '/flags/f', rotated.json.key, BODY, 5000).catch((e: Error) => ({ status: e.name, json: null }));
  t.same({ status: second.status, variant: second.json?.key }, { status: 200, variant: 'on' }, "the rotated key's new value evaluates too");

  // The control: a key this node did not issue is looked up in the actor, which is stopped.
  const stranger = randomBytes(32).toString('hex');
  const pending = call(url, 'POST', '/flags/f', stranger, BODY, 30_000);
  const early = await Promise.race([pending.then((r) => r.status), new Promise((r) => setTimeout(() => r('no answer'), 1000))]);
  t.equal(early, 'no answer', 'a key this node did not issue waits for the actor (the handover is what answered the others)');
  process.kill(actor, 'SIGCONT');
  t.equal((await pending).status, 401, 'and is answered once the actor runs again');
  await node.kill('SIGTERM');
});
