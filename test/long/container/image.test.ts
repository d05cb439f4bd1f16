/**
 * The container image (Dockerfile; docs/deploy.md; issue 32), built and run on this machine with
 * podman and runc. No registry is reachable here, so test/long/container/standin.sh first builds a
 * stand-in for the official base image and tags it with the official name; the Dockerfile is then
 * built with `--pull=never`. Two containers run with the runtime's default capabilities against
 * this machine's PostgreSQL (a fresh database) and NATS, with `--network=host` on free ports.
 *
 * Slow when cold (a debootstrap, an `npm ci` inside the build): it runs only with
 * VEXIL_TEST_CONTAINER=1, and skips, saying why, without podman, runc, debootstrap, root,
 * DATABASE_URL or NATS_URL. Timings of each step are printed as comments.
 */
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import t from 'tap';
import { freePort, propagates, seedShared, until } from '../../helpers/cluster.js';
import { createFlag, freshPostgresDatabase, randomKey, request, type TestNode } from '../../helpers/node.js';
import { projectRoot } from '../../../src/util/paths.js';

const ROOT = projectRoot();
const PODMAN = ['podman', '--runtime', 'runc', '--cgroup-manager=cgroupfs'];
const IMAGE = 'localhost/vexil:test';
const onPath = (cmd: string): boolean => spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;

function skipReason(): string | false {
  if (process.env.VEXIL_TEST_CONTAINER !== '1') return 'VEXIL_TEST_CONTAINER=1 runs the container image test (cold: a debootstrap and an image build, minutes)';
  const missing = ['podman', 'runc', 'debootstrap'].filter((c) => !onPath(c));
  if (missing.length > 0) return `${missing.join(', ')} not installed (apt-get install -y podman runc debootstrap): container image test skipped`;
  if (process.getuid?.() !== 0) return 'podman here runs as root: container image test skipped';
  if (!process.env.DATABASE_URL || !process.env.NATS_URL) return 'DATABASE_URL and NATS_URL are needed: container image test skipped';
  return false;
}
const skip = skipReason();
if (skip) console.log(`# ${skip}`);
// Cold: a debootstrap and an image build with `npm ci` inside (minutes); warm: about a minute.
t.setTimeout(20 * 60_000);

/**
 * Runs a command to its end: its standard output, and both streams (podman writes notices such as
 * the missing systemd timer for health checks on its standard error).
 */
function run(cmd: string[], opts: { timeoutMs?: number } = {}): Promise<{ code: number | null; stdout: string; all: string }> {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd[0], cmd.slice(1), { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let all = '';
    p.stdout.on('data', (d) => ((stdout += d), (all += d)));
    p.stderr.on('data', (d) => (all += d));
    const timer = setTimeout(() => p.kill('SIGKILL'), opts.timeoutMs ?? 600_000);
    p.on('error', reject);
    p.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, all });
    });
  });
}
async function must(cmd: string[], timeoutMs?: number): Promise<string> {
  const r = await run(cmd, { timeoutMs });
  if (r.code !== 0) throw new Error(`${cmd.join(' ')} exited ${r.code}:\n${r.all.slice(-4000)}`);
  return r.stdout;
}
const podman = (...args: string[]): string[] => [...PODMAN, ...args];
/** /readyz of a container once it answers 200 (or its last answer after 60 s), polled every 20 ms: the embedded test signals the moment it first answers. */
const readyz = (url: string): Promise<{ status: number; body: any }> =>
  until(() => request(url, 'GET', '/readyz').catch(() => ({ status: 0, body: undefined }) as { status: number; body: any }), (r) => r.status === 200, 60_000, 20);
const seconds = (t0: number): string => `${((performance.now() - t0) / 1000).toFixed(1)} s`;

/** A running container on a free port: a TestNode view (fixtures call only `req` and `adminKey`). */
interface Box extends TestNode {
  name: string;
  port: number;
}

t.test('the image: stand-in base, build, two containers on PostgreSQL and NATS', { skip }, async (t) => {
  const t0 = performance.now();
  const standin = await must(['bash', join(ROOT, 'test/long/container/standin.sh')], 900_000);
  const baseTag = standin.trim().split('\n').pop()!;
  t.match(baseTag, /^docker\.io\/library\/node:(22|24)-trixie-slim$/, `stand-in base tagged with the official name (${seconds(t0)})`);
  t.comment(`stand-in base: ${seconds(t0)}`);

  const t1 = performance.now();
  // --format docker: OCI images have no HEALTHCHECK. --network=host: npm ci reaches the registry.
  await must(podman('build', '--pull=never', '--network=host', '--format', 'docker', '-t', IMAGE, '.'), 900_000);
  t.comment(`image build: ${seconds(t1)}`);

  const size = Number((await must(podman('image', 'inspect', '--format', '{{.Size}}', IMAGE))).trim());
  const baseSize = Number((await must(podman('image', 'inspect', '--format', '{{.Size}}', baseTag))).trim());
  t.comment(`image size: ${(size / 1e6).toFixed(0)} MB (base ${(baseSize / 1e6).toFixed(0)} MB, Vexil's layers ${((size - baseSize) / 1e6).toFixed(0)} MB)`);
  t.ok(size - baseSize < 60e6, `Vexil adds under 60 MB to its base (${((size - baseSize) / 1e6).toFixed(1)} MB)`);

  // What the final stage holds: no compilers, no dev dependencies, no sources.
  const contents = await must(
    podman('run', '--rm', '--entrypoint', 'sh', IMAGE, '-c',
      'for c in gcc g++ cc make python3 tsc; do command -v $c; done; ls node_modules/typescript node_modules/tap node_modules/esbuild src bench 2>/dev/null; id -u; echo end'),
  );
  t.equal(contents.trim(), '1000\nend', 'no compilers, no dev dependencies, no sources in the image; its user is 1000');

  const db = await freshPostgresDatabase();
  t.teardown(db.drop);
  const adminKey = randomKey();
  const secret = randomBytes(24).toString('hex');
  const boxes: Box[] = [];
  t.teardown(async () => {
    for (const b of boxes) await run(podman('rm', '-f', '-t', '0', b.name));
  });

  async function start(label: string, extra: string[] = []): Promise<Box> {
    const port = await freePort();
    const name = `vexil-test-${label}-${randomBytes(3).toString('hex')}`;
    await must(
      podman('run', '-d', '--name', name, '--network=host', ...extra,
        '-e', `PORT=${port}`,
        '-e', `DATABASE_URL=${db.url}`,
        '-e', `NATS_URL=${process.env.NATS_URL}`,
        '-e', `VEXIL_BOOTSTRAP_ADMIN_KEY=${adminKey}`,
        '-e', `VEXIL_CLUSTER_SECRET=${secret}`,
        // Propagation must come over the bus, not the poll.
        '-e', 'VEXIL_SYNC_SAFETY_POLL_MS=600000',
        '-e', 'VEXIL_EVAL_WORKERS=0',
        '-e', 'VEXIL_FRONT_THREADS=1',
        IMAGE),
    );
    const url = `http://127.0.0.1:${port}`;
    const box: Box = {
      name,
      port,
      url,
      adminKey,
      node: undefined as never,
      req: (method, path, o) => request(url, method, path, o),
      close: async () => {},
    };
    boxes.push(box);
    return box;
  }

  const t2 = performance.now();
  // a: a read-only root file system, as the Kubernetes manifest asks (docs/k8s/vexil.yaml).
  const a = await start('a', ['--read-only']);
  const b = await start('b');
  for (const box of [a, b]) {
    const ready = await readyz(box.url);
    t.equal(ready.status, 200, `${box.name}: /readyz 200`);
    t.equal(ready.body?.status, 'ready', `${box.name}: ready`);
    t.equal(ready.body?.database, 'up', `${box.name}: database up`);
    t.equal(ready.body?.bus, 'up', `${box.name}: bus up`);
    t.equal(ready.body?.http, 'uws', `${box.name}: the native front loaded (glibc 2.41)`);
  }
  t.comment(`two containers ready: ${seconds(t2)}`);

  // Not root, and no CAP_SYS_NICE: the runtime's defaults.
  const top = await must(podman('top', a.name, 'user', 'args'));
  const procs = top.trim().split('\n').slice(1);
  t.ok(procs.length >= 2, `the node and its management actor run (${procs.length} processes)`);
  t.ok(procs.every((l) => l.trim().startsWith('node ')), `every process runs as user node:\n${top}`);
  const pid = Number((await must(podman('inspect', '--format', '{{.State.Pid}}', a.name))).trim());
  const capEff = (await must(['sh', '-c', `grep CapEff /proc/${pid}/status`])).trim().split(/\s+/)[1];
  t.equal(BigInt('0x' + capEff), 0n, 'the node holds no capability at all (non-root user)');

  // The HEALTHCHECK runs (podman has no timer without systemd here: run it by hand).
  const health = await run(podman('healthcheck', 'run', a.name));
  t.equal(health.code, 0, `HEALTHCHECK on /readyz passes (${health.stdout.trim() || 'exit 0'})`);

  // An evaluation, then a write on one container seen by the other within 1 s.
  const ek = await seedShared(t, [a, b]);
  await propagates(t, a, [b], ek, 'off', `a write on ${a.name} reaches ${b.name}`);
  await propagates(t, b, [a], ek, 'on', `a write on ${b.name} reaches ${a.name}`);

  // Settings from the environment (VEXIL_FRONT_THREADS=1; the default here would be 2), long after the start.
  for (const box of [a, b]) t.equal((await request(box.url, 'GET', '/healthz')).body?.frontThreads, 1, `${box.name}: VEXIL_FRONT_THREADS=1 from the environment`);

  // SIGTERM: /readyz turns 503 at once, the node exits 0 within its grace.
  const t3 = performance.now();
  await must(podman('kill', '--signal', 'TERM', b.name));
  const exit = (await must(podman('wait', b.name), 30_000)).trim();
  t.equal(exit, '0', `SIGTERM: the node exits 0 (${seconds(t3)})`);
  t.ok(performance.now() - t3 < 8000 + 2000, 'within VEXIL_SHUTDOWN_GRACE_MS of the image (8 s) and a margin');
  const logs = (await run(podman('logs', b.name))).all;
  t.match(logs, /signal received, shutting down/, 'the node logs its orderly shutdown');
  t.notMatch(logs, new RegExp(adminKey), 'the bootstrap admin key is never logged');
  t.notMatch(logs, new RegExp(secret), 'the cluster secret is never logged');
  t.comment(`whole test: ${seconds(t0)}`);
});

t.test('the image on its embedded default: data in the /data volume, restart keeps it', { skip }, async (t) => {
  const port = await freePort();
  const name = `vexil-test-embedded-${randomBytes(3).toString('hex')}`;
  const volume = `${name}-data`;
  const adminKey = randomKey();
  t.teardown(async () => {
    await run(podman('rm', '-f', '-t', '0', name));
    await run(podman('volume', 'rm', '-f', volume));
  });
  const url = `http://127.0.0.1:${port}`;
  const box = { url, adminKey, node: undefined as never, req: (m: string, p: string, o?: object) => request(url, m, p, o), close: async () => {} } as TestNode;
  const startOnce = async () => {
    await must(podman('run', '-d', '--name', name, '--network=host', '-v', `${volume}:/data`, '-e', `PORT=${port}`, '-e', `VEXIL_BOOTSTRAP_ADMIN_KEY=${adminKey}`, '-e', 'VEXIL_EVAL_WORKERS=0', '-e', 'VEXIL_FRONT_THREADS=2', IMAGE));
    const r = await readyz(url);
    t.equal(r.body?.database, 'up', 'ready on PGlite');
  };
  await startOnce();
  // A setting from the environment: two threads serve once the start is over (/readyz may answer before the second).
  const two = await until(() => request(url, 'GET', '/healthz'), (h) => h.body?.frontThreads === 2, 30_000, 100);
  t.equal(two.body?.frontThreads, 2, 'VEXIL_FRONT_THREADS=2 from the environment');
  t.equal((await createFlag(box, 'kept')).status, 201, 'a flag written');
  await must(podman('stop', '-t', '15', name), 30_000);
  t.equal((await must(podman('inspect', '--format', '{{.State.ExitCode}}', name))).trim(), '0', 'stopped with exit 0');
  await must(podman('rm', name));
  await startOnce();
  t.equal((await box.req('GET', '/api/flags/kept', { key: adminKey })).status, 200, 'the flag is still there after a new container on the same volume');
  await must(podman('rm', '-f', '-t', '0', name));

  // SIGTERM the moment /readyz first answers: the other front threads may still be starting. As
  // PID 1 the node ignored a signal that came before its handlers (src/main.ts), until SIGKILL.
  await startOnce();
  const t0 = performance.now();
  await must(podman('kill', '--signal', 'TERM', name));
  t.equal((await must(podman('wait', name), 30_000)).trim(), '0', `SIGTERM right after ready: exit 0 (${seconds(t0)})`);
  t.ok(performance.now() - t0 < 8000, 'within the grace, not at the runtime\'s SIGKILL');
});
