/**
 * What the image runs, without a container (docs/deploy.md, "The image"): scripts/image-bundle.mjs
 * lays the bundled node out in a temporary folder, scripts/image-prune.mjs trims the packages left
 * beside it, and that folder's dist/src/main.js runs as a process here. Every runtime path the
 * bundle must keep working is taken: two front threads (dist/workers/front.js), an evaluation
 * worker with every evaluation handed to it (Piscina, dist/workers/evaluator.js), the management
 * actor (a forked dist/workers/management.bundle.js), PGlite's initdb on an empty data directory and the
 * migrations from sql/, GraphQL, the OpenAPI document, a refused write, SIGTERM.
 *
 * No podman needed: this always runs (about half a minute), while the image test needs
 * VEXIL_TEST_CONTAINER=1.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { cmdline, childrenOf } from '../../helpers/proc.js';
import { spawnNode } from '../../helpers/process.js';
import { createFlag, createKey, evaluate, randomKey, request, upsertConfig, type TestNode } from '../../helpers/node.js';
import { SHARED_BODY, until } from '../../helpers/cluster.js';
import { projectRoot } from '../../../src/util/paths.js';

const ROOT = projectRoot();

t.test('the bundled node runs every path from its own folder', async (t) => {
  const out = mkdtempSync(join(tmpdir(), 'vexil-bundle-'));
  t.teardown(() => rmSync(out, { recursive: true, force: true }));
  const bundle = spawnSync(process.execPath, ['scripts/image-bundle.mjs', out], { cwd: ROOT, encoding: 'utf8' });
  t.equal(bundle.status, 0, `image-bundle.mjs: ${bundle.stdout}${bundle.stderr}`);
  const prune = spawnSync(process.execPath, ['scripts/image-prune.mjs', join(out, 'node_modules')], { cwd: ROOT, encoding: 'utf8' });
  t.equal(prune.status, 0, `image-prune.mjs: ${prune.stdout}${prune.stderr}`);
  if (existsSync(join(ROOT, 'dist', 'ui'))) cpSync(join(ROOT, 'dist', 'ui'), join(out, 'dist', 'ui'), { recursive: true });

  const packages = readdirSync(join(out, 'node_modules')).flatMap((p) => (p.startsWith('@') ? readdirSync(join(out, 'node_modules', p)).map((q) => `${p}/${q}`) : [p]));
  t.ok(packages.every((p) => ['uWebSockets.js', '@btc-vision/uwebsockets.js', '@electric-sql/pglite', 'piscina'].includes(p) || p.startsWith('@napi-rs/nice')),
    `node_modules holds the packages that cannot be bundled only: ${packages.join(', ')}`);
  t.same(readdirSync(join(out, 'sql')), readdirSync(join(ROOT, 'sql')), 'every migration');

  const dataDir = join(out, 'data');
  const adminKey = randomKey();
  const p = await spawnNode(t, {
    main: join(out, 'dist', 'src', 'main.js'),
    cwd: out,
    startTimeoutMs: 120_000,
    env: { VEXIL_DATA_DIR: dataDir, VEXIL_BOOTSTRAP_ADMIN_KEY: adminKey, VEXIL_FRONT_THREADS: '2', VEXIL_EVAL_WORKERS: '1', VEXIL_EVAL_HANDOFF: 'always' },
  });
  const node = { url: p.url, adminKey, node: undefined as never, req: (m: string, path: string, o?: object) => request(p.url, m, path, o), close: async () => {} } as TestNode;

  const ready = await until(() => request(p.url, 'GET', '/readyz'), (r) => r.status === 200, 60_000, 50);
  t.equal(ready.body?.database, 'up', 'ready on PGlite (initdb and the migrations on an empty folder)');
  t.equal(ready.body?.http, 'uws', 'the native front loaded from the pruned packages');
  const two = await until(() => request(p.url, 'GET', '/healthz'), (h) => h.body?.frontThreads === 2, 30_000, 100);
  t.equal(two.body?.frontThreads, 2, 'two front threads (dist/workers/front.js)');
  const actors = childrenOf(p.child.pid!).filter((c) => cmdline(c).includes(join(out, 'dist', 'workers', 'management.bundle.js')));
  t.equal(actors.length, 1, 'the management actor runs the bundle\'s dist/workers/management.bundle.js');

  t.equal((await createFlag(node, 'b')).status, 201, 'a flag created (through the actor)');
  t.equal((await upsertConfig(node, 'b', { defaultVariantKey: 'on' })).status, 200, 'its configuration written');
  const ek = await createKey(node, { permissions: ['CanEvaluate'], application: 'default' });
  const ev = await until(() => evaluate(node, ek, 'b', SHARED_BODY), (r) => r.body?.key === 'on', 10_000, 100);
  t.equal(ev.body?.key, 'on', 'evaluated in the Piscina worker (VEXIL_EVAL_HANDOFF=always)');
  const gql = await node.req('POST', '/api/graphql', { key: adminKey, body: { query: '{ flags { name } }' } });
  t.same(gql.body?.data?.flags?.map((f: { name: string }) => f.name), ['b'], 'GraphQL answers');
  t.equal((await node.req('GET', '/api/openapi.json')).status, 200, 'the OpenAPI document');
  const bad = await node.req('POST', '/api/flags', { key: adminKey, body: { name: 'x', project: 'default', type: 'nope' } });
  t.equal(bad.status, 400, 'bad input: 400');
  t.match(bad.headers.get('content-type'), /application\/problem\+json/, 'as problem+json');
  t.equal((await node.req('GET', '/api/flags/x', { key: adminKey })).status, 404, 'and nothing written');

  const exit = await p.kill('SIGTERM');
  t.same(exit, { code: 0, signal: null }, 'SIGTERM: exit 0');
  t.notMatch(p.stderrTail(), /evaluation worker error|"level":"(error|fatal)"/, `no error logged: ${p.stderrTail().slice(-2000)}`);
});
