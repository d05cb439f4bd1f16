/**
 * The admin web UI's built files (dist/ui, written by ui/build.mjs at `npm run build`), read into
 * memory once at start with their gzip and brotli copies. Nothing is fetched at run time.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { extname, join } from 'node:path';
import { projectPath } from '../../util/paths.js';

export interface Asset {
  contentType: string;
  /** Content-hashed name: cacheable for a year, never changes. */
  immutable: boolean;
  identity: Buffer;
  gzip: Buffer;
  br: Buffer;
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.json': 'application/json',
};

const HASHED = /-[0-9a-f]{12}\.[a-z]+$/;

/** The UI's files by name (`index.html`, `app-<hash>.js`, ...), or null when the UI is not built. */
export function loadUiAssets(dir = projectPath('dist', 'ui')): Map<string, Asset> | null {
  if (!existsSync(join(dir, 'index.html'))) return null;
  const out = new Map<string, Asset>();
  for (const name of readdirSync(dir)) {
    const type = TYPES[extname(name)];
    if (type === undefined || name === 'manifest.json') continue; // .gz, .br and the manifest are not served by name
    const read = (suffix: string) => readFileSync(join(dir, name + suffix));
    out.set(name, { contentType: type, immutable: HASHED.test(name), identity: read(''), gzip: read('.gz'), br: read('.br') });
  }
  return out;
}
