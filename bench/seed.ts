/**
 * Seeds a Vexil database directly, for the flag-count scaling benchmark: creating 100,000 flags
 * through the REST API would take minutes, one `insert … select … from generate_series` takes
 * seconds. Run it while no service uses the database, then start the service on it.
 *
 *   node dist/bench/seed.js --data-dir DIR | --database-url URL --flags N --admin-key HEX
 *   (--flags 0: migrate and bootstrap only)
 *     [--prefix bench-flag-]
 *
 * Uses the project's own code to open (openPGlite / openPostgres), migrate and bootstrap the
 * database exactly as a first start would (organization `default`, the admin key), then inserts
 * flags `<prefix>0` … `<prefix>N-1` in one statement and their configurations in another, and
 * bumps the organization's version once. Each flag is the one the REST seeding of bench/scenarios.ts
 * creates: boolean, project `default`, variants on=true / off=false, every environment of the
 * organization; one `production` configuration (enabled, default `off`, rollout 100, one rule
 * priority 1: country == "NL" → 100 % `on`).
 *
 * Prints one JSON line on stdout: {orgId, flags, version, ms: {open, migrate, insert, total}}.
 */
import { pathToFileURL } from 'node:url';
import { bootstrap } from '../src/features/organizations/bootstrap.js';
import type { Database } from '../src/storage/database.js';
import { migrate } from '../src/storage/migrate.js';
import { openPGlite } from '../src/storage/pglite.js';
import { openPostgres } from '../src/storage/postgres.js';

export interface SeedResult {
  orgId: string;
  flags: number;
  version: number;
  ms: { open: number; migrate: number; insert: number; total: number };
}

const VARIANTS = '[{"key":"on","value":true,"valueType":"boolean"},{"key":"off","value":false,"valueType":"boolean"}]';
const CONDITIONS = '[{"field":"country","operator":"==","value":"NL"}]';
const ALLOCATIONS = '[{"variantKey":"on","percentage":100}]';
/** Rule ids only need to be unique within a configuration: every flag's single rule is `r_bench`. */
const RULES = `[{"id":"r_bench","priority":1,"conditions":${CONDITIONS},"allocations":${ALLOCATIONS}}]`;

/** Seeds `flags` flags into an open, migrated, bootstrapped database. */
export async function seedFlags(db: Database, flags: number, prefix: string): Promise<{ orgId: string; version: number }> {
  if (!/^[A-Za-z0-9][A-Za-z0-9_.-]*$/.test(prefix)) throw new Error(`bad flag name prefix ${prefix}`);
  const orgs = await db.query<{ id: string; environments: unknown }>(
    "select id, environments::text as environments from organizations where name = 'default'",
  );
  if (orgs.length === 0) throw new Error('organization "default" not found (bootstrap did not run?)');
  const orgId = orgs[0].id;
  const envs = String(orgs[0].environments).replace(/'/g, "''");
  // Only integers and checked identifiers are inlined; the organization id is a parameter.
  const n = Math.floor(flags);
  return db.transaction(async (tx) => {
    await tx.query(
      `insert into flags (org_id, name, project, type, description, tags, is_archived, variants, environments, dependencies)
       select $1, '${prefix}' || i, 'default', 'boolean', 'benchmark flag', '["bench"]'::jsonb, false,
              '${VARIANTS}'::jsonb, '${envs}'::jsonb, '[]'::jsonb
       from generate_series(0, ${n - 1}) as i`,
      [orgId],
    );
    await tx.query(
      `insert into flag_configs (org_id, flag_name, stage, client_id, enabled, default_variant_key, rollout_percentage, rules)
       select $1, '${prefix}' || i, 'production', '', true, 'off', 100,
              '${RULES}'::jsonb
       from generate_series(0, ${n - 1}) as i`,
      [orgId],
    );
    const v = await tx.query<{ version: number }>('update organizations set version = version + 1 where id = $1 returning version', [orgId]);
    return { orgId, version: Number(v[0].version) };
  });
}

async function orgOnly(db: Database): Promise<{ orgId: string; version: number }> {
  const rows = await db.query<{ id: string; version: number }>("select id, version from organizations where name = 'default'");
  if (rows.length === 0) throw new Error('organization "default" not found (bootstrap did not run?)');
  return { orgId: rows[0].id, version: Number(rows[0].version) };
}

export async function seed(target: { dataDir?: string; databaseUrl?: string }, flags: number, adminKey: string, prefix = 'bench-flag-'): Promise<SeedResult> {
  const t0 = performance.now();
  const db = target.databaseUrl !== undefined ? await openPostgres(target.databaseUrl, { max: 2 }) : await openPGlite(target.dataDir ?? null);
  const t1 = performance.now();
  try {
    await migrate(db);
    await bootstrap(db, adminKey);
    const t2 = performance.now();
    // 0 flags: migrate and bootstrap only (the runner's template data directory).
    const { orgId, version } = flags > 0 ? await seedFlags(db, flags, prefix) : await orgOnly(db);
    const t3 = performance.now();
    return {
      orgId,
      flags,
      version,
      ms: { open: Math.round(t1 - t0), migrate: Math.round(t2 - t1), insert: Math.round(t3 - t2), total: Math.round(t3 - t0) },
    };
  } finally {
    await db.close();
  }
}

async function cli(): Promise<void> {
  const args = process.argv.slice(2);
  const get = (name: string): string | undefined => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : undefined;
  };
  const dataDir = get('--data-dir');
  const databaseUrl = get('--database-url');
  const flags = Number(get('--flags') ?? '10');
  const adminKey = get('--admin-key') ?? '';
  if ((dataDir === undefined) === (databaseUrl === undefined)) throw new Error('give exactly one of --data-dir and --database-url');
  if (!Number.isInteger(flags) || flags < 0) throw new Error('--flags needs an integer >= 0');
  if (!/^[0-9a-f]{64}$/.test(adminKey)) throw new Error('--admin-key needs 64 lowercase hex characters');
  const r = await seed({ dataDir, databaseUrl }, flags, adminKey, get('--prefix') ?? 'bench-flag-');
  process.stdout.write(`${JSON.stringify(r)}\n`);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  cli().then(
    () => process.exit(0),
    (err: unknown) => {
      process.stderr.write(`seed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.exit(1);
    },
  );
}
