import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Database } from './database.js';
import { projectPath } from '../util/paths.js';

/** Arbitrary constant: the advisory lock that serialises migrations across nodes. */
const MIGRATION_LOCK = 0x7665_7869; // "vexi"

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/** `sql/NNN_name.sql`, in version order. */
export function loadMigrations(dir = projectPath('sql')): Migration[] {
  return readdirSync(dir)
    .map((file) => /^(\d+)_([\w-]+)\.sql$/.exec(file))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ version: Number(m[1]), name: m[2], sql: readFileSync(join(dir, m[0]), 'utf8') }))
    .sort((a, b) => a.version - b.version);
}

/**
 * Applies every migration not yet applied, each in its own transaction, holding an advisory lock
 * so that nodes starting together against one PostgreSQL do not race. Returns the versions applied.
 */
/**
 * Migrations are not bounded by VEXIL_DB_STATEMENT_TIMEOUT_MS (an index build may take minutes, and
 * a node waits for another node's migration): these settings last for their transaction only.
 */
const UNBOUNDED = "select set_config('statement_timeout', '0', true), set_config('lock_timeout', '0', true)";

export async function migrate(db: Database, migrations = loadMigrations()): Promise<number[]> {
  // Under the lock too: concurrent `create table if not exists` on PostgreSQL can fail with a
  // unique violation (pg_type) when several nodes start together on a fresh database.
  await db.transaction(async (tx) => {
    await tx.query(UNBOUNDED);
    await tx.query('select pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
    await tx.exec(`create table if not exists schema_migrations (
      version integer primary key, name text not null, applied_at timestamptz not null default now())`);
  });
  const applied: number[] = [];
  for (const m of migrations) {
    const done = await db.transaction(async (tx) => {
      await tx.query(UNBOUNDED);
      await tx.query('select pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
      const rows = await tx.query('select 1 from schema_migrations where version = $1', [m.version]);
      if (rows.length > 0) return false;
      await tx.exec(m.sql);
      await tx.query('insert into schema_migrations (version, name) values ($1, $2)', [m.version, m.name]);
      return true;
    });
    if (done) applied.push(m.version);
  }
  return applied;
}
