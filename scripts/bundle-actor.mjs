/**
 * The management actor's code as one file: workers/management.ts and everything it imports,
 * bundled by esbuild into dist/workers/management.bundle.js, the file the node forks
 * (src/management/transport.ts). The build's step `actor` (scripts/build.mjs) runs it.
 *
 * Why: the actor is a process of its own, started with every node and again after a crash. Loading
 * it from tsc's output took Node.js about 0.7-0.9 s of CPU (several hundred modules found, read and
 * compiled one by one: src/, graphql, zod, postgres.js); one minified file takes about 0.3 s, and a
 * node's start about 0.5 s less in all (docs/cluster.md, "If the actor dies"). The image bundles it
 * the same way (scripts/image-bundle.mjs, scripts/node-bundle.mjs).
 *
 *   node scripts/bundle-actor.mjs [--inputs FILE]   FILE: the source files the bundle took in (scripts/build.mjs)
 */
import { build } from 'esbuild';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeBundledInputs } from './build.mjs';
import { NODE_BUNDLE, checkBundle } from './node-bundle.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

const result = await build({
  ...NODE_BUNDLE,
  absWorkingDir: ROOT,
  entryPoints: ['workers/management.ts'],
  outfile: 'dist/workers/management.bundle.js',
  // Stack traces name the TypeScript sources under --enable-source-maps.
  sourcemap: 'linked',
  legalComments: 'none',
});
checkBundle(result, ROOT, 'bundle-actor');
writeBundledInputs(result, ROOT);
