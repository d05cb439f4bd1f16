#!/usr/bin/env node
/**
 * The Dockerfile's build step (docs/deploy.md, "The image"): lays out in <out> what the image runs,
 * with the node's code and its pure-JavaScript dependencies bundled by esbuild, straight from the
 * TypeScript sources (the type check is the project's build's job, not the image's):
 *
 *   <out>/dist/src/main.js               the node (src/main.ts)
 *   <out>/dist/workers/{front,evaluator,management}.js
 *                                        a front thread, a Piscina worker, the management actor:
 *                                        loaded by path (src/util/paths.ts), so entry points too
 *   <out>/dist/chunks/*.js               the code they share (esbuild's code splitting)
 *   <out>/node_modules/…                 only the packages that cannot be bundled (EXTERNAL) and
 *                                        what they depend on
 *   <out>/package.json, <out>/sql/       the version the node reports; the migrations
 *
 * The admin UI (dist/ui) is ui/build.mjs's, copied by the Dockerfile.
 *
 *   node scripts/image-bundle.mjs <out>       prints each part's size
 */
import { build } from 'esbuild';
import { builtinModules } from 'node:module';
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sizeOf } from './size-of.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const out = resolve(process.argv[2] ?? join(ROOT, 'dist', 'image'));

/** Packages left in node_modules, and why they cannot go into the bundle. */
const EXTERNAL = {
  // Native binaries (src/http/uws.ts loads them through createRequire: esbuild never sees them).
  'uWebSockets.js': 'native binaries, loaded by file name (src/http/uws.ts)',
  '@btc-vision/uwebsockets.js': 'native binaries, loaded by file name (src/http/uws.ts)',
  // Assets beside its modules: pglite.wasm, pglite.data, initdb.wasm, found from import.meta.url.
  '@electric-sql/pglite': 'WASM and data files loaded relative to its modules',
  // Starts its own worker file (piscina/dist/worker.js) by path, and loads @napi-rs/nice (native).
  piscina: 'starts its own worker script by path; a native optional dependency',
};
/** Dependencies of an EXTERNAL package that no runtime path loads (they are not copied). */
const UNUSED_DEPS = {
  // Its JavaScript shim (dist/uws.js) needs ws; src/http/uws.ts loads the binaries directly.
  'uWebSockets.js': ['ws', 'bufferutil', 'utf-8-validate'],
};

const ENTRIES = {
  'dist/src/main': 'src/main.ts',
  'dist/workers/front': 'workers/front.ts',
  'dist/workers/evaluator': 'workers/evaluator.ts',
  'dist/workers/management': 'workers/management.ts',
};
/** A file of the bundle must hold this (scripts/patch-postgres.mjs ran before the bundle). */
const POSTGRES_PATCH = '/* vexil-patch: porsager/postgres#1154 */';

const BUILTIN = new Set(builtinModules.flatMap((m) => [m, `node:${m}`]));
const packageOf = (spec) => spec.split('/').slice(0, spec.startsWith('@') ? 2 : 1).join('/');

const mb = (n) => `${(n / 1e6).toFixed(1)} MB`;

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });

const result = await build({
  absWorkingDir: ROOT,
  entryPoints: Object.entries(ENTRIES).map(([outName, entry]) => ({ in: entry, out: outName })),
  outdir: out,
  chunkNames: 'dist/chunks/[name]-[hash]',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  // CommonJS dependencies call require() for Node's own modules: give every output file one.
  banner: { js: "import { createRequire as __vexilCreateRequire } from 'node:module'; const require = __vexilCreateRequire(import.meta.url);" },
  external: Object.keys(EXTERNAL),
  // Class and function names as written: they appear in logs and errors.
  keepNames: true,
  minifySyntax: true,
  minifyWhitespace: true,
  legalComments: 'eof',
  logLevel: 'warning',
  metafile: true,
});

// Everything the bundle leaves to run time is Node's own or an EXTERNAL package.
const external = new Set();
for (const o of Object.values(result.metafile.outputs)) for (const i of o.imports) if (i.external) external.add(i.path);
const stray = [...external].filter((p) => !BUILTIN.has(p) && !(packageOf(p) in EXTERNAL));
if (stray.length > 0) throw new Error(`image-bundle: imports left outside the bundle that no EXTERNAL entry names: ${stray.join(', ')}`);
// The postgres.js guard must be in what was bundled.
const pg = Object.keys(result.metafile.inputs).filter((p) => /node_modules\/postgres\/.*connection\.js$/.test(p));
if (pg.length === 0 || !pg.every((p) => readFileSync(join(ROOT, p), 'utf8').includes(POSTGRES_PATCH))) {
  throw new Error(`image-bundle: postgres.js is not patched (node scripts/patch-postgres.mjs): ${pg.join(', ') || 'not bundled'}`);
}

// The EXTERNAL packages and what they depend on (installed ones: optional ones may be absent).
const keep = new Set();
const visit = (name) => {
  if (keep.has(name) || !existsSync(join(ROOT, 'node_modules', name, 'package.json'))) return;
  keep.add(name);
  const pkg = JSON.parse(readFileSync(join(ROOT, 'node_modules', name, 'package.json'), 'utf8'));
  const skip = new Set(UNUSED_DEPS[name] ?? []);
  for (const d of Object.keys({ ...pkg.dependencies, ...pkg.optionalDependencies })) if (!skip.has(d)) visit(d);
};
for (const name of Object.keys(EXTERNAL)) visit(name);
for (const name of keep) cpSync(join(ROOT, 'node_modules', name), join(out, 'node_modules', name), { recursive: true, dereference: false });

cpSync(join(ROOT, 'sql'), join(out, 'sql'), { recursive: true });
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
writeFileSync(join(out, 'package.json'), JSON.stringify({ name: pkg.name, version: pkg.version, private: true, type: 'module', license: pkg.license }, null, 2) + '\n');

const bundled = Object.keys(result.metafile.inputs);
const inPackages = bundled.filter((p) => p.includes('node_modules/'));
const fromPackages = new Set(inPackages.map((p) => packageOf(p.slice(p.lastIndexOf('node_modules/') + 'node_modules/'.length))));
console.log(
  `image-bundle: ${Object.keys(ENTRIES).length} entry points and ${readdirSync(join(out, 'dist', 'chunks')).length} chunks, ${mb(sizeOf(join(out, 'dist')))} ` +
    `(${bundled.length - inPackages.length} source files, ${fromPackages.size} packages: ${[...fromPackages].sort().join(' ')}); ` +
    `node_modules: ${[...keep].sort().join(' ')} (${mb(sizeOf(join(out, 'node_modules')))})`,
);
