#!/usr/bin/env node
/**
 * The Dockerfile's last build step (docs/deploy.md, "The image"): trims the production
 * node_modules (after `npm prune --omit=dev`) to what the node loads on this platform and Node.js.
 *
 *   - uWebSockets.js binaries: of the two packages (src/http/uws.ts), only the binary for this
 *     platform, architecture and Node ABI is kept (about 7 MB of some 230 MB);
 *   - PGlite's CommonJS build and its extension tarballs (src/storage/pglite.ts imports the ES
 *     module and loads no extension); prebuilt addons for other platforms;
 *   - the workspace link to packages/openfeature-provider (a client library the node never loads);
 *   - source maps, TypeScript sources and declarations, Markdown, tests, examples and docs folders.
 *
 *   node scripts/image-prune.mjs [node_modules]     prints what it removed and how much
 */
import { lstatSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';

const root = resolve(process.argv[2] ?? 'node_modules');
const keep = `uws_${process.platform}_${process.arch}_${process.versions.modules}.node`;
let files = 0;
let bytes = 0;

function sizeOf(p) {
  const st = lstatSync(p);
  if (!st.isDirectory()) return st.size;
  let n = 0;
  for (const e of readdirSync(p)) n += sizeOf(join(p, e));
  return n;
}
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
for (const e of ['src', 'docs', 'dist']) {
  // The Node ≤ 20 package's sources and its JavaScript shim (never used: src/http/uws.ts).
  const p = join(root, 'uWebSockets.js', e);
  try {
    statSync(p);
    remove(p);
  } catch {
    /* absent */
  }
}

// PGlite: the ES module build only, no extensions.
const pglite = join(root, '@electric-sql', 'pglite', 'dist');
try {
  for (const e of readdirSync(pglite)) if (/\.(cjs|tar\.gz)$/.test(e) || e === 'contrib') remove(join(pglite, e));
} catch {
  /* absent */
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

// The workspace package (a link into packages/, which the image does not hold).
try {
  if (lstatSync(join(root, '@vexil', 'openfeature-provider')).isSymbolicLink()) remove(join(root, '@vexil'));
} catch {
  /* absent */
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
