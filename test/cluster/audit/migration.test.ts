/**
 * Migration 002 (the audit log) on a database created by migration 001 only, with data in it:
 * the node applies 002 at start, the old organization, keys, flags and configurations stay
 * readable, the log starts empty and records new writes. PGlite, and PostgreSQL when
 * DATABASE_URL is set.
 */
import { rmSync } from 'node:fs';
import t from 'tap';
import { freshPostgresDatabase, randomKey, skipWithoutPostgres, startTestNode, boolVariants, testDataDir, type TestNodeOptions } from '../../helpers/node.js';
import { bootstrap } from '../../../src/features/organizations/bootstrap.js';
import { getOrgByName } from '../../../src/features/organizations/store.js';
import { upsertConfig } from '../../../src/features/flags/store.js';
import type { Database } from '../../../src/storage/database.js';
import { loadMigrations, migrate } from '../../../src/storage/migrate.js';
import { openPGlite } from '../../../src/storage/pglite.js';
import { openPostgres } from '../../../src/storage/postgres.js';
import { readLog } from '../../helpers/audit.js';

t.setTimeout(300_000);

/** A version-1 database as an older Vexil left it: the default organization, a flag, a configuration. */
async function seedVersion1(t: typeof import('tap').default, db: Database, adminKey: string): Promise<void> {
  const v1 = loadMigrations().filter((m) => m.version === 1);
  t.same(await migrate(db, v1), [1], 'only migration 001 applied');
  await bootstrap(db, adminKey);
  const org = (await getOrgByName(db, 'default'))!;
  await db.transaction(async (tx) => {
    // In version 1's columns (today's store writes columns later migrations added, such as 011's purpose).
    await tx.query(
      `insert into flags (org_id, name, project, type, description, tags, is_archived, variants, environments, dependencies)
       values ($1, 'legacy', 'default', 'boolean', 'from version 1', $2::text::jsonb, false, $3::text::jsonb, $4::text::jsonb, '[]'::jsonb)`,
      [org.id, JSON.stringify(['old']), JSON.stringify(boolVariants), JSON.stringify(['development', 'production'])],
    );
    await upsertConfig(tx, org.id, 'legacy', {
      stage: 'production', clientId: null, enabled: true, defaultVariantKey: 'on', rolloutPercentage: 100, rules: [],
      activeFrom: null, activeUntil: null, enrollmentCutoff: null,
    });
  });
  const tables = await db.query<{ n: number }>(`select count(*)::int as n from information_schema.tables where table_name = 'audit_events'`);
  t.equal(Number(tables[0].n), 0, 'no audit table before 002');
}

async function checkUpgraded(t: typeof import('tap').default, opts: TestNodeOptions, adminKey: string): Promise<void> {
  const n = await startTestNode(t, { ...opts, adminKey });
  const versions = await n.node.db.query<{ version: number }>('select version from schema_migrations order by version');
  t.same(versions.map((v) => Number(v.version)).filter((v) => v <= 2), [1, 2], 'the node applied 002 at start');

  const flag = await n.req('GET', '/api/flags/legacy', { key: adminKey });
  t.equal(flag.status, 200, 'the version-1 key still authenticates and the flag is readable');
  t.match(flag.body, { name: 'legacy', description: 'from version 1', tags: ['old'], configs: [{ stage: 'production', defaultVariantKey: 'on' }] }, 'with its configuration');
  t.same(await readLog(t, n, adminKey), [], 'the log starts empty');

  t.equal((await n.req('PUT', '/api/flags/legacy', { key: adminKey, body: { description: 'after 002' } })).status, 200, 'an old flag can be updated');
  const log = await readLog(t, n, adminKey);
  t.equal(log.length, 1, 'and the update is recorded');
  t.match(log[0], { action: 'flag.update', target: { type: 'flag', name: 'legacy' }, application: 'default', before: { description: 'from version 1' }, after: { description: 'after 002' } }, 'with the old flag as before');
  await n.close();

  // A restart applies nothing again and keeps the log.
  const again = await startTestNode(t, { ...opts, adminKey });
  t.equal((await readLog(t, again, adminKey)).length, 1, 'the log survives a restart');
  await again.close();
}

t.test('PGlite', async (t) => {
  const dir = testDataDir('vexil-audit-v1-');
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const adminKey = randomKey();
  const db = await openPGlite(dir);
  await seedVersion1(t, db, adminKey);
  await db.close();
  await checkUpgraded(t, { dataDir: dir }, adminKey);
});

t.test('PostgreSQL', { skip: skipWithoutPostgres() }, async (t) => {
  const fresh = await freshPostgresDatabase();
  t.teardown(fresh.drop);
  const adminKey = randomKey();
  const db = await openPostgres(fresh.url);
  await seedVersion1(t, db, adminKey);
  await db.close();
  await checkUpgraded(t, { databaseUrl: fresh.url }, adminKey);
});
