/**
 * The build, one step at a time, each step run only when its inputs changed since it last ran:
 * `npm run build`, and before `npm start`, `npm test` and `npm run bench`. An unchanged tree
 * builds nothing, so a restarted node serves within seconds.
 *
 *   node scripts/build.mjs            build what is out of date
 *   node scripts/build.mjs --force    build every step
 *   node scripts/build.mjs --check    build nothing; exit 1 naming what is out of date
 *
 * dist/.build-stamp.json records, per step, each input file's size, mtime and SHA-1. A file whose
 * size and mtime are unchanged is taken as unchanged; otherwise its content decides (a checkout that
 * only touches files rebuilds nothing). The stamp is rewritten after every run, so it is never older
 * than the inputs it vouches for. The tests that start compiled code ask `outOfDate` the same
 * question (test/helpers/dist.ts).
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const STAMP = 'dist/.build-stamp.json';
const STAMP_VERSION = 1;
const node = process.execPath;
const tsc = (root) => join(root, 'node_modules', 'typescript', 'bin', 'tsc');

/**
 * Each step: the files and folders it reads (`inputs`, relative to the root; a folder means every
 * file under it, or those `sources` matches), what it must leave behind (`outputs`), and its commands. A bundling step also
 * writes the list of files its bundle took in (`bundled`: esbuild's metafile, see ui/build.mjs),
 * which become inputs too: a change to src/engine rebuilds the provider, one to src/node.ts does not.
 */
const TS = /\.[cm]?tsx?$/;

export const STEPS = [
  {
    name: 'server',
    inputs: ['tsconfig.json', 'package-lock.json', 'src', 'workers', 'bench', 'packages/openfeature-provider/src'],
    sources: TS, // not bench/results/
    outputs: ['dist/src/main.js'], // the workers are emitted with it (and their entry points may move)
    // --incremental: after a one-file change tsc re-checks and re-emits only what that file reaches.
    commands: (root) => [[node, tsc(root), '-p', 'tsconfig.json', '--incremental', '--tsBuildInfoFile', 'dist/.tsbuildinfo']],
    // tsc trusts its build info: outputs deleted by hand are only re-emitted without it.
    beforeRun: (root, why) => why.missing && rmSync(join(root, 'dist', '.tsbuildinfo'), { force: true }),
  },
  {
    // The management actor as one file, the one the node forks (scripts/bundle-actor.mjs: a faster start).
    name: 'actor',
    inputs: ['package-lock.json', 'workers/management.ts', 'scripts/bundle-actor.mjs', 'scripts/node-bundle.mjs'],
    outputs: ['dist/workers/management.bundle.js'],
    bundled: 'dist/.build-actor-inputs.json',
    commands: () => [[node, 'scripts/bundle-actor.mjs', '--inputs', 'dist/.build-actor-inputs.json']],
  },
  {
    name: 'ui',
    inputs: ['package-lock.json', 'ui'],
    outputs: ['dist/ui/index.html', 'dist/ui/manifest.json'],
    bundled: 'dist/.build-ui-inputs.json',
    commands: (root) => [
      [node, tsc(root), '-p', 'ui/tsconfig.json', '--incremental', '--tsBuildInfoFile', 'dist/.tsbuildinfo-ui'], // type check only
      [node, 'ui/build.mjs', '--inputs', 'dist/.build-ui-inputs.json'],
    ],
  },
  {
    name: 'provider',
    inputs: ['package-lock.json', 'packages/openfeature-provider/src', 'packages/openfeature-provider/build.mjs', 'packages/openfeature-provider/package.json'],
    sources: TS,
    outputs: ['packages/openfeature-provider/dist/index.js', 'packages/openfeature-provider/dist/index.d.ts'],
    bundled: 'dist/.build-provider-inputs.json',
    commands: () => [[node, 'packages/openfeature-provider/build.mjs', '--inputs', 'dist/.build-provider-inputs.json']],
  },
];

const toPosix = (p) => p.split(sep).join('/');

/**
 * A bundling step's half of `bundled`: with `--inputs FILE` among `argv`, writes to FILE the files
 * esbuild's `result` took in (its metafile), as absolute paths (`base`: where esbuild resolved them).
 */
export function writeBundledInputs(result, base, argv = process.argv) {
  const at = argv.indexOf('--inputs');
  if (at > 0) writeFileSync(argv[at + 1], JSON.stringify(Object.keys(result.metafile.inputs).map((p) => resolve(base, p))));
}

/**
 * Every file of `inputs` (folders walked, keeping the files `sources` matches), as root-relative
 * POSIX paths; missing ones are left out.
 */
export function inputFiles(root, inputs, sources = /./) {
  const out = new Set();
  const walk = (rel, top) => {
    const abs = join(root, rel);
    let st;
    try {
      st = statSync(abs);
    } catch {
      return;
    }
    if (st.isDirectory()) {
      for (const e of readdirSync(abs)) if (e !== 'node_modules' && e !== 'dist' && !e.startsWith('.')) walk(rel + '/' + e, false);
    } else if (top || sources.test(rel)) out.add(toPosix(rel));
  };
  for (const i of inputs) walk(i, true);
  return [...out].sort();
}

function fingerprint(root, file, known) {
  const st = statSync(join(root, file));
  if (known && known.size === st.size && known.mtimeMs === st.mtimeMs) return known;
  return { size: st.size, mtimeMs: st.mtimeMs, sha1: createHash('sha1').update(readFileSync(join(root, file))).digest('hex') };
}

export function readStamp(root) {
  try {
    const s = JSON.parse(readFileSync(join(root, STAMP), 'utf8'));
    return s.version === STAMP_VERSION ? s : { version: STAMP_VERSION, steps: {} };
  } catch {
    return { version: STAMP_VERSION, steps: {} };
  }
}

function writeStamp(root, stamp) {
  mkdirSync(join(root, 'dist'), { recursive: true });
  const tmp = join(root, `${STAMP}.${process.pid}`);
  writeFileSync(tmp, JSON.stringify(stamp));
  renameSync(tmp, join(root, STAMP)); // two builds at once (parallel tests) never read half a stamp
}

/** The files a step reads: its declared inputs, plus what its bundle took in when it last ran. */
function stepFiles(root, step, recorded) {
  return [...new Set([...inputFiles(root, step.inputs, step.sources), ...Object.keys(recorded?.files ?? {})])].sort();
}

/**
 * Why `step` must run again, or null when its outputs are current: a missing output, a step never
 * built, or the first input file that changed, appeared or went away since. `recorded` is the
 * stamp's entry for the step; `files` (refreshed fingerprints) is filled in as a side effect.
 */
function whyStale(root, step, recorded, files = {}) {
  let why = null;
  for (const o of step.outputs) if (!why && !existsSync(join(root, o))) why = { file: o, reason: `${o} is missing`, missing: true };
  if (!why && recorded === undefined) why = { file: step.outputs[0], reason: `the ${step.name} step has not been built` };
  for (const f of stepFiles(root, step, recorded)) {
    const before = recorded?.files[f];
    if (!existsSync(join(root, f))) {
      if (!why) why = { file: f, reason: `${f} was removed` };
      continue;
    }
    const now = fingerprint(root, f, before);
    files[f] = now;
    if (!why && (before === undefined || before.sha1 !== now.sha1)) why = { file: f, reason: `${f} changed` };
  }
  return why;
}

/**
 * The steps whose outputs are older than their inputs, each with the first file that says so:
 * `[{ step: 'server', file: 'src/node.ts', reason: 'src/node.ts changed' }]`; empty when dist/ is current.
 */
export function outOfDate(root = ROOT, steps = STEPS) {
  const stamp = readStamp(root);
  const out = [];
  for (const step of steps) {
    const why = whyStale(root, step, stamp.steps[step.name]);
    if (why) out.push({ step: step.name, ...why });
  }
  return out;
}

const sleep = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

/**
 * Holds dist/.build-lock while `fn` runs: three `npm start`s at once (a local cluster) build once,
 * the others wait and then find dist/ current. A lock whose process is gone is taken over.
 */
function withLock(root, fn) {
  const lock = join(root, 'dist', '.build-lock');
  mkdirSync(join(root, 'dist'), { recursive: true });
  for (let waited = 0; ; waited += 200) {
    try {
      writeFileSync(lock, String(process.pid), { flag: 'wx' });
      break;
    } catch (err) {
      if (err.code !== 'EEXIST') throw err;
      const holder = Number(readFileSync(lock, 'utf8')) || 0;
      let alive = holder > 0;
      try {
        if (alive) process.kill(holder, 0);
      } catch {
        alive = false;
      }
      if (!alive) rmSync(lock, { force: true });
      else if (waited === 0) console.log(`build: waiting for the build in process ${holder}`);
      sleep(200);
    }
  }
  try {
    return fn();
  } finally {
    rmSync(lock, { force: true });
  }
}

/** Runs the steps that are out of date (all with `force`); returns the names of those it ran. */
export function build(root = ROOT, steps = STEPS, opts = {}) {
  return withLock(root, () => buildLocked(root, steps, opts));
}

function buildLocked(root, steps, { force = false, log = console.log }) {
  const stamp = readStamp(root);
  const ran = [];
  for (const step of steps) {
    const files = {};
    const why = whyStale(root, step, stamp.steps[step.name], files);
    if (!why && !force) {
      stamp.steps[step.name] = { files }; // fresh mtimes: the next check need not hash again
      continue;
    }
    log(`build: ${step.name} (${force ? 'forced' : why.reason})`);
    const started = Date.now();
    step.beforeRun?.(root, force ? { missing: true } : why);
    for (const [cmd, ...args] of step.commands(root)) {
      const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit' });
      if (r.status !== 0) {
        delete stamp.steps[step.name];
        writeStamp(root, stamp);
        throw new Error(`build: ${step.name} failed: ${[cmd === node ? 'node' : cmd, ...args].join(' ')} exited ${r.status ?? r.signal}`);
      }
    }
    // Fingerprints taken before the run stand for what the step read; files its bundle took in for
    // the first time are fingerprinted now.
    if (step.bundled) {
      const taken = JSON.parse(readFileSync(join(root, step.bundled), 'utf8')).map((p) => relative(root, p));
      for (const f of inputFiles(root, taken.filter((p) => !p.startsWith('..')))) files[f] ??= fingerprint(root, f);
    }
    stamp.steps[step.name] = { files };
    writeStamp(root, stamp);
    ran.push(step.name);
    log(`build: ${step.name} done in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  }
  writeStamp(root, stamp);
  return ran;
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const args = process.argv.slice(2);
  if (args.includes('--check')) {
    const stale = outOfDate();
    for (const s of stale) console.log(`${s.step}: ${s.reason}`);
    process.exit(stale.length === 0 ? 0 : 1);
  }
  try {
    const ran = build(ROOT, STEPS, { force: args.includes('--force') });
    if (ran.length === 0) console.log('build: dist/ is current');
  } catch (err) {
    console.error(err.message);
    process.exit(1);
  }
}
