/**
 * `POST /sdk/v1/metrics?stage=` (CONTRACT 18, docs/insights.md "Provider reports"): evaluation
 * counts made in process (the provider of section 16), fed to the same counters as the server's
 * own evaluations. Admitted like the feed (auth/authenticate.ts, one evaluation token; then
 * evaluation/check.ts `checkScope`: CanEvaluate with an application scope, the stage defaulting to
 * the key's environment scope). The body is validated whole before anything is counted (400,
 * nothing counted). Entries naming a flag the key's application does not have in that stage, or a
 * variant the flag does not have, are not counted (a provider's data may be a moment old): the
 * answer says how many were `ignored`.
 */
import './openapi.js';
import { authenticate, type Authenticated } from '../auth/authenticate.js';
import { clientAddress } from '../auth/client-address.js';
import type { Principal } from '../auth/permissions.js';
import { requestKey, KEY_HEADERS } from '../auth/request-key.js';
import { badRequest } from '../domain/errors.js';
import { parseFeedQuery } from '../domain/validation.js';
import { parseInput } from '../domain/validation/common.js';
import { sameName } from '../domain/name-matching.js';
import { checkScope } from '../evaluation/check.js';
import { jsonObjectBody } from '../http/exchange.js';
import type { Incoming, Reply } from '../http/handler.js';
import { queryObject } from '../http/query.js';
import type { Route } from '../http/router.js';
import type { FrontRuntime } from '../runtime.js';
import type { InsightsRows } from './counter.js';
import { metricsBodySchema, type MetricsBody } from './metrics-schema.js';
import { HOUR_RETENTION_DAYS } from './flush.js';

export const METRICS_PATH = '/sdk/v1/metrics';

const evalBucket = (_p: Principal) => 'eval' as const;
const noStage = () => badRequest('stage is required: give ?stage=, or use a key with an environment scope');

/**
 * The rows a report adds (pure): its counts stamped with its `end` (its hour and day buckets),
 * kept within the hour buckets' retention and not in the future.
 */
export function metricsRows(auth: Authenticated, stage: string, body: MetricsBody, nowMs: number): { rows: InsightsRows; accepted: number; ignored: number } {
  const startMs = Date.parse(body.start);
  const endMs = Date.parse(body.end);
  if (endMs < startMs) throw badRequest('body: end is before start');
  const oldest = nowMs - (HOUR_RETENTION_DAYS - 1) * 86_400_000;
  const clamp = (ms: number) => Math.floor(Math.min(nowMs, Math.max(oldest, ms)) / 1000);
  const lastSec = clamp(endMs);
  const firstSec = Math.min(clamp(startMs), lastSec);
  const snapshot = auth.snapshot;
  const rows: InsightsRows = [];
  let accepted = 0;
  let ignored = 0;
  for (const c of body.counts) {
    const cf = snapshot.flags.get(c.flag);
    const ok =
      cf !== undefined &&
      sameName(cf.flag.project, auth.principal.application!) &&
      (c.variant === '' || cf.variants.has(c.variant));
    if (!ok) {
      ignored++;
      continue;
    }
    if (c.count === 0) continue;
    accepted++;
    rows.push(snapshot.org.id, cf.flag.name, stage, cf.flag.project, c.variant, c.count, firstSec, lastSec);
  }
  return { rows, accepted, ignored };
}

export function metricsRoutes(rt: FrontRuntime, sink: (rows: InsightsRows) => void): Route[] {
  const answer = (auth: Authenticated, inc: Incoming): Reply => {
    const query = parseFeedQuery(queryObject(inc.query));
    const { stage } = checkScope(auth, query.stage ?? auth.principal.environment, noStage);
    const body = parseInput(metricsBodySchema, jsonObjectBody(inc), 'body');
    const { rows, accepted, ignored } = metricsRows(auth, stage, body, rt.now());
    if (rows.length > 0 && rt.config.insights) sink(rows);
    return { status: 202, body: { accepted, ignored } };
  };
  return [
    {
      method: 'post',
      pattern: METRICS_PATH,
      headers: KEY_HEADERS,
      handler: (inc) => {
        const auth = authenticate(rt, requestKey(inc), evalBucket, clientAddress(inc));
        return auth instanceof Promise ? auth.then((a) => answer(a, inc)) : answer(auth, inc);
      },
    },
  ];
}
