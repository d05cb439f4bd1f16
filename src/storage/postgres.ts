import postgres from 'postgres';
import { type Database, type Queryable, translated } from './database.js';

/** A real PostgreSQL server through postgres.js. */
export async function openPostgres(url: string, opts: { max?: number } = {}): Promise<Database> {
  const sql = postgres(url, {
    max: opts.max ?? 10,
    onnotice: () => {},
    connect_timeout: 5,
    types: {
      // Our SQL passes jsonb parameters as JSON text (as PGlite expects); postgres.js would
      // JSON-encode that text a second time and store a JSON string.
      jsonText: {
        to: 3802,
        from: [114, 3802],
        serialize: (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v)),
        parse: (s: string) => JSON.parse(s),
      },
    },
  });
  const wrap = (q: postgres.Sql | postgres.TransactionSql): Queryable => ({
    query: <T>(text: string, params?: unknown[]) =>
      translated(async () => (await q.unsafe(text, (params ?? []) as postgres.ParameterOrJSON<never>[])) as unknown as T[]),
    exec: (script: string) => translated(async () => void (await q.unsafe(script))),
  });
  const root = wrap(sql);
  // Fail fast when the server is not there.
  await root.query('select 1');
  return {
    kind: 'postgres',
    query: root.query,
    exec: root.exec,
    transaction: (fn) => translated(async () => (await sql.begin((tx) => fn(wrap(tx)))) as Awaited<ReturnType<typeof fn>>),
    async close() {
      await sql.end({ timeout: 5 });
    },
  };
}
