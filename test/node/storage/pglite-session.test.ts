/**
 * storage/pglite.ts: the embedded database's statements are prepared once by text and run as one
 * protocol round trip. Checked against PGlite's own `query` (the same rows, the same types), and
 * for what a session must keep: a transaction holds the session until it ends, a statement that
 * fails aborts its transaction, a statement whose table changed shape is prepared again, and the
 * cache of prepared statements stays bounded.
 */
import t from 'tap';
import { PGlite } from '@electric-sql/pglite';
import { VexilError } from '../../../src/domain/errors.js';
import { openPGlite, PGliteSession, TransactionAborted } from '../../../src/storage/pglite.js';

const SCHEMA = `create table items (id int primary key, name text not null unique, doc jsonb, tags jsonb, at timestamptz, big bigint, ok boolean, n numeric, raw json);`;

t.test('rows and types equal PGlite\'s own query, first run and prepared', async (t) => {
  const db = await PGlite.create();
  t.teardown(() => db.close());
  await db.exec(SCHEMA);
  const session = new PGliteSession(db);
  const at = new Date('2026-11-29T10:00:00.123Z');
  const insert = `insert into items (id, name, doc, tags, at, big, ok, n, raw) values ($1, $2, $3::jsonb, $4::jsonb, $5, $6, $7, $8, $9::text::json) returning *`;
  const a = session.query(insert, [1, 'one', JSON.stringify({ a: [1, 'x', null] }), '["t1","t2"]', at, '9007199254740993', true, '1.50', '{"b":2,"a":1}']);
  const b = (await db.query(insert, [2, 'two', JSON.stringify({ a: [1, 'x', null] }), '["t1","t2"]', at, '9007199254740993', true, '1.50', '{"b":2,"a":1}'])).rows;
  t.same({ ...a[0], id: 0, name: '' }, { ...(b[0] as object), id: 0, name: '' }, 'an insert returning every type');
  t.type((a[0] as { at: unknown }).at, Date, 'timestamptz is a Date');
  t.same((a[0] as { raw: unknown }).raw, { b: 2, a: 1 }, 'json keeps its field order');
  const select = 'select id, name, doc, tags, at, big, ok, n, raw, null::text as nothing, $1::int + 1 as computed from items where id = any($2::int[]) order by id';
  for (let run = 0; run < 3; run++) {
    t.same(session.query(select, [41, [1, 2]]), (await db.query(select, [41, [1, 2]])).rows, `a select, run ${run}`);
  }
  t.same(session.query('select 1 as x where false'), [], 'no rows');
  t.same(session.query('update items set ok = $1 where id = $2', [false, 1]), [], 'a statement without rows');
  t.same(session.query('select ok from items where id = 1'), [{ ok: false }]);
});

t.test('a text is prepared once; the cache is bounded and closes what it drops', async (t) => {
  const db = await PGlite.create();
  t.teardown(() => db.close());
  const session = new PGliteSession(db, 3);
  const prepared = () => session.query<{ n: number }>('select count(*)::int as n from pg_prepared_statements')[0].n;
  session.query('select $1::int as v', [1]);
  t.equal(session.prepared, 1, 'the statement');
  for (let i = 0; i < 5; i++) t.same(session.query('select $1::int as v', [i]), [{ v: i }]);
  t.equal(session.prepared, 1, 'running a text again prepares nothing');
  t.equal(prepared(), 2, 'the server holds it and the count\'s own');
  session.query('select 1 as a');
  session.query('select 2 as b');
  t.equal(session.prepared, 3, 'at most the cache size');
  t.equal(prepared(), 3, 'the dropped statement was closed on the server');
  t.same(session.query('select $1::int as v', [7]), [{ v: 7 }], 'a dropped text is prepared again');
});

t.test('a statement whose table changed shape is prepared again', async (t) => {
  const db = await PGlite.create();
  t.teardown(() => db.close());
  const session = new PGliteSession(db);
  session.exec('create table s (a int); insert into s values (1)');
  t.same(session.query('select * from s'), [{ a: 1 }]);
  session.exec('alter table s add column b text default \'x\'');
  t.same(session.query('select * from s'), [{ a: 1, b: 'x' }], 'the new column is there');
  session.exec('deallocate all');
  t.same(session.query('select * from s'), [{ a: 1, b: 'x' }], 'after outside SQL deallocated it');
});

t.test('errors keep their SQLSTATE and leave the session usable', async (t) => {
  const db = await openPGlite(null);
  t.teardown(() => db.close());
  await db.exec(SCHEMA);
  await db.query('insert into items (id, name) values ($1, $2)', [1, 'one']);
  const conflict = await db.query('insert into items (id, name) values ($1, $2)', [2, 'one']).catch((e: unknown) => e);
  t.ok(conflict instanceof VexilError && conflict.code === 'CONFLICT', 'unique violation → CONFLICT');
  await t.rejects(db.query('select nope from items'), { code: '42703' }, 'an unknown column at prepare');
  await t.rejects(db.query('select 1/$1::int as x', [0]), { code: '22012' }, 'a division by zero at execute');
  t.same(await db.query('select count(*)::int as n from items'), [{ n: 1 }], 'the session goes on');
});

t.test('transactions: commit, rollback, an aborted transaction, a closed handle', async (t) => {
  const db = await openPGlite(null);
  t.teardown(() => db.close());
  await db.exec(SCHEMA);
  const count = async () => (await db.query<{ n: number }>('select count(*)::int as n from items'))[0].n;

  t.equal(await db.transaction(async (tx) => {
    await tx.query('insert into items (id, name) values (1, $1)', ['a']);
    await tx.query('insert into items (id, name) values (2, $1)', ['b']);
    return 'done';
  }), 'done');
  t.equal(await count(), 2, 'committed together');

  await t.rejects(db.transaction(async (tx) => {
    await tx.query('insert into items (id, name) values (3, $1)', ['c']);
    throw new Error('changed my mind');
  }), /changed my mind/);
  t.equal(await count(), 2, 'a throw rolls back');

  let kept: { query: (text: string) => Promise<unknown> } | undefined;
  const aborted = await db.transaction(async (tx) => {
    kept = tx;
    await tx.query('insert into items (id, name) values (4, $1)', ['d']);
    await tx.query('insert into items (id, name) values (5, $1)', ['d']).catch(() => 'swallowed');
  }).catch((e: unknown) => e);
  t.ok(aborted instanceof TransactionAborted, 'a failed statement aborts the transaction, even when its error was caught');
  t.equal(await count(), 2, 'nothing of it committed');
  await t.rejects(kept!.query('select 1'), /Transaction is closed/, 'its handle is closed');
});

t.test('a transaction holds the session: a statement outside it waits for its end', async (t) => {
  const db = await openPGlite(null);
  t.teardown(() => db.close());
  await db.exec(SCHEMA);
  const order: string[] = [];
  let inside!: () => void;
  const entered = new Promise<void>((r) => (inside = r));
  const tx = db.transaction(async (q) => {
    await q.query('insert into items (id, name) values (1, $1)', ['in the transaction']);
    inside();
    await new Promise((r) => setTimeout(r, 50));
    order.push('transaction ends');
    throw new Error('rolled back');
  });
  await entered;
  const outside = db.query('insert into items (id, name) values (2, $1) returning id', ['outside']).then((rows) => {
    order.push('outside ran');
    return rows;
  });
  await t.rejects(tx, /rolled back/);
  t.same(await outside, [{ id: 2 }]);
  t.same(order, ['transaction ends', 'outside ran'], 'the outside statement ran after the transaction');
  t.same(await db.query('select id from items order by id'), [{ id: 2 }], 'it was not rolled back with the transaction');
});

t.test('closing: what was asked before the close is answered; what was asked after is refused, not left waiting', async (t) => {
  const db = await openPGlite(null);
  await db.exec(SCHEMA);
  let release!: () => void;
  const tx = db.transaction(async (q) => {
    await q.query('insert into items (id, name) values (1, $1)', ['a']);
    await new Promise<void>((r) => (release = r));
  });
  await new Promise((r) => setImmediate(r));
  const before = db.query('select 1 as x').catch((e: unknown) => e);
  const closing = db.close();
  const after = db.query('select 2 as x').catch((e: unknown) => e);
  release();
  await tx;
  await closing;
  t.same(await before, [{ x: 1 }], 'a statement queued before the close runs first');
  t.match(await after, /closed/, 'a statement queued behind the close is refused');
  await t.rejects(db.query('select 1'), /closed/, 'a statement after the close is refused');
});

t.test('every execution is planned for its parameters: no generic plan is kept (the embedded database never analyses)', async (t) => {
  const db = await openPGlite(null);
  t.teardown(() => db.close());
  await db.exec(SCHEMA);
  const text = 'select id from items where name = $1';
  for (let i = 0; i < 12; i++) await db.query(text, [`n${i}`]);
  const [plans] = await db.query<{ generic_plans: number; custom_plans: number }>(
    'select generic_plans::int, custom_plans::int from pg_prepared_statements where statement = $1',
    [text],
  );
  t.same(plans, { generic_plans: 0, custom_plans: 12 }, 'twelve custom plans, no generic one');
});
