/**
 * Builds the admin web UI (ui/) into dist/ui: one bundled, minified script and one stylesheet with
 * content-hashed names, an index.html that references them, and .gz / .br copies of every text
 * asset (the node serves them from memory; see src/features/ui/). No network access at run time.
 *
 *   node ui/build.mjs            (npm run build runs it after tsc)
 *   node ui/build.mjs --inputs f  also writes to f the files the bundle took in (scripts/build.mjs)
 */
import { build } from 'esbuild';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import { writeBundledInputs } from '../scripts/build.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, '..', 'dist', 'ui');

const result = await build({
  entryPoints: [join(here, 'src', 'main.tsx')],
  bundle: true,
  minify: true,
  format: 'esm',
  target: 'es2022',
  jsx: 'automatic',
  jsxImportSource: 'preact',
  write: false,
  legalComments: 'none',
  logLevel: 'warning',
  metafile: true,
});
const js = result.outputFiles[0].contents;
const css = readFileSync(join(here, 'styles.css'));
const hash = (b) => createHash('sha256').update(b).digest('hex').slice(0, 12);
const files = {
  [`app-${hash(js)}.js`]: js,
  [`app-${hash(css)}.css`]: css,
};
const [jsName, cssName] = Object.keys(files);
const html = readFileSync(join(here, 'index.html'), 'utf8').replace('%CSS%', cssName).replace('%JS%', jsName);
files['index.html'] = Buffer.from(html);
files['favicon.svg'] = readFileSync(join(here, 'favicon.svg'));

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
let gzTotal = 0;
for (const [name, body] of Object.entries(files)) {
  writeFileSync(join(out, name), body);
  const gz = gzipSync(body, { level: 9 });
  const br = brotliCompressSync(body, { params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: body.length } });
  writeFileSync(join(out, name + '.gz'), gz);
  writeFileSync(join(out, name + '.br'), br);
  gzTotal += gz.length;
}
writeFileSync(join(out, 'manifest.json'), JSON.stringify({ js: jsName, css: cssName, gzipBytes: gzTotal }, null, 2));
writeBundledInputs(result, process.cwd());
console.log(`ui: ${jsName} ${(js.length / 1024).toFixed(1)} KiB, ${cssName}; ${(gzTotal / 1024).toFixed(1)} KiB gzipped in all`);
