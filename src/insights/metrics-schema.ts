/** The body of `POST /sdk/v1/metrics` (docs/insights.md, "Provider reports"). */
import { z } from 'zod';
import { parseDateTime } from '../domain/validation/datetime.js';

export const METRICS_MAX_ENTRIES = 10_000;
/** The most one entry may count (a provider's 30 s at any rate stays far below). */
export const METRICS_MAX_COUNT = 1_000_000_000_000;

const dateTime = z.string().max(64).refine((s) => {
  try {
    parseDateTime(s);
    return true;
  } catch {
    return false;
  }
}, 'must be an ISO 8601 date-time with a time zone');

export const metricsBodySchema = z.strictObject({
  start: dateTime.meta({ description: 'When the first counted evaluation happened (ISO 8601 with a time zone)' }),
  end: dateTime.meta({ description: 'When the last counted evaluation happened (ISO 8601 with a time zone); not before `start`' }),
  counts: z
    .array(
      z.strictObject({
        flag: z.string().min(1).max(200),
        variant: z.string().max(200).meta({ description: "The variant key served; '' when none" }),
        count: z.number().int().min(0).max(METRICS_MAX_COUNT),
      }),
    )
    .max(METRICS_MAX_ENTRIES),
});
export type MetricsBody = z.infer<typeof metricsBodySchema>;
