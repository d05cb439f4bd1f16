#!/usr/bin/env node
/**
 * In the Dockerfile's build stage, right after `npm ci` (docs/deploy.md, "The image"): trims
 * node_modules to what runs on this platform and Node.js, before scripts/image-bundle.mjs copies
 * the packages that cannot be bundled into the image. Only esbuild and preact of the development
 * dependencies are used after it (the bundle, the admin UI), and neither needs what it removes.
 *
 *   - uWebSockets.js binaries: of the two packages (src/http/uws.ts), only the binary for this
 *     platform, architecture and Node ABI is kept (about 7 MB of some 230 MB);
 *   - PGlite: the modules its ES entry point reaches (static and dynamic imports, as esbuild
 *     resolves them) and its .wasm and .data files, which those modules load by URL. Its CommonJS
 *     build, its other entry points (live, worker, node-postgres) and its extension tarballs go:
 *     src/storage/pglite.ts imports the main entry and loads no extension;
 *   - prebuilt addons for other platforms;
 *   - source maps, TypeScript sources and declarations, Markdown, tests, examples and docs folders.
 *
 *   node scripts/image-prune.mjs [node_modules]     prints what it removed and how much
 */
import { build } from 'esbuild';
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { sizeOf } from './size-of.mjs';

const root = resolve(process.argv[2] ?? 'node_modules');
const keep = `uws_${process.platform}_${process.arch}_${process.versions.modules}.node`;
let files = 0;
let bytes = 0;

function remove(p) {
  bytes += sizeOf(p);
  files++;
  rmSync(p, { recursive: true, force: true });
}

// uWebSockets.js: one binary for this platform and ABI (none of the Node ≤ 20 package's fits Node 22+).
for (const dir of [join(root, '@btc-vision', 'uwebsockets.js'), join(root, 'uWebSockets.js'), join(root, 'uWebSockets.js', 'binaries')]) {
  let entries;
  try {
    entries = readdirSync(dir);
  } catch {
    continue;
  }
  for (const e of entries) if (/^uws_.*\.node$/.test(e) && e !== keep) remove(join(dir, e));
}
// The Node ≤ 20 package goes whole when it holds no binary for this ABI (always so on Node 22+);
// otherwise its sources and its JavaScript shim go (never used: src/http/uws.ts).
const legacyUws = join(root, 'uWebSockets.js');
if (existsSync(legacyUws)) {
  if (!existsSync(join(legacyUws, 'binaries', keep))) remove(legacyUws);
  else for (const e of ['src', 'docs', 'dist']) if (existsSync(join(legacyUws, e))) remove(join(legacyUws, e));
}

// PGlite: its ES module graph and the assets it loads.
const pgliteDir = join(root, '@electric-sql', 'pglite');
if (existsSync(join(pgliteDir, 'package.json'))) {
  const graph = await build({
    entryPoints: [join(pgliteDir, 'dist', 'index.js')],
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    outdir: join(pgliteDir, '.graph'),
    write: false,
    metafile: true,
    logLevel: 'error',
  });
  const reached = new Set(Object.keys(graph.metafile.inputs).map((p) => resolve(p)));
  if (!reached.has(join(pgliteDir, 'dist', 'fs', 'nodefs.js'))) throw new Error('image-prune: PGlite\'s graph misses fs/nodefs.js (its file system for a data directory)');
  const prune = (dir) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) prune(p);
      else if (!reached.has(p) && !/\.(wasm|data)$/.test(e.name)) remove(p);
    }
  };
  prune(join(pgliteDir, 'dist'));
}
// node-gyp-build prebuilds (bufferutil, utf-8-validate): this platform's only.
for (const pkg of readdirSync(root)) {
  const pre = join(root, pkg, 'prebuilds');
  try {
    for (const e of readdirSync(pre)) if (!e.startsWith(`${process.platform}-${process.arch}`)) remove(join(pre, e));
  } catch {
    /* none */
  }
}

const JUNK_DIRS = new Set(['test', 'tests', '__tests__', 'example', 'examples', 'docs', 'doc', '.github', 'benchmark', 'benchmarks', 'coverage']);
const JUNK_FILE = /(\.map|\.d\.[cm]?ts|(?<!\.d)\.[cm]?ts|\.md|\.markdown|\.tsbuildinfo)$/i;
// Folders named like junk that packages load at run time.
const NEEDED = [/[/\\]pino[/\\]docs$/];

function walk(dir) {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isSymbolicLink()) continue;
    if (e.isDirectory()) {
      if (JUNK_DIRS.has(e.name) && !NEEDED.some((re) => re.test(p)) && dir !== root) remove(p);
      else walk(p);
    } else if (JUNK_FILE.test(e.name) && !/^license/i.test(e.name)) {
      remove(p);
    }
  }
}
walk(root);
console.log(`image-prune: kept ${keep}; removed ${files} files and folders, ${(bytes / 1e6).toFixed(1)} MB`);
