/**
 * A key disabled in the database with no cluster bus to say so (the bus down, or a node without
 * one) stops at the latest after its cache lifetime (CONTRACT 4: "at the latest after the
 * 60-second cache if the bus is down"; docs/api.md, "Keys"): a key in use is re-read in the last
 * quarter of its lifetime (at most 10 s, REFRESH_AHEAD_MS) and refused from the re-read's answer
 * on, and never served past its lifetime without one (src/auth/key-cache.ts). Real nodes on real
 * PostgreSQL, no NATS, the row changed with SQL behind the node's back; VEXIL_KEY_CACHE_TTL_MS is small.
 *
 * With several front threads, a thread is taught a key only until the main thread's re-read
 * window opens (relay.ts, `KeyCache.fresh`), and not at all while it is open, so no thread serves
 * it past the main thread's lifetime of it, and once the re-read finds it disabled no thread does.
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

/** CONTRACT 4: "a disable, rotation or deletion", each made with SQL behind the node's back. */
const changes: [string, (sql: postgres.Sql) => Promise<unknown>][] = [
  ['disabled', (sql) => sql`update management_keys set disabled = true where name = 'revoked-in-db'`],
  // A rotation stores another hash: the old value's re-read finds no key.
  ['rotated', (sql) => sql`update management_keys set key_hash = md5(random()::text) where name = 'revoked-in-db'`],
  ['deleted', (sql) => sql`delete from management_keys where name = 'revoked-in-db'`],
];

for (const [change, make] of changes) t.test(`a key ${change} in the database, no bus: never served past its cache lifetime`, { skip }, async (t) => {
  const TTL = 400;
  const { n, ek, sql } = await setup(t, { VEXIL_KEY_CACHE_TTL_MS: String(TTL) });
  t.equal((await evaluate(n, ek, 'f', body)).status, 200, 'the key serves (and is cached)');
  // The node cached the key when it created it (`remember`): its lifetime ends before cachedBy + TTL.
  const cachedBy = Date.now();
  await make(sql);
  let first: Res | undefined;
  let lastServedStart = -1;
  while (Date.now() - cachedBy < TTL + 5_000) {
    const started = Date.now() - cachedBy;
    const r = await evaluate(n, ek, 'f', body);
    if (r.status !== 200) {
      first = r;
      break;
    }
    lastServedStart = started;
    await sleep(20);
  }
  t.equal(first?.status, 401, 'refused with 401');
  t.equal(first?.body?.code, 'UNAUTHENTICATED');
  // In use, it was re-read in the last quarter of its lifetime; no request sent after it ended was served.
  t.ok(lastServedStart < TTL, `last served a request sent ${lastServedStart} ms after it was cached: within its lifetime (${TTL} ms)`);
  for (let i = 0; i < 10; i++) t.equal((await evaluate(n, ek, 'f', body)).status, 401, `and from then on (${i})`);
});

t.test('a request sent past the lifetime waits for the held re-read, never served the cached record', { skip }, async (t) => {
  // The check above sees a request served past the lifetime only if one happens to start before the
  // re-read answers, and its clock starts after the node cached the key. Here the re-read is held
  // (the table locked), so a request sent well past the lifetime has all the time it needs to be
  // served wrongly: it must wait, and be refused once the re-read finds the key disabled.
  const TTL = 2_000; // its re-read window: the last quarter, 500 ms
  const { n, ek, sql } = await setup(t, { VEXIL_KEY_CACHE_TTL_MS: String(TTL), VEXIL_FRONT_THREADS: '1' });
  const cachedBy = Date.now(); // the node cached the key when it created it (`remember`), before this
  t.equal((await evaluate(n, ek, 'f', body)).status, 200, 'the key serves');
  await sleep(cachedBy + TTL - 400 - Date.now()); // inside the window by 100 ms at least
  let late: Promise<Res> | undefined;
  await sql.begin(async (tx) => {
    await tx`lock table management_keys in access exclusive mode`;
    await tx`update management_keys set disabled = true where name = 'revoked-in-db'`;
    t.equal((await evaluate(n, ek, 'f', body)).status, 200, 'in the window, within its lifetime: served while the re-read waits');
    await sleep(cachedBy + TTL + 200 - Date.now());
    late = evaluate(n, ek, 'f', body);
    const early = await Promise.race([late.then((r) => r.status), sleep(500).then(() => 'waiting')]);
    t.equal(early, 'waiting', 'a request sent 200 ms past the lifetime waits for the re-read');
  });
  const r = await late!;
  t.equal(r.status, 401, 'and is refused by its answer');
  t.equal(r.body?.code, 'UNAUTHENTICATED');
});

t.test('front threads are not taught a key while its re-read is held, nor serve it past its lifetime', { skip: noThreads }, async (t) => {
  const TTL = 4_000; // its re-read window: the last quarter, 1 s
  const { n, ek, sql } = await setup(t, { VEXIL_KEY_CACHE_TTL_MS: String(TTL), VEXIL_FRONT_THREADS: '3' });
  const cachedBy = Date.now(); // the node cached the key when it created it (`remember`), before this
  for (let i = 0; i < 30; i++) t.equal((await onNewConnection(n, ek)).status, 200, `served on some thread (${i})`);
  await sleep(cachedBy + TTL - 800 - Date.now()); // inside the window by 200 ms at least

  // Hold the re-read: the table locked (reads wait) while the key is disabled in the same transaction.
  const threads = new Set<string>();
  let servedUntil = 0;
  await sql.begin(async (tx) => {
    await tx`lock table management_keys in access exclusive mode`;
    await tx`update management_keys set disabled = true where name = 'revoked-in-db'`;
    // Meanwhile the main thread serves its cached record, still within its lifetime, on whichever
    // thread answers; a relayed request's answer must not teach its thread the key.
    while (Date.now() - cachedBy < TTL - 300) {
      const r = await onNewConnection(n, ek);
      t.equal(r.status, 200, 'served within its lifetime while the re-read waits');
      threads.add((r.headers.get('x-request-id') ?? '').split('-')[0]); // each thread numbers its own requests
      servedUntil = Date.now() - cachedBy;
    }
  });
  t.ok(threads.size >= 2, `answered by ${threads.size} threads while the re-read waited (a relayed answer among them)`);
  t.ok(servedUntil > 0 && servedUntil < TTL, `last served ${servedUntil} ms after it was cached, within its lifetime`);
  await sleep(100); // the re-read answers: disabled

  // A thread taught the key while the re-read waited would still serve it now.
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
  await new Promise((r) => setTimeout(r, TTL - 600));
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
  t.ok(last < TTL, `last served a request sent ${last} ms after it was cached: within its lifetime (${TTL} ms)`);
});
