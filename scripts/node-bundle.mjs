/**
 * How the node's code is bundled by esbuild for Node.js, in one place: the image's bundle of every
 * entry point (scripts/image-bundle.mjs) and the management actor's bundle in dist/
 * (scripts/bundle-actor.mjs) use the same options and the same checks.
 */
import { builtinModules } from 'node:module';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** Packages left in node_modules, and why they cannot go into a bundle. */
export const EXTERNAL = {
  // Native binaries (src/http/uws.ts loads them through createRequire: esbuild never sees them).
  'uWebSockets.js': 'native binaries, loaded by file name (src/http/uws.ts)',
  '@btc-vision/uwebsockets.js': 'native binaries, loaded by file name (src/http/uws.ts)',
  // Assets beside its modules: pglite.wasm, pglite.data, initdb.wasm, found from import.meta.url.
  '@electric-sql/pglite': 'WASM and data files loaded relative to its modules',
  // Starts its own worker file (piscina/dist/worker.js) by path, and loads @napi-rs/nice (native).
  piscina: 'starts its own worker script by path; a native optional dependency',
};

/** A file of a bundle must hold this (scripts/patch-postgres.mjs ran before the bundle). */
const POSTGRES_PATCH = '/* vexil-patch: porsager/postgres#1154 */';

const BUILTIN = new Set(builtinModules.flatMap((m) => [m, `node:${m}`]));

/** The package a module specifier names (`@scope/name/sub` → `@scope/name`). */
export const packageOf = (spec) => spec.split('/').slice(0, spec.startsWith('@') ? 2 : 1).join('/');

/** esbuild options for code that Node.js runs as ES modules (entry points and output are the caller's). */
export const NODE_BUNDLE = {
  bundle: true,
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
  logLevel: 'warning',
  metafile: true,
};

/**
 * What every bundle must satisfy, from esbuild's result: it leaves to run time only Node's own
 * modules and EXTERNAL packages, and it took in postgres.js (the node and the actor both open it),
 * patched. Throws, naming `who`, otherwise.
 */
export function checkBundle(result, root, who) {
  const external = new Set();
  for (const o of Object.values(result.metafile.outputs)) for (const i of o.imports) if (i.external) external.add(i.path);
  const stray = [...external].filter((p) => !BUILTIN.has(p) && !(packageOf(p) in EXTERNAL));
  if (stray.length > 0) throw new Error(`${who}: imports left outside the bundle that no EXTERNAL entry names: ${stray.join(', ')}`);
  const pg = Object.keys(result.metafile.inputs).filter((p) => /node_modules\/postgres\/.*connection\.js$/.test(p));
  if (pg.length === 0 || !pg.every((p) => readFileSync(join(root, p), 'utf8').includes(POSTGRES_PATCH))) {
    throw new Error(`${who}: postgres.js is not patched (node scripts/patch-postgres.mjs): ${pg.join(', ') || 'not bundled'}`);
  }
}
