/** REST change requests (docs/change-requests.md); run by the management actor (src/management/). */
import { admittedKey } from '../../auth/admitted.js';
import { badRequest } from '../../domain/errors.js';
import { jsonObjectBody } from '../../http/exchange.js';
import { queryObject } from '../../http/query.js';
import type { ManagementHandler } from '../../management/boundary.js';
import type { ActorRuntime } from '../../runtime.js';
import * as cr from './service.js';
import { previewRequest } from './preview.js';

export const CHANGE_REQUESTS_PATH = '/api/change-requests';
const HOST_RE = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?$/;
const ID_RE = /^cr_[0-9a-z]{10}[0-9a-f]{10}$/;

export function changeRequestRoutes(rt: ActorRuntime): ManagementHandler[] {
  const one = `${CHANGE_REQUESTS_PATH}/:id`;
  return [
    {
      method: 'get',
      pattern: CHANGE_REQUESTS_PATH,
      handler: async (inc) => {
        const params = queryObject(inc.query);
        for (const k of Object.keys(params)) if (!['state', 'limit', 'after'].includes(k)) throw badRequest(`Unknown query parameter '${k}'`);
        if (params.limit !== undefined && !/^[0-9]{1,4}$/.test(params.limit)) throw badRequest('limit: an integer from 1 to 1000');
        if (params.after !== undefined && !ID_RE.test(params.after)) throw badRequest('after: a change request id');
        const limit = params.limit === undefined ? null : Number(params.limit);
        const page = await cr.listRequests(rt, admittedKey(rt, inc), { state: params.state ?? null, limit, after: params.after ?? null });
        const headers: Record<string, string> = { 'x-total-count': String(page.total) };
        if (page.hasMore && limit !== null && page.items.length > 0) {
          const host = inc.headers.host ?? '';
          const base = rt.config.publicUrl ?? (HOST_RE.test(host) ? `http://${host}` : '');
          const next = new URLSearchParams({ ...params, after: page.items[page.items.length - 1].id });
          headers.link = `<${base}${CHANGE_REQUESTS_PATH}?${next.toString()}>; rel="next"`;
        }
        return { status: 200, body: page.items, headers };
      },
    },
    { method: 'post', pattern: CHANGE_REQUESTS_PATH, handler: async (inc) => ({ status: 201, body: await cr.createRequest(rt, admittedKey(rt, inc), jsonObjectBody(inc)) }) },
    { method: 'get', pattern: one, handler: async (inc) => ({ status: 200, body: await cr.getRequest(rt, admittedKey(rt, inc), inc.params[0]) }) },
    { method: 'put', pattern: one, handler: async (inc) => ({ status: 200, body: await cr.updateRequest(rt, admittedKey(rt, inc), inc.params[0], jsonObjectBody(inc)) }) },
    { method: 'post', pattern: `${one}/reviews`, handler: async (inc) => ({ status: 200, body: await cr.reviewRequest(rt, admittedKey(rt, inc), inc.params[0], jsonObjectBody(inc)) }) },
    { method: 'post', pattern: `${one}/apply`, handler: async (inc) => ({ status: 200, body: await cr.applyRequest(rt, admittedKey(rt, inc), inc.params[0], jsonObjectBody(inc)) }) },
    { method: 'post', pattern: `${one}/rebase`, handler: async (inc) => ({ status: 200, body: await cr.rebaseRequest(rt, admittedKey(rt, inc), inc.params[0]) }) },
    { method: 'post', pattern: `${one}/schedule`, handler: async (inc) => ({ status: 200, body: await cr.scheduleRequest(rt, admittedKey(rt, inc), inc.params[0], jsonObjectBody(inc)) }) },
    { method: 'post', pattern: `${one}/close`, handler: async (inc) => ({ status: 200, body: await cr.closeRequest(rt, admittedKey(rt, inc), inc.params[0]) }) },
    { method: 'post', pattern: `${one}/preview`, handler: async (inc) => ({ status: 200, body: await previewRequest(rt, admittedKey(rt, inc), inc.params[0], jsonObjectBody(inc)) }) },
    { method: 'post', pattern: `${one}/revert`, handler: async (inc) => ({ status: 201, body: await cr.revertRequest(rt, admittedKey(rt, inc), inc.params[0]) }) },
  ];
}
