import { mkdirSync } from 'node:fs';
import { PGlite } from '@electric-sql/pglite';
import { type Database, type Queryable, translated } from './database.js';

/** Embedded PostgreSQL (WASM) persisted to `dataDir`; `null` keeps it in memory (tests). */
export async function openPGlite(dataDir: string | null): Promise<Database> {
  if (dataDir !== null) mkdirSync(dataDir, { recursive: true });
  const db = dataDir === null ? await PGlite.create() : await PGlite.create(dataDir);
  const wrap = (q: Pick<PGlite, 'query' | 'exec'>): Queryable => ({
    query: <T>(text: string, params?: unknown[]) => translated(async () => (await q.query<T>(text, params)).rows),
    exec: (script: string) => translated(async () => void (await q.exec(script))),
  });
  const root = wrap(db);
  return {
    kind: 'pglite',
    query: root.query,
    exec: root.exec,
    transaction: (fn) => translated(() => db.transaction((tx) => fn(wrap(tx)))),
    async close() {
      await db.close();
    },
  };
}
