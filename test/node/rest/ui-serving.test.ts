/**
 * Serving the admin web UI (docs/api.md, "Admin web UI") over real HTTP: redirects, the single-page
 * app's index.html for every path under /ui/, hashed assets cached for a year as immutable, an
 * uncached index.html, content types, a strict CSP, brotli or gzip by Accept-Encoding, and the
 * bundle size budget (150 KiB gzipped in all).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import t from 'tap';
import { chooseEncoding } from '../../../src/http/content-encoding.js';
import { projectPath } from '../../../src/util/paths.js';
import { startTestNode } from '../../helpers/node.js';

const n = await startTestNode(t);
const dist = projectPath('dist', 'ui');
const manifest = JSON.parse(readFileSync(join(dist, 'manifest.json'), 'utf8')) as { js: string; css: string };

/** A GET without automatic decompression: status, headers and the raw bytes. */
function get(path: string, acceptEncoding?: string): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = request(n.url + path, { headers: acceptEncoding === undefined ? {} : { 'accept-encoding': acceptEncoding } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}

t.test('/ and /ui redirect to /ui/', async (t) => {
  for (const p of ['/', '/ui']) {
    const r = await get(p);
    t.equal(r.status, 302, `${p}: 302`);
    t.equal(r.headers.location, '/ui/', `${p}: to /ui/`);
  }
});

t.test('index.html: every app path, not cached, strict CSP, no inline script', async (t) => {
  const index = readFileSync(join(dist, 'index.html'));
  for (const p of ['/ui/', '/ui/flags/new-checkout', '/ui/keys']) {
    const r = await get(p, 'gzip, deflate, br');
    t.equal(r.status, 200, `${p}: 200`);
    t.equal(r.headers['content-type'], 'text/html; charset=utf-8');
    t.equal(r.headers['cache-control'], 'no-store', 'index.html is not cached');
    t.equal(r.headers['content-encoding'], 'br', 'brotli preferred');
    t.same(brotliDecompressSync(r.body), index, 'the built index.html');
    const csp = String(r.headers['content-security-policy']);
    t.match(csp, /default-src 'none'/);
    t.match(csp, /script-src 'self'(;|$)/, 'scripts from this origin only');
    t.match(csp, /connect-src 'self'(;|$)/, 'API calls to this origin only');
    t.notMatch(csp, /unsafe-inline|unsafe-eval|https?:/, 'nothing inline, no other host');
    t.equal(r.headers['x-content-type-options'], 'nosniff');
  }
  const html = index.toString('utf8');
  t.notMatch(html, /<script(?![^>]*\ssrc=)[^>]*>/, 'no inline script element');
  t.notMatch(html, /https?:\/\//, 'no CDN or other host');
  t.match(html, `src="/ui/${manifest.js}"`);
  t.match(html, `href="/ui/${manifest.css}"`);
});

t.test('hashed assets: immutable for a year, content types, gzip, brotli or identity', async (t) => {
  const cases: [string, string][] = [
    [manifest.js, 'text/javascript; charset=utf-8'],
    [manifest.css, 'text/css; charset=utf-8'],
  ];
  for (const [name, type] of cases) {
    const plain = readFileSync(join(dist, name));
    const gz = await get(`/ui/${name}`, 'gzip');
    t.equal(gz.status, 200);
    t.equal(gz.headers['content-type'], type, `${name}: ${type}`);
    t.equal(gz.headers['cache-control'], 'public, max-age=31536000, immutable', `${name}: immutable`);
    t.equal(gz.headers['content-encoding'], 'gzip');
    t.equal(gz.headers.vary, 'accept-encoding');
    t.same(gunzipSync(gz.body), plain, 'gzip body');
    const br = await get(`/ui/${name}`, 'br;q=1, gzip;q=0.5');
    t.equal(br.headers['content-encoding'], 'br');
    t.same(brotliDecompressSync(br.body), plain, 'brotli body');
    const id = await get(`/ui/${name}`);
    t.equal(id.headers['content-encoding'], undefined, 'no Accept-Encoding: identity');
    t.same(id.body, plain, 'identity body');
    const noBr = await get(`/ui/${name}`, 'br;q=0, gzip');
    t.equal(noBr.headers['content-encoding'], 'gzip', 'br;q=0 refuses brotli');
  }
  const missing = await get('/ui/app-000000000000.js', 'gzip');
  t.equal(missing.status, 404, 'an unknown file is 404, not the app');
});

t.test('Accept-Encoding parsing', async (t) => {
  t.equal(chooseEncoding(''), 'identity');
  t.equal(chooseEncoding('gzip, deflate, br, zstd'), 'br');
  t.equal(chooseEncoding('GZIP'), 'gzip');
  t.equal(chooseEncoding('*'), 'gzip');
  t.equal(chooseEncoding('br;q=0, gzip;q=0'), 'identity');
  t.equal(chooseEncoding('identity'), 'identity');
});

t.test('the whole UI is at most 150 KiB gzipped', async (t) => {
  let total = 0;
  for (const f of readdirSync(dist)) if (f.endsWith('.gz')) total += readFileSync(join(dist, f)).length;
  console.log(`# UI: ${(total / 1024).toFixed(1)} KiB gzipped in all`);
  t.ok(total > 1000 && total <= 150 * 1024, `${(total / 1024).toFixed(1)} KiB <= 150 KiB`);
});

t.test('the API keeps working beside the UI routes', async (t) => {
  t.equal((await n.req('GET', '/api/flags', { key: n.adminKey })).status, 200);
  t.equal((await n.req('GET', '/nope')).status, 404);
});
