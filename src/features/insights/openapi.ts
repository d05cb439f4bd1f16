/** Flag insights, lifecycle half, in the OpenAPI document (docs/insights.md, "Lifecycle"). */
import { z } from 'zod';
import { FLAG_PURPOSES, FLAG_STATUSES, STATUS_REASONS } from '../../domain/types.js';
import { registerOperations } from '../../openapi/operations.js';
import { registerSchemas } from '../../openapi/schemas.js';
import { settingsInputSchema } from './settings.js';

const dateTime = z.iso.datetime({ offset: true });
const duration = z.string().meta({ description: 'ISO 8601 duration, e.g. P40D, PT12H, PT1S' });

export const InsightsSettingsSchema = z.object({
  lifetimes: z.object(Object.fromEntries(FLAG_PURPOSES.map((p) => [p, duration.nullable()]))).meta({ description: 'Expected lifetime per purpose; null: never stale by age' }),
  unusedAfter: duration,
});

export const FlagInsightsSchema = z.object({
  flag: z.string(),
  status: z.enum(FLAG_STATUSES),
  reasons: z.array(z.enum(STATUS_REASONS)),
  lastEvaluatedAt: z.record(z.string(), dateTime.nullable()).meta({ description: 'Per environment of the flag: its last evaluation, or null' }),
  series: z.array(
    z.object({
      stage: z.string(),
      start: dateTime.meta({ description: "The bucket's start (UTC)" }),
      count: z.number().int(),
      variants: z.record(z.string(), z.number().int()).meta({ description: 'Evaluations by variant key' }),
    }),
  ).meta({ description: 'Buckets with evaluations in [from, to), by start then stage, summed over applications; empty buckets are left out' }),
});

registerSchemas({ InsightsSettings: InsightsSettingsSchema, InsightsSettingsInput: settingsInputSchema, FlagInsights: FlagInsightsSchema });

const MGMT = ['managementKey' as const];
const AUTH_ERRORS = [400, 401, 402, 403, 429];

registerOperations({
  'GET /api/flags/:name/insights': {
    summary: "A flag's status, reasons, last evaluation per environment and evaluation counts",
    description:
      'CanRead within the flag\'s application scope. Defaults: `to` now, `from` 14 days before `to`, `bucket` hour. ' +
      'At most 31 days apart by hour, 400 by day. See docs/insights.md, "Lifecycle".',
    tags: ['Flags'],
    security: MGMT,
    params: { name: 'Flag name' },
    query: [
      { name: 'from', description: 'ISO 8601 date-time with zone: first bucket start included', schema: { type: 'string', format: 'date-time' } },
      { name: 'to', description: 'ISO 8601 date-time with zone: bucket starts before it', schema: { type: 'string', format: 'date-time' } },
      { name: 'bucket', description: '`hour` (default) or `day`', schema: { type: 'string', enum: ['hour', 'day'] } },
    ],
    responses: { 200: { description: "The flag's insights", schema: 'FlagInsights' } },
    errors: [...AUTH_ERRORS, 404, 503],
  },
  'GET /api/insights/settings': {
    summary: "The organization's lifecycle settings (lifetimes per purpose, unusedAfter)",
    tags: ['Organization'],
    security: MGMT,
    responses: { 200: { description: 'The settings (the defaults until changed)', schema: 'InsightsSettings' } },
    errors: [...AUTH_ERRORS, 503],
  },
  'PUT /api/insights/settings': {
    summary: 'Change the lifecycle settings (fields left out keep their value); Admin on an organization-wide key',
    tags: ['Organization'],
    security: MGMT,
    body: 'InsightsSettingsInput',
    bodyRequired: true,
    responses: { 200: { description: 'The settings now', schema: 'InsightsSettings' } },
    errors: [...AUTH_ERRORS, 413, 415, 503],
  },
});
