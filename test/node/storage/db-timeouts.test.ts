/**
 * Database timeouts on PostgreSQL (docs/storage.md): VEXIL_DB_STATEMENT_TIMEOUT_MS bounds a statement, a write's wait
 * for its organization's lock (503 UNAVAILABLE + Retry-After, nothing written) and a transaction
 * left idle (its locks are released); a COMMIT whose reply is lost answers what really happened
 * (src/storage/postgres.ts).
 */
import postgres from 'postgres';
import t from 'tap';
import { VexilError } from '../../../src/domain/errors.js';
import { openPostgres, postgresTestHooks } from '../../../src/storage/postgres.js';
import { boolVariants, expectProblem, freshPostgresDatabase, skipWithoutPostgres, startTestNode } from '../../helpers/node.js';

const skip = skipWithoutPostgres();

t.test('a write waiting for a locked organization answers 503 within the timeout and writes nothing', { skip }, async (t) => {
  const db = await freshPostgresDatabase();
  t.teardown(db.drop);
  const n = await startTestNode(t, { databaseUrl: db.url, env: { VEXIL_DB_STATEMENT_TIMEOUT_MS: '500' } });
  const flag = (name: string) => ({ name, project: 'default', type: 'boolean', variants: boolVariants });
  t.equal((await n.req('POST', '/api/flags', { key: n.adminKey, body: flag('before') })).status, 201);
  const audit = async () => ((await n.req('GET', '/api/audit?limit=100', { key: n.adminKey })).body as unknown[]).length;
  const events = await audit();

  // Another "node" holds the organization's lock and does not let go.
  const holder = postgres(db.url, { max: 1, onnotice: () => {} });
  t.teardown(() => holder.end({ timeout: 1 }));
  const reserved = await holder.reserve();
  await reserved.unsafe('begin');
  await reserved.unsafe(`select 1 from organizations where name = 'default' for update`);

  const started = Date.now();
  const r = await n.req('POST', '/api/flags', { key: n.adminKey, body: flag('blocked') });
  const took = Date.now() - started;
  expectProblem(t, r, 503, 'UNAVAILABLE', 'the blocked write');
  t.equal(r.headers.get('retry-after'), '1', 'with Retry-After');
  t.ok(took >= 400 && took < 3000, `answered after about the timeout (${took} ms)`);

  await reserved.unsafe('rollback');
  reserved.release();
  t.equal((await n.req('GET', '/api/flags/blocked', { key: n.adminKey })).status, 404, 'the flag was not created');
  t.equal(await audit(), events, 'no audit event');
  t.equal((await n.req('POST', '/api/flags', { key: n.adminKey, body: flag('after') })).status, 201, 'writes go on once the lock is free');
});

t.test('the connection settings: statement, lock and idle-in-transaction timeouts', { skip }, async (t) => {
  const fresh = await freshPostgresDatabase();
  t.teardown(fresh.drop);
  const db = await openPostgres(fresh.url, { statementTimeoutMs: 300, max: 2 });
  t.teardown(() => db.close());
  for (const name of ['statement_timeout', 'lock_timeout', 'idle_in_transaction_session_timeout']) {
    const [row] = await db.query<Record<string, string>>(`show ${name}`);
    t.equal(row[name], '300ms', name);
  }
  // A statement past it fails 503.
  const slow = await db.query('select pg_sleep(2)').then(
    () => null,
    (err: unknown) => err,
  );
  t.ok(slow instanceof VexilError && slow.code === 'UNAVAILABLE' && slow.retryAfter === 1, 'a slow statement is UNAVAILABLE, Retry-After 1');

  // A transaction left idle (a frozen node) loses its locks within the timeout.
  await db.exec('create table t_lock (id int primary key); insert into t_lock values (1);');
  let frozen!: () => void;
  const idle = db.transaction(async (tx) => {
    await tx.query('select 1 from t_lock where id = 1 for update');
    await new Promise<void>((r) => (frozen = r)); // stops here, holding the lock
    await new Promise((r) => setTimeout(r, 1000));
    await tx.query('select 1');
  });
  const idleOutcome = idle.then(
    () => 'committed',
    () => 'failed',
  );
  await new Promise((r) => setTimeout(r, 50));
  const other = postgres(fresh.url, { max: 1, onnotice: () => {} });
  t.teardown(() => other.end({ timeout: 1 }));
  const startedAt = Date.now();
  await other.unsafe(`set lock_timeout = 5000`);
  await other.unsafe('select 1 from t_lock where id = 1 for update');
  const waited = Date.now() - startedAt;
  t.ok(waited < 2000, `another connection gets the lock within about the timeout (${waited} ms)`);
  frozen();
  t.equal(await idleOutcome, 'failed', 'the idle transaction was ended, not committed');
});

t.test('a COMMIT whose reply is lost is reported by what really happened', { skip }, async (t) => {
  const fresh = await freshPostgresDatabase();
  t.teardown(fresh.drop);
  const db = await openPostgres(fresh.url, { statementTimeoutMs: 1000 });
  t.teardown(() => db.close());
  t.teardown(() => (postgresTestHooks.loseCommitReply = null));
  await db.exec('create table t_commit (id int primary key)');

  // Committed, reply lost: the write is reported as committed, with its result.
  postgresTestHooks.loseCommitReply = () => true;
  const result = await db.transaction(async (tx) => {
    await tx.query('insert into t_commit values (1)');
    return 'the result';
  });
  t.equal(result, 'the result', 'the transaction answers its result: it committed');
  t.same(await db.query('select id from t_commit'), [{ id: 1 }], 'and the row is there');

  // A connection error before the work was done is not masked.
  postgresTestHooks.loseCommitReply = null;
  const failed = await db
    .transaction(async (tx) => {
      await tx.query('insert into t_commit values (2)');
      throw Object.assign(new Error('lost'), { code: 'CONNECTION_CLOSED' });
    })
    .then(
      () => null,
      (err: unknown) => err,
    );
  t.ok(failed instanceof VexilError && failed.code === 'UNAVAILABLE', 'a transaction that lost its connection mid-way is 503');
  t.same(await db.query('select id from t_commit order by id'), [{ id: 1 }], 'and wrote nothing');

  // A transaction really killed before its COMMIT: reported as failed (aborted), never as committed.
  const admin = postgres(fresh.url, { max: 1, onnotice: () => {} });
  t.teardown(() => admin.end({ timeout: 1 }));
  const killed = await db
    .transaction(async (tx) => {
      await tx.query('insert into t_commit values (3)');
      const [{ pid }] = await tx.query<{ pid: number }>('select pg_backend_pid() as pid');
      await admin.unsafe('select pg_terminate_backend($1)', [pid]);
      await new Promise((r) => setTimeout(r, 100));
    })
    .then(
      () => 'committed',
      (err: unknown) => (err instanceof VexilError ? err.code : String(err)),
    );
  t.equal(killed, 'UNAVAILABLE', 'a killed transaction answers 503');
  t.same(await db.query('select id from t_commit order by id'), [{ id: 1 }], 'and its row is not there');

  // Killed after its transaction id was read, before COMMIT: asked by its id, it is aborted: 503.
  t.teardown(() => (postgresTestHooks.beforeCommit = null));
  postgresTestHooks.beforeCommit = async (pid) => {
    await admin.unsafe('select pg_terminate_backend($1)', [pid]);
  };
  const started = Date.now();
  const beforeCommit = await db
    .transaction(async (tx) => {
      await tx.query('insert into t_commit values (4)');
      return 'x';
    })
    .then(
      () => 'committed',
      (err: unknown) => (err instanceof VexilError ? err.code : String(err)),
    );
  postgresTestHooks.beforeCommit = null;
  t.equal(beforeCommit, 'UNAVAILABLE', 'killed before COMMIT: 503');
  t.ok(Date.now() - started < 2500, 'resolved without waiting past the timeout');
  t.same(await db.query('select id from t_commit order by id'), [{ id: 1 }], 'and its row is not there');
});
