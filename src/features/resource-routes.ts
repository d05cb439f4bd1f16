/**
 * The REST routes of a resource managed by name, as flags and segments are (docs/api.md):
 * `POST {base}` answers 201 with the new item, `GET` / `PUT` / `DELETE {base}/{name}` read,
 * partially update (200) and delete (204) one. The feature's service does every check.
 */
import type { Authenticated } from '../auth/authenticate.js';
import { admittedKey } from '../auth/admitted.js';
import { jsonObjectBody } from '../http/exchange.js';
import type { ManagementHandler } from '../management/boundary.js';
import type { ActorRuntime } from '../runtime.js';

export interface NamedResource {
  create(rt: ActorRuntime, auth: Authenticated, body: unknown): Promise<unknown>;
  get(auth: Authenticated, name: string): unknown;
  update(rt: ActorRuntime, auth: Authenticated, name: string, body: unknown): Promise<unknown>;
  remove(rt: ActorRuntime, auth: Authenticated, name: string): Promise<void>;
}

export function namedResourceRoutes(rt: ActorRuntime, base: string, r: NamedResource): ManagementHandler[] {
  const one = `${base}/:name`;
  return [
    { method: 'post', pattern: base, handler: async (inc) => ({ status: 201, body: await r.create(rt, admittedKey(rt, inc), jsonObjectBody(inc)) }) },
    { method: 'get', pattern: one, handler: (inc) => ({ status: 200, body: r.get(admittedKey(rt, inc), inc.params[0]) }) },
    { method: 'put', pattern: one, handler: async (inc) => ({ status: 200, body: await r.update(rt, admittedKey(rt, inc), inc.params[0], jsonObjectBody(inc)) }) },
    {
      method: 'del',
      pattern: one,
      handler: async (inc) => {
        await r.remove(rt, admittedKey(rt, inc), inc.params[0]);
        return { status: 204 };
      },
    },
  ];
}
