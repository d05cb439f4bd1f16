/**
 * A key disabled in the database with no cluster bus to say so (the bus down, or a node without
 * one) stops at the latest after its cache lifetime (CONTRACT 4: "at the latest after the
 * 60-second cache if the bus is down"; docs/api.md, "Keys"): the node re-reads an expired key and
 * refuses it from the re-read's answer on (src/auth/key-cache.ts). Real nodes on real PostgreSQL,
 * no NATS, the row changed with SQL behind the node's back; VEXIL_KEY_CACHE_TTL_MS is small.
 *
 * With several front threads, a thread is taught only keys within their lifetime on the main
 * thread (relay.ts, `KeyCache.fresh`): a key served past its lifetime while its re-read runs is
 * not handed to a thread for a lifetime of its own, so once the re-read finds it disabled no
 * thread serves it.
 */
import t from 'tap';
import type { Test } from 'tap';
import postgres from 'postgres';
import { createFlag, createKey, evaluate, freshPostgresDatabase, upsertConfig, type Res, type TestNode, startTestNode } from '../../helpers/node.js';
import { loadNativeUws } from '../../../src/http/uws.js';

const skip = !process.env.DATABASE_URL ? 'DATABASE_URL is not set: PostgreSQL key revocation skipped' : false;
const noThreads = skip || (loadNativeUws().ok && process.env.VEXIL_HTTP_FRONT !== 'node' ? false : 'no native uWebSockets.js front here');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const body = { userId: 'u', stage: 'production' };

async function setup(t: Test, env: Record<string, string>) {
  const db = await freshPostgresDatabase();
  t.teardown(db.drop);
  // No NATS_URL: nothing tells the node about a change made in the database.
  const n = await startTestNode(t, { databaseUrl: db.url, env: { VEXIL_RATE_LIMIT_AUTH_FAILURES: '100000', ...env } });
  t.equal((await createFlag(n, 'f')).status, 201);
  t.equal((await upsertConfig(n, 'f', { defaultVariantKey: 'on' })).status, 200);
  const ek = await createKey(n, { name: 'revoked-in-db', permissions: ['CanEvaluate'], application: 'default' });
  const sql = postgres(db.url, { max: 2, onnotice: () => {} });
  t.teardown(() => sql.end());
  return { n, ek, sql };
}

/** An evaluation on a connection of its own (with several front threads, any thread may answer it). */
const onNewConnection = (n: TestNode, ek: string): Promise<Res> =>
  n.req('POST', '/flags/f', { key: ek, body, headers: { connection: 'close' } });

t.test('a key disabled in the database, no bus: refused within its lifetime and one re-read', { skip }, async (t) => {
  const TTL = 400;
  const { n, ek, sql } = await setup(t, { VEXIL_KEY_CACHE_TTL_MS: String(TTL) });
  t.equal((await evaluate(n, ek, 'f', body)).status, 200, 'the key serves (and is cached)');
  const cachedBy = Date.now();
  await sql`update management_keys set disabled = true where name = 'revoked-in-db'`;
  let first: Res | undefined;
  let refusedAt = Infinity;
  while (Date.now() - cachedBy < TTL + 5_000) {
    const r = await evaluate(n, ek, 'f', body);
    if (r.status !== 200) {
      first = r;
      refusedAt = Date.now();
      break;
    }
    await sleep(20);
  }
  t.equal(first?.status, 401, 'refused with 401');
  t.equal(first?.body?.code, 'UNAUTHENTICATED');
  // Lifetime, then the first request past it starts the re-read and the next one sees its answer.
  const after = refusedAt - cachedBy;
  t.ok(after <= TTL + 1_000, `refused ${after} ms after it was cached (lifetime ${TTL} ms + one re-read)`);
  for (let i = 0; i < 10; i++) t.equal((await evaluate(n, ek, 'f', body)).status, 401, `and from then on (${i})`);
});

t.test('front threads are not taught a key served past its lifetime while its re-read is held', { skip: noThreads }, async (t) => {
  const TTL = 1_000;
  const { n, ek, sql } = await setup(t, { VEXIL_KEY_CACHE_TTL_MS: String(TTL), VEXIL_FRONT_THREADS: '3' });
  for (let i = 0; i < 30; i++) t.equal((await onNewConnection(n, ek)).status, 200, `served on some thread (${i})`);
  await sleep(TTL + 200); // every copy of the key, the main thread's and the threads', past its lifetime

  // Hold the re-read: the table locked (reads wait) while the key is disabled in the same transaction.
  let heldFor = 0;
  const threads = new Set<string>();
  const held = sql.begin(async (tx) => {
    await tx`lock table management_keys in access exclusive mode`;
    await tx`update management_keys set disabled = true where name = 'revoked-in-db'`;
    const from = Date.now();
    // Meanwhile the node serves the expired record (REFRESH_GRACE_MS) on whichever thread answers;
    // a relayed request's answer must not teach its thread the key.
    for (let i = 0; i < 20; i++) {
      const r = await onNewConnection(n, ek);
      t.equal(r.status, 200, `served while the re-read waits (${i})`);
      threads.add((r.headers.get('x-request-id') ?? '').split('-')[0]); // each thread numbers its own requests
    }
    heldFor = Date.now() - from;
  });
  await held;
  t.ok(threads.size >= 2, `answered by ${threads.size} threads while the re-read waited (a relayed answer among them)`);
  t.ok(heldFor < 10_000, `the re-read was held ${heldFor} ms, within REFRESH_GRACE_MS`);
  await sleep(100); // the re-read answers: disabled

  // Within a lifetime of the held requests: a thread taught the key then would still serve it.
  const statuses: number[] = [];
  for (let i = 0; i < 30; i++) statuses.push((await onNewConnection(n, ek)).status);
  t.same(statuses, statuses.map(() => 401), 'every thread refuses the key once the re-read found it disabled');
});

t.test('a front thread serves a key no longer than the main thread\'s cache lifetime of it', { skip: noThreads }, async (t) => {
  const TTL = 1_500;
  const { n, ek, sql } = await setup(t, { VEXIL_KEY_CACHE_TTL_MS: String(TTL), VEXIL_FRONT_THREADS: '3' });
  // The node cached the key when it created it (key-cache.ts `remember`), no later than now.
  const cachedBy = Date.now();
  await sql`update management_keys set disabled = true where name = 'revoked-in-db'`;
  // The threads first see the key late in that lifetime: each learns it from the main thread then.
  await new Promise((r) => setTimeout(r, TTL - 400));
  const seen: { startedMs: number; status: number }[] = [];
  while (Date.now() - cachedBy < 2 * TTL + 300) {
    const startedMs = Date.now() - cachedBy;
    seen.push({ startedMs, status: (await onNewConnection(n, ek)).status });
  }
  const served = seen.filter((s) => s.status === 200);
  const firstRefused = seen.findIndex((s) => s.status === 401);
  t.ok(served.length > 0, `served late in its lifetime (${served.length} of ${seen.length})`);
  t.ok(firstRefused >= 0, 'then refused');
  t.same(seen.slice(firstRefused).filter((s) => s.status !== 401), [], 'on every thread from the first refusal on');
  const last = served.length === 0 ? 0 : served[served.length - 1].startedMs;
  t.ok(last <= TTL + 500, `last served ${last} ms after it was cached: within its lifetime (${TTL} ms) and one re-read`);
});
