/**
 * Answers for the admin web UI (docs/api.md#admin-web-ui): `/` and `/ui` redirect to `/ui/`; hashed
 * assets are immutable for a year; every other path under /ui/ is the single-page app's index.html
 * (never cached), so that deep links such as /ui/flags/checkout load the app. Brotli or gzip when
 * the client accepts it. A strict Content-Security-Policy: scripts and styles from this origin
 * only, no inline code, API calls to this origin only.
 */
import { chooseEncoding } from '../../http/content-encoding.js';
import type { Asset } from './assets.js';

export interface UiReply {
  status: number;
  headers: Record<string, string>;
  body: Buffer | string;
}

export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const SECURITY_HEADERS = {
  'content-security-policy': CONTENT_SECURITY_POLICY,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
};

export const UI_PREFIX = '/ui/';

const redirect = (): UiReply => ({ status: 302, headers: { location: UI_PREFIX, 'cache-control': 'no-store', 'content-type': 'text/plain; charset=utf-8' }, body: '' });

export function serveUi(assets: Map<string, Asset> | null, path: string, acceptEncoding: string): UiReply {
  if (path === '/' || path === '/ui') return redirect();
  const text = (status: number, msg: string): UiReply => ({
    status,
    headers: { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store', ...SECURITY_HEADERS },
    body: msg,
  });
  if (assets === null) return text(503, 'The admin UI is not built: run `npm run build`.\n');
  const name = path.startsWith(UI_PREFIX) ? path.slice(UI_PREFIX.length) : '';
  let asset = assets.get(name);
  // A path that names a file (has an extension) and is not one: 404, not the app.
  if (asset === undefined && /\.[A-Za-z0-9]+$/.test(name)) return text(404, 'Not found\n');
  asset ??= assets.get('index.html')!;
  const encoding = chooseEncoding(acceptEncoding);
  const headers: Record<string, string> = {
    'content-type': asset.contentType,
    'cache-control': asset.immutable ? 'public, max-age=31536000, immutable' : asset.contentType.startsWith('text/html') ? 'no-store' : 'public, max-age=3600',
    vary: 'accept-encoding',
    ...SECURITY_HEADERS,
  };
  if (encoding !== 'identity') headers['content-encoding'] = encoding;
  return { status: 200, headers, body: encoding === 'br' ? asset.br : encoding === 'gzip' ? asset.gzip : asset.identity };
}
