/** Helpers of the change-request suites (test/node/change-requests, test/cluster/change-requests-race.test.ts). */
import type { Res, TestNode } from './node.js';

export type Client = Pick<TestNode, 'req'>;
export const CR = '/api/change-requests';

export const propose = (n: Client, key: string, changes: unknown[], title = 'A change') => n.req('POST', CR, { key, body: { title, changes } });
export const getCr = (n: Client, key: string, id: string) => n.req('GET', `${CR}/${id}`, { key });
export const act = (n: Client, key: string, id: string, action: string, body: unknown = {}) => n.req('POST', `${CR}/${id}/${action}`, { key, body });
export const apply = (n: Client, key: string, cr: { id: string; hash: string }) => act(n, key, cr.id, 'apply', { hash: cr.hash });
export const review = (n: Client, key: string, cr: { id: string; hash: string }, decision: 'approve' | 'reject' = 'approve', comment?: string) =>
  act(n, key, cr.id, 'reviews', { decision, hash: cr.hash, ...(comment === undefined ? {} : { comment }) });

export const toggle = (flag: string, enabled: boolean, stage = 'production') => ({ op: 'setConfigEnabled', flag, stage, enabled });
export const upsert = (flag: string, input: Record<string, unknown>) => ({
  op: 'upsertConfig',
  flag,
  input: { stage: 'production', enabled: true, defaultVariantKey: 'off', rolloutPercentage: 100, ...input },
});

/** The organization's version as the snapshot feed reports it (an evaluation key of `application`). */
export async function orgVersion(n: Client, evalKey: string, stage = 'production'): Promise<number> {
  const r: Res = await n.req('GET', `/sdk/v1/snapshot?stage=${stage}`, { key: evalKey });
  if (r.status !== 200) throw new Error(`snapshot: ${r.status} ${r.text}`);
  return r.body.version as number;
}

/** The audit log, newest first. */
export async function auditLog(n: Client, key: string): Promise<any[]> {
  const r = await n.req('GET', '/api/audit?limit=500', { key });
  if (r.status !== 200) throw new Error(`audit: ${r.status} ${r.text}`);
  return r.body;
}
