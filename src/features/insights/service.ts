/**
 * Flag insights, lifecycle half (CONTRACT 18, docs/insights.md "Lifecycle"): a flag's insights
 * (`GET /api/flags/{name}/insights`, GraphQL `Flag.insights`) and the organization's lifecycle
 * settings (`GET` / `PUT /api/insights/settings`, GraphQL `insightsSettings` /
 * `setInsightsSettings`). REST and GraphQL call these functions alike.
 */
import type { Authenticated } from '../../auth/authenticate.js';
import { requireApplication, requirePermission, requireUnscoped } from '../../auth/permissions.js';
import { badRequest, notFound } from '../../domain/errors.js';
import { sameName } from '../../domain/name-matching.js';
import type { Flag, FlagStatus, StatusReason } from '../../domain/types.js';
import { parseDateTime } from '../../domain/validation.js';
import type { ActorRuntime } from '../../runtime.js';
import { orgChange } from '../audit/events.js';
import { actorOf, writeOrgKeys } from '../write.js';
import { applySettings, DEFAULT_SETTINGS, normaliseSettings, settingsMs, type InsightsSettings } from './settings.js';
import { flagStatus, usageOf } from './status.js';
import * as store from './store.js';
import { tracker } from './tracker.js';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
/** Without `from`: this long before `to`. */
export const INSIGHTS_DEFAULT_SPAN_MS = 14 * DAY_MS;
/** The longest range per bucket size: 31 days of hours (744 points per stage), 400 days of days. */
export const INSIGHTS_MAX_SPAN_MS = { hour: 31 * DAY_MS, day: 400 * DAY_MS } as const;

export type Bucket = 'hour' | 'day';

export interface InsightsPoint {
  stage: string;
  start: string;
  count: number;
  variants: Record<string, number>;
}

export interface FlagInsights {
  flag: string;
  status: FlagStatus;
  reasons: StatusReason[];
  lastEvaluatedAt: Record<string, string | null>;
  series: InsightsPoint[];
}

export interface InsightsRange {
  from: number;
  to: number;
  bucket: Bucket;
}

const KNOWN = ['from', 'to', 'bucket'];

/**
 * `from`, `to` (ISO 8601 date-times with a zone) and `bucket` (`hour` | `day`), each optional: by
 * default `to` is now, `from` 14 days before `to`, `bucket` hour. Buckets whose start is in
 * `[from, to)` answer. 400: unknown parameter, a bad date-time, `from` not before `to`, a range
 * longer than `INSIGHTS_MAX_SPAN_MS` for its bucket.
 */
export function parseInsightsRange(raw: Record<string, unknown>, now: number): InsightsRange {
  for (const k of Object.keys(raw)) {
    if (!KNOWN.includes(k)) throw badRequest(`Unknown query parameter '${k.slice(0, 64)}'; known: ${KNOWN.join(', ')}`);
  }
  const text = (k: string): string | undefined => (raw[k] === undefined || raw[k] === null ? undefined : (raw[k] as string));
  const bucketText = text('bucket') ?? 'hour';
  if (bucketText !== 'hour' && bucketText !== 'day') throw badRequest(`bucket: expected hour or day, got '${String(bucketText).slice(0, 20)}'`);
  const bucket: Bucket = bucketText;
  const toText = text('to');
  const to = toText === undefined ? now : Date.parse(parseDateTime(toText, 'to'));
  const fromText = text('from');
  const from = fromText === undefined ? to - INSIGHTS_DEFAULT_SPAN_MS : Date.parse(parseDateTime(fromText, 'from'));
  if (from >= to) throw badRequest('from: must be before to');
  if (to - from > INSIGHTS_MAX_SPAN_MS[bucket]) {
    throw badRequest(`from, to: at most ${INSIGHTS_MAX_SPAN_MS[bucket] / DAY_MS} days apart with bucket=${bucket}`);
  }
  return { from, to, bucket };
}

function visibleFlag(auth: Authenticated, name: string): Flag {
  requirePermission(auth.principal, 'CanRead');
  const c = auth.snapshot.flags.get(name);
  if (c === undefined) throw notFound(`Flag '${name}' not found`);
  requireApplication(auth.principal, c.flag.project);
  return c.flag;
}

/** The organization's settings as stored (the defaults when none). */
async function storedSettings(rt: ActorRuntime, orgId: string): Promise<InsightsSettings> {
  return normaliseSettings(await store.readSettings(rt.db, orgId));
}

/**
 * A flag's insights. Its status and reasons are computed here from the flag's usage rows read now
 * (the status the list filters by is the tracker's, the same computation at most one round behind).
 */
export async function flagInsights(rt: ActorRuntime, auth: Authenticated, name: string, raw: Record<string, unknown>): Promise<FlagInsights> {
  const flag = visibleFlag(auth, name);
  const now = rt.now();
  const range = parseInsightsRange(raw, now);
  const orgId = auth.principal.orgId;
  const [rows, series, settings] = await Promise.all([
    store.readFlagUsage(rt.db, orgId, flag.name),
    store.readSeries(rt.db, orgId, flag.name, range.bucket, range.from, range.to),
    storedSettings(rt, orgId),
  ]);
  const ms = settingsMs(settings);
  const s = flagStatus({
    createdAt: Date.parse(flag.createdAt),
    lifetimeMs: ms.lifetimes[flag.purpose ?? 'release'],
    unusedAfterMs: ms.unusedAfter,
    usage: usageOf(rows),
    now,
  });
  const lastEvaluatedAt: Record<string, string | null> = {};
  for (const stage of flag.environments) {
    let last: number | null = null;
    for (const r of rows) if (sameName(r.stage, stage) && (last === null || r.lastAt > last)) last = r.lastAt;
    lastEvaluatedAt[stage] = last === null ? null : new Date(last).toISOString();
  }
  const points: InsightsPoint[] = [];
  let cur: InsightsPoint | null = null;
  for (const r of series) {
    const start = new Date(r.start).toISOString();
    if (cur === null || cur.stage !== r.stage || cur.start !== start) points.push((cur = { stage: r.stage, start, count: 0, variants: {} }));
    cur.count += r.count;
    cur.variants[r.variant] = (cur.variants[r.variant] ?? 0) + r.count;
  }
  return { flag: flag.name, status: s.status, reasons: s.reasons, lastEvaluatedAt, series: points };
}

export async function getSettings(rt: ActorRuntime, auth: Authenticated): Promise<InsightsSettings> {
  requirePermission(auth.principal, 'CanRead');
  return storedSettings(rt, auth.principal.orgId);
}

/** Admin on an organization-wide key; audited as `org.insights`. */
export async function putSettings(rt: ActorRuntime, auth: Authenticated, raw: unknown): Promise<InsightsSettings> {
  const p = auth.principal;
  requirePermission(p, 'Admin');
  requireUnscoped(p, 'Changing the insights settings');
  applySettings(DEFAULT_SETTINGS, raw); // 400 before the transaction
  const saved = await writeOrgKeys(rt, actorOf(p), p.orgId, async (tx, org) => {
    const before = normaliseSettings(await store.readSettings(tx, org.id));
    const after = applySettings(before, raw);
    await store.writeSettings(tx, org.id, after);
    return { result: after, audit: orgChange('org.insights', org.name, before, after) };
  });
  tracker()?.settingsChanged();
  return saved;
}
