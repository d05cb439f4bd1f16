/**
 * Flag-list paging (docs/api.md, "Listing and paging") on PostgreSQL, when DATABASE_URL is set (skipped with the
 * reason printed otherwise). The database is created with an ICU collation, in which `order by
 * name` is not byte order ('b_1' < 'b-1' < 'b.1' < 'b1', 'a' < 'A' < 'B'): the list must still sort by byte order,
 * on the node that wrote the flags (its index follows one-flag changes) and on a second node that
 * loads the organization whole from the database (its index is built from rows in the database's
 * order).
 */
import { randomBytes } from 'node:crypto';
import t from 'tap';
import postgres from 'postgres';
import { freshPostgresDatabase, postgresUrl, skipWithoutPostgres, type TestNode } from '../../helpers/node.js';
import { createOrg, must, postFlag, startNode, type TapTest } from '../../helpers/flags.js';
import { APPLICATIONS, expected, seedFlags, walkGraphql, walkRest, type ListParams, type SeenFlag } from '../../helpers/paging.js';

/** A fresh database whose default collation is ICU en-US; the server's default one if ICU is missing. */
async function icuDatabase(t: TapTest): Promise<string> {
  const base = postgresUrl()!;
  const name = `vexil_paging_${process.pid}_${randomBytes(4).toString('hex')}`;
  const admin = postgres(base, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`create database ${name} template template0 locale_provider icu icu_locale 'en-US' locale 'C.UTF-8'`);
  } catch (err) {
    await admin.end();
    t.comment(`ICU collation unavailable (${(err as Error).message}): using the server's default collation`);
    const db = await freshPostgresDatabase();
    t.teardown(db.drop);
    return db.url;
  }
  await admin.end();
  t.teardown(async () => {
    const a = postgres(base, { max: 1, onnotice: () => {} });
    await a.unsafe(`drop database if exists ${name} with (force)`);
    await a.end();
  });
  const u = new URL(base);
  u.pathname = '/' + name;
  return u.toString();
}

const CASES: [ListParams, number][] = [
  [{}, 7],
  [{}, 1000],
  [{ application: 'billing' }, 3],
  [{ archived: 'false', type: 'boolean' }, 4],
  [{ q: 'CHECKOUT' }, 2],
  [{ q: 'a', application: 'Mobile' }, 5],
];

async function walkAll(t: TapTest, n: TestNode, key: string, flags: SeenFlag[], what: string): Promise<void> {
  for (const [p, limit] of CASES) {
    const want = expected(flags, p).map((f) => f.name);
    const rest = await walkRest(n, key, p, limit, want.length);
    t.same(rest.problems, [], `${what} ${JSON.stringify(p)} limit ${limit}: REST pages are consistent`);
    t.same(rest.names, want, `${what} ${JSON.stringify(p)} limit ${limit}: REST gives the list in byte order`);
    const gql = await walkGraphql(n, key, p, limit, want.length);
    t.same(gql.problems, [], `${what} ${JSON.stringify(p)}: GraphQL pages are consistent`);
    t.same(gql.names, want, `${what} ${JSON.stringify(p)}: GraphQL gives the same list`);
  }
}

t.test('flag-list paging on PostgreSQL', { skip: skipWithoutPostgres() }, async (t) => {
  const url = await icuDatabase(t);
  const n1 = await startNode(t, { databaseUrl: url });
  const org = await createOrg(n1, ['development', 'production'], APPLICATIONS);
  const flags = await seedFlags(t, n1, org.adminKey, 50, 7);
  for (const name of ['a', 'A', 'B', 'b-1', 'b.1', 'b_1', 'b1', 'Zz', '0a']) {
    if (flags.some((f) => f.name === name)) continue;
    flags.push(must(t, await postFlag(n1, org.adminKey, name, { description: 'collation probe checkout' }), 201, name).body as SeenFlag);
  }

  const sql = postgres(url, { max: 1, onnotice: () => {} });
  const dbOrder = (await sql`select name from flags order by name`).map((r) => r.name as string);
  await sql.end();
  const byteOrder = [...dbOrder].sort();
  t.comment(`the database's own order ${JSON.stringify(dbOrder) === JSON.stringify(byteOrder) ? 'is' : 'is not'} byte order`);

  await walkAll(t, n1, org.adminKey, flags, 'the writing node');

  // A second node loads the organization whole, in the database's order.
  const n2 = await startNode(t, { databaseUrl: url });
  const r = must(t, await n2.req('GET', '/api/flags', { key: org.adminKey }), 200, 'list on the second node');
  t.same(
    r.body.map((f: SeenFlag) => f.name),
    byteOrder.filter((x) => flags.some((f) => f.name === x)),
    'byte order, whatever the collation',
  );
  await walkAll(t, n2, org.adminKey, flags, 'a node that loaded the organization');
});
