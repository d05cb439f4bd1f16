// Bundles the provider (src/index.ts) with the server's portable folder (src/engine: the engine, the
// feed decoder, OFREP's answer shaping) into dist/index.js: one engine, built from the same
// source as the server (packages/openfeature-provider/README.md, "How it is built"); and
// dist/index.d.ts, the declarations of src/index.ts (its public types name only the SDK's).
// `node build.mjs --inputs f` also writes to f the files the bundle took in (scripts/build.mjs).
import { build } from 'esbuild';
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const here = fileURLToPath(new URL('.', import.meta.url));
const bundle = await build({
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
  metafile: true,
});
const inputsAt = process.argv.indexOf('--inputs');
if (inputsAt > 0) writeFileSync(process.argv[inputsAt + 1], JSON.stringify(Object.keys(bundle.metafile.inputs).map((p) => resolve(here, p))));

const source = readFileSync(new URL('src/index.ts', import.meta.url), 'utf8');
const declarations = ts.transpileDeclaration(source, {
  fileName: 'index.ts',
  reportDiagnostics: true,
  compilerOptions: { module: ts.ModuleKind.NodeNext, target: ts.ScriptTarget.ES2022, stripInternal: true },
});
if (declarations.diagnostics?.length) {
  throw new Error(declarations.diagnostics.map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n')).join('\n'));
}
writeFileSync(new URL('dist/index.d.ts', import.meta.url), declarations.outputText);
