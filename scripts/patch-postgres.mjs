#!/usr/bin/env node
/**
 * postinstall: guards postgres.js 3.4.9 against the crash of porsager/postgres#1154 / #1208
 * (`TypeError: Cannot read properties of null (reading 'write')` at connection.js:255, thrown from
 * a queued write after the socket closed, which no caller can catch and which ends the process).
 * Upstream fixes (PRs 1168, 1176, 1209) are unmerged and no fixed release exists; see
 * docs/storage.md. The patch is three small edits to node_modules/postgres/{src,cjs/src}/connection.js:
 *
 *   1. nextWrite(): with no socket, drop the buffered bytes and settle the connection's queries with
 *      CONNECTION_CLOSED (a catchable rejection) instead of dereferencing null;
 *   2. closed() and terminate(): after clearImmediate, also forget the timer and the buffered bytes, so
 *      a dead connection's stale timer never blocks (or replays into) the next socket.
 *
 * Idempotent (a patched file carries the marker and is left alone). Any other postgres version, or
 * a file whose text differs from what the patch expects, fails the install loudly: re-check upstream.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const MARKER = '/* vexil-patch: porsager/postgres#1154 */';
const EXPECTED_VERSION = '3.4.9';

const edits = [
  {
    from: '  function nextWrite(fn) {\n    const x = socket.write(chunk, fn)',
    to:
      '  function nextWrite(fn) {\n' +
      `    if (socket === null) { ${MARKER}\n` +
      '      nextWriteTimer !== null && clearImmediate(nextWriteTimer)\n' +
      '      chunk = nextWriteTimer = null\n' +
      "      error(Errors.connection('CONNECTION_CLOSED', options))\n" +
      '      return false\n' +
      '    }\n' +
      '    const x = socket.write(chunk, fn)',
  },
  {
    // terminate()
    from: '    clearImmediate(nextWriteTimer)\n    if (socket) {',
    to: `    clearImmediate(nextWriteTimer)\n    chunk = nextWriteTimer = null ${MARKER}\n    if (socket) {`,
  },
  {
    // closed()
    from: '    clearImmediate(nextWriteTimer)\n    socket.removeListener(',
    to: `    clearImmediate(nextWriteTimer)\n    chunk = nextWriteTimer = null ${MARKER}\n    socket.removeListener(`,
  },
];

function packageDir() {
  const here = dirname(fileURLToPath(import.meta.url));
  const candidates = [join(here, '..', 'node_modules', 'postgres')];
  try {
    candidates.push(dirname(createRequire(join(here, '..', 'package.json')).resolve('postgres/package.json')));
  } catch {
    /* exports may hide package.json: the first candidate is the usual place */
  }
  return candidates.find((d) => existsSync(join(d, 'package.json')));
}

export function patchText(text) {
  if (text.includes(MARKER)) return { text, changed: false };
  let out = text;
  for (const e of edits) {
    const at = out.indexOf(e.from);
    if (at < 0 || out.indexOf(e.from, at + 1) >= 0) throw new Error(`anchor not found exactly once: ${JSON.stringify(e.from.slice(0, 60))}`);
    out = out.replace(e.from, e.to);
  }
  return { text: out, changed: true };
}

function main() {
  const dir = packageDir();
  if (dir === undefined) {
    console.log('patch-postgres: postgres is not installed; nothing to patch');
    return;
  }
  const version = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).version;
  if (version !== EXPECTED_VERSION) {
    throw new Error(`patch-postgres: postgres ${version} installed, the patch is for ${EXPECTED_VERSION}; re-check porsager/postgres#1154 and update scripts/patch-postgres.mjs`);
  }
  for (const rel of ['src/connection.js', 'cjs/src/connection.js']) {
    const file = join(dir, rel);
    if (!existsSync(file)) continue;
    const { text, changed } = patchText(readFileSync(file, 'utf8'));
    if (changed) writeFileSync(file, text);
    console.log(`patch-postgres: ${rel} ${changed ? 'patched' : 'already patched'}`);
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) main();
