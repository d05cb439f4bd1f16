/**
 * The admin web UI's routes (docs/api.md#admin-web-ui): `GET /` and `GET /ui` redirect to `/ui/`,
 * and `GET /ui/*` serves the built files from memory (loaded once, here, at start).
 */
import './openapi.js';
import type { Reply } from '../../http/handler.js';
import type { Route } from '../../http/router.js';
import { loadUiAssets, type Asset } from './assets.js';
import { serveUi } from './serve.js';

export function uiRoutes(assets: Map<string, Asset> | null = loadUiAssets()): Route[] {
  const handler = (inc: { path: string; headers: Record<string, string> }): Reply => {
    const r = serveUi(assets, inc.path, inc.headers['accept-encoding'] ?? '');
    return { status: r.status, raw: r.body, headers: r.headers };
  };
  return [
    { method: 'get', pattern: '/', handler },
    { method: 'get', pattern: '/ui', handler },
    { method: 'get', pattern: '/ui/*', handler, headers: ['accept-encoding'] },
  ];
}
