import { mkdirSync } from 'node:fs';
import { PGlite } from '@electric-sql/pglite';
import { type Database, type Queryable, translateDbError } from './database.js';

/** Embedded PostgreSQL (WASM) persisted to `dataDir`; `null` keeps it in memory (tests). */
export async function openPGlite(dataDir: string | null): Promise<Database> {
  if (dataDir !== null) mkdirSync(dataDir, { recursive: true });
  const db = dataDir === null ? await PGlite.create() : await PGlite.create(dataDir);
  const wrap = (q: Pick<PGlite, 'query' | 'exec'>): Queryable => ({
    async query<T>(text: string, params?: unknown[]) {
      try {
        return (await q.query<T>(text, params as unknown[])).rows;
      } catch (err) {
        throw translateDbError(err);
      }
    },
    async exec(script: string) {
      try {
        await q.exec(script);
      } catch (err) {
        throw translateDbError(err);
      }
    },
  });
  const root = wrap(db);
  return {
    kind: 'pglite',
    query: root.query,
    exec: root.exec,
    async transaction(fn) {
      try {
        return await db.transaction((tx) => fn(wrap(tx)));
      } catch (err) {
        throw translateDbError(err);
      }
    },
    async close() {
      await db.close();
    },
  };
}
