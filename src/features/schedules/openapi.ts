/** Scheduled changes in the OpenAPI document (docs/api.md#scheduled-changes). */
import { z } from 'zod';
import { SCHEDULE_STATUSES } from '../../domain/types.js';
import { scheduleSchema, upsertConfigSchema } from '../../domain/validation.js';
import { registerOperations } from '../../openapi/operations.js';
import { FlagConfigSchema, registerSchemas } from '../../openapi/schemas.js';

const dateTime = z.iso.datetime({ offset: true });

export const ScheduleSchema = z.object({
  id: z.string(),
  flag: z.string(),
  at: dateTime,
  stage: z.string(),
  clientId: z.string().nullable(),
  enabled: z.boolean().nullable(),
  config: FlagConfigSchema.nullable(),
  createdBy: z.object({ keyId: z.string(), keyName: z.string() }),
  status: z.enum(SCHEDULE_STATUSES),
  appliedAt: dateTime.nullable(),
  error: z.string().nullable(),
});

// `at` and `config` are checked after the shape (parseDateTime; parseUpsertFlagConfig, that is
// upsertConfigSchema): documented as what they are checked against.
const ScheduleInputDoc = scheduleSchema.extend({
  at: dateTime.meta({ description: 'In the future, at most a year ahead' }),
  config: upsertConfigSchema.nullable().optional().meta({ description: 'For the same stage and clientId; exactly one of enabled and config' }),
});
registerSchemas({ ScheduleInput: ScheduleInputDoc, Schedule: ScheduleSchema });

const MGMT = ['managementKey' as const];
const AUTH_ERRORS = [400, 401, 402, 403, 429];

registerOperations({
  'GET /api/flags/:name/schedules': {
    summary: "A flag's scheduled changes, soonest first",
    tags: ['Flags'],
    security: MGMT,
    params: { name: 'Flag name' },
    responses: { 200: { description: 'The schedules', schema: 'Schedule', array: true } },
    errors: [...AUTH_ERRORS, 404],
  },
  'POST /api/flags/:name/schedules': {
    summary: 'Schedule a configuration change (enable, disable or upsert) for a time within a year',
    description:
      'Exactly one of `enabled` and `config`; the change is checked now (400, 403, 404, 409 as the write itself) and again when applied. ' +
      '409 `QUOTA_EXCEEDED` past VEXIL_MAX_PENDING_SCHEDULES_PER_FLAG or VEXIL_MAX_PENDING_SCHEDULES_PER_ORG (docs/limits.md).',
    tags: ['Flags'],
    security: MGMT,
    params: { name: 'Flag name' },
    body: 'ScheduleInput',
    bodyRequired: true,
    responses: { 201: { description: 'The schedule (pending)', schema: 'Schedule' } },
    errors: [...AUTH_ERRORS, 404, 409, 413, 415, 503],
  },
  'DELETE /api/flags/:name/schedules/:id': {
    summary: 'Cancel a pending schedule',
    tags: ['Flags'],
    security: MGMT,
    params: { name: 'Flag name', id: 'Schedule id' },
    responses: { 204: { description: 'Cancelled' } },
    errors: [...AUTH_ERRORS, 404, 409, 503],
  },
});
