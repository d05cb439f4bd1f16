/**
 * One snapshot per node, shared (docs/snapshots.md): the workers read the flag data the front thread
 * wrote once into shared memory (src/snapshots/shared-store.ts). Through real HTTP to a real node
 * whose pool is forced on: a one-flag change writes that flag's record only, a worker restart
 * re-sends no data, and after many changes and compactions the workers answer exactly what the
 * front thread answers.
 */
import t from 'tap';
import { authenticate } from '../../../src/auth/authenticate.js';
import { evaluateHere as evaluateForKey } from '../../../src/evaluation/evaluate.js';
import { createFlag, createKey, evaluate, startTestNode, upsertConfig, type TestNode } from '../../helpers/node.js';

t.setTimeout(300_000);

const POOLED = { VEXIL_EVAL_WORKERS: '2', VEXIL_EVAL_HANDOFF: 'always', VEXIL_RATE_LIMIT_EVAL: '1000000', VEXIL_RATE_LIMIT_MGMT: '1000000' };
const FLAGS = 12;
const USERS = ['u1', 'u2', 'u3', 'u4', 'u5', 'u6'];

async function setup(t: Tap.Test): Promise<{ n: TestNode; key: string }> {
  const n = await startTestNode(t, { env: POOLED });
  for (let i = 0; i < FLAGS; i++) {
    if ((await createFlag(n, `s${i}`)).status !== 201) throw new Error('createFlag');
    const rule = { priority: 1, conditions: [{ field: 'plan', operator: '==', value: 'pro' }], allocations: [{ variantKey: 'on', percentage: 100 }] };
    if ((await upsertConfig(n, `s${i}`, { rolloutPercentage: 10 + i * 7, rules: [rule] })).status !== 200) throw new Error('upsertConfig');
  }
  return { n, key: await createKey(n, { permissions: ['CanEvaluate'], application: 'default' }) };
}

/** Every flag for every user through the workers, compared with the front thread's engine. */
async function compareAll(t: Tap.Test, n: TestNode, key: string, what: string): Promise<void> {
  const pool = n.node.runtime.pool!;
  const sent = pool.itemsSent;
  const jobs: { flag: string; userId: string; plan: string }[] = [];
  for (let i = 0; i < FLAGS; i++) for (const userId of USERS) jobs.push({ flag: `s${i}`, userId, plan: userId === 'u1' ? 'pro' : 'free' });
  const answers = await Promise.all(jobs.map((j) => evaluate(n, key, j.flag, { userId: j.userId, stage: 'production', context: { plan: j.plan } }, true)));
  t.equal(pool.itemsSent - sent, jobs.length, `${what}: every evaluation went through the workers`);
  const auth = await authenticate(n.node.runtime, key, () => 'eval');
  let same = 0;
  for (let i = 0; i < jobs.length; i++) {
    const j = jobs[i];
    const inline = evaluateForKey(auth, j.flag, { userId: j.userId, stage: 'production', clientId: null, context: { plan: j.plan } }, Date.now());
    const a = answers[i];
    if (a.status === 200 && a.body.key === inline.key && a.body.reason.code === inline.reason.code) same++;
    else t.fail(`${what}: ${j.flag} ${j.userId}: ${a.status} ${JSON.stringify(a.body)} vs ${JSON.stringify(inline)}`);
  }
  t.equal(same, jobs.length, `${what}: every pooled answer equals the front thread's`);
}

t.test('a one-flag change writes that flag\'s record and one notification', async (t) => {
  const { n, key } = await setup(t);
  const store = n.node.runtime.pool!.store;
  const before = { ...store.stats };
  t.equal((await upsertConfig(n, 's3', { defaultVariantKey: 'on', rules: [] })).status, 200);
  t.equal(store.stats.recordsWritten - before.recordsWritten, 1, 'one record written');
  const bytes = store.stats.bytesWritten - before.bytesWritten;
  t.ok(bytes > 0 && bytes < 2048, `${bytes} bytes written: the flag's record, not the organization`);
  // A worker still starting on a busy machine says hello late and is answered with a replay: not this change's.
  const replays = store.stats.replays - before.replays;
  t.equal(store.stats.messages - before.messages - replays, 1, `one message to the workers${replays > 0 ? ` (besides ${replays} replay for a worker that started late)` : ''}`);
  t.equal(store.stats.generations, before.generations, 'no rewrite of the organization');
  const r = await evaluate(n, key, 's3', { userId: 'x', stage: 'production' });
  t.equal(r.body.key, 'on', 'the next request sees the change (read-your-writes)');
  await compareAll(t, n, key, 'after the change');
});

t.test('a worker restart reads the shared store: no data is sent again', async (t) => {
  const { n, key } = await setup(t);
  await compareAll(t, n, key, 'before the restart');
  const pool = n.node.runtime.pool!;
  const before = { ...pool.store.stats };
  const threads = (pool as unknown as { pool: { threads: { terminate(): Promise<number> }[] } }).pool.threads;
  await Promise.all([...threads].map((w) => w.terminate()));
  // The replacements start, say hello, and get one reference message per organization.
  let ok = false;
  let last = '';
  for (let i = 0; i < 100 && !ok; i++) {
    const r = await evaluate(n, key, 's0', { userId: 'u1', stage: 'production', context: { plan: 'pro' } });
    ok = r.status === 200;
    last = `${r.status} ${r.text}`;
    if (!ok) await new Promise((res) => setTimeout(res, 50));
  }
  t.ok(ok, `the replacement workers answer (${last})`);
  await compareAll(t, n, key, 'after the restart');
  const orgs = n.node.runtime.snapshots.loadedOrgIds().length;
  t.equal(pool.store.stats.bytesWritten, before.bytesWritten, 'nothing written again');
  t.equal(pool.store.stats.recordsWritten, before.recordsWritten);
  const replays = pool.store.stats.replays - before.replays;
  t.ok(replays >= 1 && replays <= orgs * 2, `${replays} reference message(s) for ${orgs} organization(s) and 2 new workers`);
  t.equal(pool.store.stats.messages - before.messages, replays, 'and no other message');
});

t.test('after many changes and compactions the workers answer as the front thread does', async (t) => {
  const { n, key } = await setup(t);
  const store = n.node.runtime.pool!.store;
  // Compact as soon as dead records outweigh the live ones (the default waits for 4 MiB of them).
  (store as unknown as { compactMinBytes: number }).compactMinBytes = 1;
  const before = { ...store.stats };
  for (let i = 0; i < 60; i++) {
    const name = `s${i % FLAGS}`;
    const rule = { priority: 1, conditions: [{ field: 'plan', operator: '==', value: i % 2 === 0 ? 'pro' : 'free' }], allocations: [{ variantKey: 'on', percentage: 100 }] };
    t.equal((await upsertConfig(n, name, { rolloutPercentage: (i * 17) % 100, defaultVariantKey: i % 3 === 0 ? 'on' : 'off', rules: [rule] })).status, 200);
    if (i % 20 === 19) await compareAll(t, n, key, `after ${i + 1} changes`);
  }
  t.ok(store.stats.compactions > before.compactions, `compacted ${store.stats.compactions - before.compactions} times`);
  await compareAll(t, n, key, 'at the end');
});
