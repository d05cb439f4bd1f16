/** Helpers of the audit-log suites (docs/audit.md): reading the log over REST and GraphQL. */
import type { Test } from 'tap';
import { OPERATOR_TOKEN, type Res, type TestNode } from './node.js';
import { gql } from './graphql.js';

/** Node settings of the audit suites: the operator API on, and room for many management calls. */
export const AUDIT_ENV = { VEXIL_OPERATOR_TOKEN: OPERATOR_TOKEN, VEXIL_RATE_LIMIT_MGMT: '100000' };

export const AUDIT_FIELDS = `id at actor { keyId keyName operator } action target { type name stage clientId } application before after`;

/** `GET /api/audit` with the given query string (without `?`). */
export function auditRest(n: TestNode, key: string, query = ''): Promise<Res> {
  return n.req('GET', `/api/audit${query === '' ? '' : `?${query}`}`, { key });
}

/** The whole log as `key` sees it (newest first), asserting a 200. */
export async function readLog(t: Pick<Test, 'equal'>, n: TestNode, key: string, query = 'limit=500'): Promise<any[]> {
  const r = await auditRest(n, key, query);
  t.equal(r.status, 200, `GET /api/audit?${query}: 200 (got ${r.status} ${r.text.slice(0, 200)})`);
  return r.body as any[];
}

/** GraphQL `auditLog` with the given argument text, e.g. `(first: 5)`. */
export async function auditGql(n: TestNode, key: string, args = ''): Promise<Res> {
  return gql(n, key, `{ auditLog${args} { ${AUDIT_FIELDS} } }`);
}

/**
 * Runs `write` and returns the one event it added to the log; asserts that exactly one was added
 * (read with `key`, which must see it).
 */
export async function oneNewEvent(t: Pick<Test, 'equal'>, n: TestNode, key: string, what: string, write: () => Promise<unknown>): Promise<any> {
  const before = await readLog(t, n, key);
  await write();
  const after = await readLog(t, n, key);
  const top = before.length === 0 ? 0 : Number(before[0].id);
  const added = after.filter((e) => Number(e.id) > top);
  t.equal(added.length, 1, `${what}: exactly one new event (got ${added.map((e) => e.action).join(', ') || 'none'})`);
  return added[0];
}
