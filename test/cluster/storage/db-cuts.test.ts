/**
 * No cut database connection ends the process (docs/storage.md). A real `node dist/src/main.js`
 * (so a crash is an exit) runs writes and reads while its PostgreSQL connections are cut hundreds
 * of times, by `pg_terminate_backend` and by a TCP proxy dropping every socket. postgres.js 3.4.9
 * unpatched fails here with `TypeError: Cannot read properties of null (reading 'write')`
 * (porsager/postgres#1154; scripts/patch-postgres.mjs, docs/storage.md): the driver runs in the
 * management actor's thread, so that kills the actor (and its requests in flight answer 500/503)
 * rather than the process; the test fails on either. `VEXIL_CUTS_MAIN=<path to another build's
 * dist/src/main.js>` runs it against another install (an unpatched copy fails it twice in a row).
 */
import { appendFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import t from 'tap';
import { projectPath } from '../../../src/util/paths.js';
import { postgresBehindProxy, until } from '../../helpers/cluster.js';
import { boolVariants, postgresUrl, randomKey, request, skipWithoutPostgres } from '../../helpers/node.js';
import { spawnNode } from '../../helpers/process.js';

t.test('the installed postgres.js carries the null-socket guard (npm ci runs scripts/patch-postgres.mjs)', async (t) => {
  for (const rel of ['node_modules/postgres/src/connection.js', 'node_modules/postgres/cjs/src/connection.js']) {
    const text = readFileSync(projectPath(rel), 'utf8');
    t.match(text, /if \(socket === null\) \{ \/\* vexil-patch: porsager\/postgres#1154 \*\//, `${rel}: nextWrite guarded`);
    t.equal(text.split('vexil-patch').length - 1, 3, `${rel}: all three edits`);
  }
  const pkg = JSON.parse(readFileSync(projectPath('package.json'), 'utf8'));
  t.equal(pkg.scripts.postinstall, 'node scripts/patch-postgres.mjs');
});

t.test('hundreds of cut connections under load: the process never exits and keeps answering', { skip: skipWithoutPostgres(), timeout: 240_000 }, async (t) => {
  const { proxy, databaseUrl } = await postgresBehindProxy(t);
  const dbName = new URL(databaseUrl).pathname.slice(1);
  const adminKey = randomKey();
  const home = mkdtempSync(join(tmpdir(), 'vexil-cuts-'));
  t.teardown(() => rmSync(home, { recursive: true, force: true }));
  const actorDeaths: string[] = [];
  const node = await spawnNode(t, {
    main: process.env.VEXIL_CUTS_MAIN,
    cwd: home,
    env: { DATABASE_URL: databaseUrl, VEXIL_BOOTSTRAP_ADMIN_KEY: adminKey, VEXIL_RATE_LIMIT_MGMT: '100000', VEXIL_DB_STATEMENT_TIMEOUT_MS: '2000' },
    onStderr: (text) => {
      // The driver runs in the management actor's thread: a crash there ends the actor, not the process.
      for (const line of text.split('\n')) if (/management actor (failed|exited)/.test(line)) actorDeaths.push(line.slice(0, 600));
      if (process.env.VEXIL_TEST_STDERR) appendFileSync(process.env.VEXIL_TEST_STDERR, text);
    },
  });
  const url = node.url;
  const slow: string[] = [];
  const req = async (method: string, path: string, body?: unknown) => {
    const t0 = Date.now();
    const r = await request(url, method, path, { key: adminKey, body }).catch((err) => ({ status: 0, text: String(err) }) as { status: number; text: string });
    if (Date.now() - t0 > 1000) slow.push(`${method} ${path} ${r.status} ${Date.now() - t0}ms ${r.text.slice(0, 100)}`);
    return r;
  };

  const admin = postgres(postgresUrl()!, { max: 1, onnotice: () => {} });
  t.teardown(() => admin.end());

  let running = true;
  const statuses = new Map<number, number>();
  const count = (s: number) => statuses.set(s, (statuses.get(s) ?? 0) + 1);
  let seq = 0;
  /** Flags whose creation answered 503: none of them may have committed. */
  const refused: string[] = [];
  const writer = async () => {
    while (running && node.exit === null) {
      const name = `f-${seq++}`;
      const created = await req('POST', '/api/flags', { name, project: 'default', type: 'boolean', variants: boolVariants });
      count(created.status);
      if (created.status === 503) refused.push(name);
      count((await req('POST', `/api/flags/${name}/configs`, { stage: 'production', enabled: true, defaultVariantKey: 'off', rolloutPercentage: seq % 101 })).status);
    }
  };
  const reader = async () => {
    while (running && node.exit === null) {
      count((await req('GET', '/api/audit?limit=5')).status);
      count((await req('GET', '/api/keys')).status);
    }
  };
  const load = [writer(), writer(), writer(), reader(), reader()];

  let cuts = 0;
  const began = Date.now();
  for (let i = 0; i < 300 && node.exit === null; i++) {
    if (i % 2 === 0) {
      await admin`select pg_terminate_backend(pid) from pg_stat_activity where datname = ${dbName} and pid <> pg_backend_pid()`;
    } else {
      proxy.cut();
      await new Promise((r) => setTimeout(r, 2 + (i % 7)));
      proxy.restore();
    }
    cuts++;
    // Bursts of ten cuts, then a calm moment in which requests get through.
    await new Promise((r) => setTimeout(r, i % 10 === 9 ? 400 : 5 + (i % 13)));
  }
  running = false;
  await Promise.all(load);
  t.comment(`cuts: ${cuts} in ${Date.now() - began} ms; answers by status: ${JSON.stringify(Object.fromEntries(statuses))}`);
  t.comment(`slow answers: ${slow.length}\n${slow.slice(0, 20).join('\n')}`);
  t.equal(node.exit, null, `the process is still running (stderr tail: ${node.stderrTail().slice(-1500)})`);
  t.equal(cuts, 300, 'all 300 cuts done');
  t.same(actorDeaths, [], 'nor did the management actor (the thread that owns the connection) ever die');
  t.ok([...statuses.values()].reduce((a, b) => a + b, 0) > 0, 'requests were answered during the cuts');
  // 404: a configuration write for a flag whose creation was cut.
  t.ok([...statuses.keys()].every((s) => [200, 201, 404, 503].includes(s)), 'every answer is a success, a 404 or a 503: never a 500 or a dropped connection');

  // A write whose connection was lost around its commit answers what really happened: a committed
  // write never answers 503 (its outcome is found by its transaction id).
  const direct = new URL(postgresUrl()!);
  direct.pathname = `/${dbName}`;
  const check = postgres(direct.toString(), { max: 1, onnotice: () => {} });
  const committedAnyway = (await check`select name from flags where name = any(${refused})`).map((r) => r.name as string);
  await check.end();
  t.same(committedAnyway, [], `no create that answered 503 committed (${refused.length} answered 503)`);

  // And it keeps answering once the cuts stop.
  const after = await until(() => req('POST', '/api/flags', { name: 'after-the-storm', project: 'default', type: 'boolean', variants: boolVariants }), (r) => r.status === 201, 15_000, 100);
  t.equal(after.status, 201, 'a write after the cuts succeeds');
  t.equal((await req('GET', '/api/flags/after-the-storm')).status, 200, 'and is read back');
  t.equal(node.exit, null, 'still running');
});
