/**
 * Helpers of the scheduled-change suites (test/node/rest/schedules.test.ts, test/cluster/schedules.test.ts): REST calls, waiting for a
 * schedule to leave `pending`, and the audit events a flag's schedules record.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Res } from './node.js';

/** What these helpers need of a node: its `req` (TestNode, or a view of a spawned process). */
export interface Client {
  req(method: string, path: string, o?: { key?: string; body?: unknown; headers?: Record<string, string> }): Promise<Res>;
}

export const inMs = (ms: number): string => new Date(Date.now() + ms).toISOString();

export const schedulesPath = (flag: string): string => `/api/flags/${encodeURIComponent(flag)}/schedules`;

export function postSchedule(n: Client, key: string, flag: string, body: Record<string, unknown>) {
  return n.req('POST', schedulesPath(flag), { key, body });
}

export function listSchedules(n: Client, key: string, flag: string) {
  return n.req('GET', schedulesPath(flag), { key });
}

export function cancelSchedule(n: Client, key: string, flag: string, id: string) {
  return n.req('DELETE', `${schedulesPath(flag)}/${encodeURIComponent(id)}`, { key });
}

/** Polls the flag's schedules until `id` is no longer pending (or `timeoutMs` passes); returns it. */
export async function settled(n: Client, key: string, flag: string, id: string, timeoutMs = 5000): Promise<Record<string, any>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const r = await listSchedules(n, key, flag);
    const s = (r.body as Record<string, any>[]).find((x) => x.id === id);
    if (s === undefined) throw new Error(`schedule ${id} not listed: ${r.status} ${r.text}`);
    if (s.status !== 'pending' || Date.now() > deadline) return s;
    await sleep(50);
  }
}

/** The audit events of a flag, oldest first. */
export async function flagEvents(n: Client, key: string, flag: string): Promise<Record<string, any>[]> {
  const r = await n.req('GET', `/api/audit?target=${encodeURIComponent(flag)}&type=flag&limit=500`, { key });
  if (r.status !== 200) throw new Error(`audit failed: ${r.status} ${r.text}`);
  return (r.body as Record<string, any>[]).reverse();
}

export const SCHEDULE_FIELDS = ['appliedAt', 'at', 'clientId', 'config', 'createdBy', 'enabled', 'error', 'flag', 'id', 'stage', 'status'];
