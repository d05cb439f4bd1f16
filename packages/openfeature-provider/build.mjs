// Bundles the provider (src/index.ts) with the server's engine and feed decoder (src/engine,
// src/feed/decode.ts, src/ofrep/answer.ts) into dist/index.js: one engine, built from the same
// source as the server (packages/openfeature-provider/README.md, "How it is built").
import { build } from 'esbuild';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('.', import.meta.url));
await build({
  absWorkingDir: here,
  entryPoints: ['src/index.ts'],
  outfile: 'dist/index.js',
  bundle: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  external: ['@openfeature/server-sdk'],
  legalComments: 'none',
  logLevel: 'warning',
});
