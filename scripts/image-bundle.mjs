#!/usr/bin/env node
/**
 * The Dockerfile's build step (docs/deploy.md, "The image"): lays out in <out> what the image runs,
 * with the node's code and its pure-JavaScript dependencies bundled by esbuild, straight from the
 * TypeScript sources (the type check is the project's build's job, not the image's):
 *
 *   <out>/dist/src/main.js               the node (src/main.ts)
 *   <out>/dist/workers/{front,evaluator,management.bundle}.js
 *                                        a front thread, a Piscina worker, the management actor:
 *                                        loaded by path (src/util/paths.ts), so entry points too
 *                                        (the actor under the name it has in dist/: bundle-actor.mjs)
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
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sizeOf } from './size-of.mjs';
import { EXTERNAL, NODE_BUNDLE, checkBundle, packageOf } from './node-bundle.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const out = resolve(process.argv[2] ?? join(ROOT, 'dist', 'image'));

/** Dependencies of an EXTERNAL package that no runtime path loads (they are not copied). */
const UNUSED_DEPS = {
  // Its JavaScript shim (dist/uws.js) needs ws; src/http/uws.ts loads the binaries directly.
  'uWebSockets.js': ['ws', 'bufferutil', 'utf-8-validate'],
};

const ENTRIES = {
  'dist/src/main': 'src/main.ts',
  'dist/workers/front': 'workers/front.ts',
  'dist/workers/evaluator': 'workers/evaluator.ts',
  // The name src/management/transport.ts forks, as in dist/ (scripts/bundle-actor.mjs).
  'dist/workers/management.bundle': 'workers/management.ts',
};

const mb = (n) => `${(n / 1e6).toFixed(1)} MB`;

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });

const result = await build({
  absWorkingDir: ROOT,
  entryPoints: Object.entries(ENTRIES).map(([outName, entry]) => ({ in: entry, out: outName })),
  outdir: out,
  chunkNames: 'dist/chunks/[name]-[hash]',
  ...NODE_BUNDLE,
  splitting: true,
  legalComments: 'eof',
});

// Only Node's own modules and EXTERNAL packages left to run time; postgres.js bundled, patched.
checkBundle(result, ROOT, 'image-bundle');

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
