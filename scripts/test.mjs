/**
 * The test suites, group by group (`npm test`; `npm run test:unit` is the unit group alone):
 *
 *   unit     test/unit: no node, no build                     2 files at a time
 *   node     test/node: real nodes on PGlite                  2 at a time, then the SERIAL ones alone
 *   cluster  test/cluster: PostgreSQL and NATS (skip without DATABASE_URL / NATS_URL),
 *            2 at a time, then the SERIAL ones alone
 *   browser  test/browser: Chromium (skip without it), 2 at a time, then the SERIAL one alone
 *   long     test/long: fuzz, half-open connections, container manifests 2 at a time; then chaos,
 *            100,000 flags and the container image alone
 *
 *   node scripts/test.mjs [group ...] [-- tap options ...]
 *   node scripts/test.mjs file.test.ts ...   those files, 2 at a time, the SERIAL ones alone
 *
 * Two at a time fits the 2-core CI machine: every node a test starts has its own free port, its own
 * copy of the migrated PGlite template (in /dev/shm when it has room: test/helpers/node.ts) or its
 * own PostgreSQL database, and a cluster test's nodes talk on a NATS
 * subject of their own (test/helpers/cluster.ts) or on a private nats-server, and every Chromium has
 * its own profile dir, so files do not see each other. What measures time or CPU, or holds a
 * bound tight enough that a second file on the other core could break it, runs alone (SERIAL,
 * each with its reason). Each group ends with tap's "# { total: N, pass: P, ... }" line (.ci/run adds
 * them up); the exit status is non-zero if any group failed. The files run 2 at a time get
 * PARALLEL_NODE_ARGS (PGlite's WebAssembly on Liftoff only, for a cheaper node start).
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './build.mjs';

/**
 * Files of the parallel groups that must run alone: they pin or starve cores, or assert on
 * timings that a second test file on the other core would skew.
 */
const SERIAL = new Set([
  // node
  'test/node/http/thread-priorities.test.ts', // pins spinners to core 0 and reads scheduling classes
  'test/node/pool/pool-isolation.test.ts', // a full pool's 503s and one organization's stall measured in time
  'test/node/http/slow-clients.test.ts', // 1 s head/body/idle bounds measured on raw sockets
  'test/node/rest/ratelimit.test.ts', // bursts must land inside one 200 ms token
  'test/node/provider/lifecycle.test.ts', // ConfigurationChanged within 1 s of a write
  // cluster
  'test/cluster/schedules.test.ts', // two nodes racing: each schedule applied less than 1 s after its moment
  'test/cluster/read-once.test.ts', // a node converges within 1 s of ready while another writes 100 changes/s
  'test/cluster/provider/cluster.test.ts', // ConfigurationChanged on B within 1 s of a write on A
  'test/cluster/bus-membership.test.ts', // a burst of 40 evaluations must land inside one rate-limit refill
  // browser
  'test/browser/ui/flags-1000.test.ts', // the best of five page renders must take < 1 s
  // long
  'test/long/chaos/chaos.test.ts', // availability >= 99.9 % and convergence within 3 s under faults
  'test/long/ui/flags-100k.test.ts', // first row and search times at 100,000 flags
  'test/long/container/image.test.ts', // builds an image (CPU-heavy), then propagation within 1 s
]);

/**
 * V8 flags of the files that run 2 at a time (tap's --node-arg), and so of their nodes' actor
 * processes (src/management/transport.ts passes the node's flags on): PGlite's WebAssembly is
 * compiled by Liftoff alone. TurboFan's tier-up of it was about 45 % of a PGlite node's start and
 * stop (2.4 s of CPU of about 5.5; 3 paired runs of 2-3 starts on the shared machine, load 15-20),
 * and node starts are most of what the node group costs. The SERIAL files, which measure time, run with V8's defaults, as
 * production does.
 */
const PARALLEL_NODE_ARGS = ['--node-arg=--liftoff-only'];

const GROUPS = [
  { name: 'unit', dir: 'test/unit', jobs: 2 },
  { name: 'node', dir: 'test/node', jobs: 2 },
  { name: 'cluster', dir: 'test/cluster', jobs: 2 },
  { name: 'browser', dir: 'test/browser', jobs: 2 },
  { name: 'long', dir: 'test/long', jobs: 2 },
];

function testFiles(dir) {
  const out = [];
  for (const e of readdirSync(join(ROOT, dir))) {
    const p = join(dir, e);
    if (statSync(join(ROOT, p)).isDirectory()) out.push(...testFiles(p));
    else if (e.endsWith('.test.ts')) out.push(p.split('\\').join('/'));
  }
  return out.sort();
}

function tap(files, jobs, extra) {
  if (files.length === 0) return 0;
  const r = spawnSync(process.execPath, [join(ROOT, 'node_modules', 'tap', 'dist', 'esm', 'run.mjs'), `--jobs=${jobs}`, ...extra, ...files], {
    cwd: ROOT,
    stdio: 'inherit',
  });
  return r.status ?? 1;
}

const args = process.argv.slice(2);
const dash = args.indexOf('--');
const names = dash < 0 ? args : args.slice(0, dash);
const tapArgs = dash < 0 ? [] : args.slice(dash + 1);
const files = names.filter((n) => n.endsWith('.ts'));
const unknown = names.filter((n) => !n.endsWith('.ts') && !GROUPS.some((g) => g.name === n));
if (unknown.length > 0) {
  console.error(`unknown group ${unknown.join(', ')}: one of ${GROUPS.map((g) => g.name).join(', ')}, or test files`);
  process.exit(2);
}
const chosen = [
  ...(files.length > 0 ? [{ name: 'files', files, jobs: 2 }] : []),
  ...(names.length === 0 ? GROUPS : GROUPS.filter((g) => names.includes(g.name))),
];

const results = [];
for (const g of chosen) {
  const files = g.files ?? testFiles(g.dir);
  const parallel = files.filter((f) => !SERIAL.has(f));
  const alone = files.filter((f) => SERIAL.has(f));
  console.log(`\n=== ${g.name}: ${files.length} files (${parallel.length} ${g.jobs} at a time${alone.length ? `, then ${alone.length} alone` : ''})`);
  const started = Date.now();
  let status = tap(parallel, g.jobs, [...PARALLEL_NODE_ARGS, ...tapArgs]);
  if (alone.length > 0) status = tap(alone, 1, tapArgs) || status;
  results.push({ name: g.name, ok: status === 0, s: (Date.now() - started) / 1000 });
}

console.log('\n' + results.map((r) => `=== ${r.name}: ${r.ok ? 'ok' : 'FAILED'} in ${r.s.toFixed(0)} s`).join('\n'));
process.exit(results.every((r) => r.ok) ? 0 : 1);
