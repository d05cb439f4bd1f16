/**
 * First start (README.md, "Quick start"): an empty database gets organization `default` (subscription
 * active, environments development and production, application default) and one org-wide key with
 * Admin, CanRead and CanWrite. Its value is VEXIL_BOOTSTRAP_ADMIN_KEY when set (idempotent across
 * restarts), otherwise a fresh key printed once on standard output and never again.
 *
 * The printed-key cases run the real entry point, `node dist/src/main.js`, as a child process.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, rmSync } from 'node:fs';
import t, { type Test } from 'tap';
import { openPGlite } from '../../../src/storage/pglite.js';
import { projectPath } from '../../../src/util/paths.js';
import { requireFreshDist } from '../../helpers/dist.js';
import {
  createFlag,
  expectProblem,
  HEX64,
  HEX64_ANYWHERE,
  pgliteCopy,
  randomKey,
  request,
  startTestNode,
  testDataDir,
  upsertConfig,
} from '../../helpers/node.js';

// Several real nodes per file (PGlite start-up is seconds each): more than tap's default 120 s on a busy machine.
t.setTimeout(300_000);

const MAIN = projectPath('dist', 'src', 'main.js');

/** An empty data directory: these tests are of a node's very first start (initdb and every migration). */
const tempDir = (t: Test, prefix: string): string => {
  const dir = testDataDir(prefix);
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
};

interface Proc {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  url: Promise<string>;
  exit: Promise<number | null>;
  stop(): Promise<number | null>;
}

/** The environment of the child: none of ours that would change what it does. */
function childEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (k.startsWith('VEXIL_') || k === 'DATABASE_URL' || k === 'NATS_URL' || k === 'PORT' || k === 'HOST') continue;
    env[k] = v;
  }
  return { ...env, HOST: '127.0.0.1', PORT: '0', VEXIL_EVAL_WORKERS: '0', VEXIL_LOG_LEVEL: 'info', ...extra };
}

function startProcess(t: Test, extra: Record<string, string>): Proc {
  const child = spawn(process.execPath, [MAIN], { cwd: projectPath(), env: childEnv(extra), stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const url = new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no listening line within 60 s; stdout: ${out}; stderr: ${err}`)), 60_000);
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8');
      const m = /Vexil listening on (http:\/\/127\.0\.0\.1:(\d+))\n/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    void exit.then((code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code} before listening; stdout: ${out}; stderr: ${err}`));
    });
  });
  url.catch(() => {});
  child.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString('utf8')));
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
    child.kill('SIGTERM');
    const killer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    const code = await exit;
    clearTimeout(killer);
    return code;
  };
  t.teardown(stop);
  return { child, stdout: () => out, stderr: () => err, url, exit, stop };
}

const allHex64 = (text: string): string[] => text.match(new RegExp(HEX64_ANYWHERE.source, 'g')) ?? [];

t.test('VEXIL_BOOTSTRAP_ADMIN_KEY: org default and an org-wide Admin key, idempotent across restarts', async (t) => {
  const dir = await pgliteCopy();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const adminKey = randomKey();
  const n = await startTestNode(t, { dataDir: dir, adminKey });
  t.equal(n.node.generatedAdminKey, null, 'a configured key is not "generated" (so never printed)');

  const keys = await n.req('GET', '/api/keys', { key: adminKey });
  t.equal(keys.status, 200, 'the configured key works and manages keys');
  t.equal(keys.body.length, 1, 'exactly one key');
  t.same([...keys.body[0].permissions].sort(), ['Admin', 'CanRead', 'CanWrite'], 'Admin, CanRead, CanWrite');
  t.match(keys.body[0], { application: null, environment: null, disabled: false, rotatedAt: null });

  const orgs = await n.node.db.query<Record<string, unknown>>('select name, subscription_active, environments, applications from organizations');
  t.same(orgs, [{ name: 'default', subscription_active: true, environments: ['development', 'production'], applications: ['default'] }], 'organization default as documented');

  // The same, seen over HTTP: a new flag gets both environments; `default` is the only application.
  const f = await createFlag(n, 'checkout');
  t.equal(f.status, 201, 'the key writes (CanWrite)');
  t.same(f.body.environments, ['development', 'production']);
  t.equal(f.body.project, 'default');
  expectProblem(t, await createFlag(n, 'elsewhere', { project: 'web' }), 400, 'BAD_REQUEST', 'no other application');
  t.equal((await upsertConfig(n, 'checkout', { stage: 'development', defaultVariantKey: 'on' })).status, 200);
  t.equal((await n.req('GET', '/api/flags', { key: adminKey })).status, 200, 'the key reads (CanRead)');
  expectProblem(t, await n.req('POST', '/flags/checkout', { key: adminKey, body: { userId: 'u', stage: 'development' } }), 403, 'FORBIDDEN', 'org-wide, so it cannot evaluate');
  const flagBefore = (await n.req('GET', '/api/flags/checkout', { key: adminKey })).body;
  await n.close();

  // Restart on the same data directory with the same setting: nothing new is created.
  const again = await startTestNode(t, { dataDir: dir, adminKey });
  t.equal(again.node.generatedAdminKey, null);
  const db = again.node.db;
  t.same(await db.query('select name from organizations'), [{ name: 'default' }], 'still one organization');
  t.equal((await db.query('select id from management_keys')).length, 1, 'still one key');
  const keysAgain = await again.req('GET', '/api/keys', { key: adminKey });
  t.equal(keysAgain.status, 200, 'the key still works');
  t.same(keysAgain.body, keys.body, 'the same key record');
  t.same((await again.req('GET', '/api/flags/checkout', { key: adminKey })).body, flagBefore, 'data kept');
  await again.close();

  // A different value on an existing database is not applied: bootstrap only runs on an empty one.
  const other = randomKey();
  const third = await startTestNode(t, { dataDir: dir, adminKey: other });
  expectProblem(t, await third.req('GET', '/api/keys', { key: other }), 401, 'UNAUTHENTICATED', 'a later, different bootstrap key');
  t.equal((await third.req('GET', '/api/keys', { key: adminKey })).status, 200, 'the original key still works');
  t.equal((await third.node.db.query('select id from organizations')).length, 1);
});

t.test('without VEXIL_BOOTSTRAP_ADMIN_KEY the first start prints a fresh key once; restarts print none', async (t) => {
  requireFreshDist();
  const dir = tempDir(t, 'vexil-boot-');
  const first = startProcess(t, { VEXIL_DATA_DIR: dir });
  const url = await first.url;
  const printed = allHex64(first.stdout());
  t.equal(printed.length, 1, 'exactly one key on stdout');
  const key = printed[0];
  t.match(key, HEX64);
  t.match(first.stdout(), new RegExp(`\\n${key}\\n`), 'on a line of its own');
  t.notOk(first.stderr().includes(key), 'not in the log (stderr)');
  const keys = await request(url, 'GET', '/api/keys', { key });
  t.equal(keys.status, 200, 'the printed key works');
  t.equal(keys.body.length, 1);
  t.same([...keys.body[0].permissions].sort(), ['Admin', 'CanRead', 'CanWrite']);
  t.match(keys.body[0], { application: null, environment: null });
  t.equal((await request(url, 'POST', '/api/flags', { key, body: { name: 'kept', project: 'default', type: 'boolean', variants: [{ key: 'on', value: true, valueType: 'boolean' }] } })).status, 201);
  t.equal(await first.stop(), 0, 'SIGTERM stops it cleanly');
  t.equal(allHex64(first.stdout()).length, 1, 'still printed once, also at shutdown');

  const second = startProcess(t, { VEXIL_DATA_DIR: dir });
  const url2 = await second.url;
  t.same(allHex64(second.stdout()), [], 'no key printed on restart');
  t.notOk(second.stderr().includes(key));
  t.equal((await request(url2, 'GET', '/api/keys', { key })).status, 200, 'the first key still works');
  t.equal((await request(url2, 'GET', '/api/flags/kept', { key })).status, 200, 'data kept');
  t.equal(await second.stop(), 0);

  const db = await openPGlite(dir);
  try {
    t.same(await db.query('select name from organizations'), [{ name: 'default' }], 'one organization after two starts');
    t.equal((await db.query('select id from management_keys')).length, 1, 'one key');
  } finally {
    await db.close();
  }
});

t.test('the spawned node with VEXIL_BOOTSTRAP_ADMIN_KEY never prints the key', async (t) => {
  requireFreshDist();
  const dir = await pgliteCopy();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const key = randomKey();
  const p = startProcess(t, { VEXIL_DATA_DIR: dir, VEXIL_BOOTSTRAP_ADMIN_KEY: key });
  const url = await p.url;
  t.same(allHex64(p.stdout()), [], 'no key on stdout');
  t.notOk(p.stderr().includes(key), 'nor in the log');
  t.equal((await request(url, 'GET', '/api/keys', { key })).status, 200, 'the configured key works');
  t.equal(await p.stop(), 0);
});

t.test('invalid settings stop the process with a message naming the variable', async (t) => {
  requireFreshDist();
  const dir = tempDir(t, 'vexil-badenv-');
  const upper = randomKey().toUpperCase();
  const cases: [string, Record<string, string>, RegExp][] = [
    ['PORT not a number', { PORT: 'eighty' }, /PORT/],
    ['PORT out of range', { PORT: '70000' }, /PORT/],
    ['bootstrap key in uppercase', { VEXIL_BOOTSTRAP_ADMIN_KEY: upper }, /VEXIL_BOOTSTRAP_ADMIN_KEY/],
    ['bootstrap key too short', { VEXIL_BOOTSTRAP_ADMIN_KEY: 'abc123' }, /VEXIL_BOOTSTRAP_ADMIN_KEY/],
  ];
  for (const [what, env, pattern] of cases) {
    const p = startProcess(t, { VEXIL_DATA_DIR: dir, ...env });
    const code = await p.exit;
    t.equal(code, 2, `${what}: exit code 2`);
    t.match(p.stderr(), pattern, `${what}: stderr names the variable`);
    t.notOk(p.stderr().includes(upper), `${what}: the secret value is not echoed`);
    t.notMatch(p.stdout(), /listening/, `${what}: never listened`);
  }
  t.same(readdirSync(dir), [], 'nothing was written to the data directory');
});
