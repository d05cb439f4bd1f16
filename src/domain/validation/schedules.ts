/**
 * Scheduled changes (docs/api.md#scheduled-changes): `POST /api/flags/{name}/schedules`, GraphQL
 * `scheduleFlagChange`. Pure: `now` comes from the caller. The configuration a schedule carries
 * is checked by `parseUpsertFlagConfig` itself (one set of configuration rules); the checks that
 * need the flag run in the write, as for a configuration upsert.
 */
import { z } from 'zod';
import { badRequest, isVexilError } from '../errors.js';
import { sameName } from '../name-matching.js';
import { ID_MAX, name, parseInput } from './common.js';
import { parseUpsertFlagConfig, type UpsertFlagConfigInput } from './configs.js';
import { parseDateTime } from './datetime.js';
import { DEFAULT_TENANCY_LIMITS, type TenancyLimits } from './tenancy-limits.js';

/**
 * Finished (applied, cancelled, failed) schedules kept per flag: older ones are dropped when a new
 * one is made, so a flag's list holds at most its pending limit plus these.
 */
export const SCHEDULE_FINISHED_KEPT = 100;

/** How far ahead a change may be scheduled. */
export const SCHEDULE_HORIZON_MS = 365 * 24 * 3600 * 1000;

export interface ScheduleInput {
  /** Normalised ISO 8601 (UTC). */
  at: string;
  stage: string;
  clientId: string | null;
  /** Exactly one of `enabled` and `config` is non-null. */
  enabled: boolean | null;
  config: UpsertFlagConfigInput | null;
}

export const scheduleSchema = z.strictObject({
  // Checked by parseDateTime, then against now; the meta describes it to OpenAPI.
  at: z.unknown().meta({ type: 'string', format: 'date-time', description: 'In the future, at most a year ahead' }),
  stage: name,
  clientId: z.string().min(1).max(ID_MAX).nullable().optional(),
  enabled: z.boolean().nullable().optional(),
  // Checked by parseUpsertFlagConfig (errors name `config.`).
  config: z.unknown().optional().meta({
    description: 'An UpsertFlagConfigInput for the same stage and clientId; exactly one of enabled and config',
  }),
});

/** Runs `parse`, naming `prefix` in its 400's message. */
function within<T>(prefix: string, parse: () => T): T {
  try {
    return parse();
  } catch (err) {
    if (isVexilError(err) && err.code === 'BAD_REQUEST') throw badRequest(`${prefix}: ${err.message}`);
    throw err;
  }
}

export function parseSchedule(data: unknown, now: number, limits: TenancyLimits = DEFAULT_TENANCY_LIMITS): ScheduleInput {
  const p = parseInput(scheduleSchema, data, 'schedule');
  if (p.at === undefined) throw badRequest('at: required');
  const at = parseDateTime(p.at, 'at');
  const when = Date.parse(at);
  if (when <= now) throw badRequest(`at: must be in the future (${at} is not after ${new Date(now).toISOString()})`);
  if (when > now + SCHEDULE_HORIZON_MS) throw badRequest(`at: must be at most a year ahead (${at})`);
  const clientId = p.clientId ?? null;
  const enabled = p.enabled ?? null;
  const hasConfig = p.config !== undefined && p.config !== null;
  if ((enabled === null) === !hasConfig) throw badRequest('schedule: give exactly one of enabled (a boolean) and config');
  let config: UpsertFlagConfigInput | null = null;
  if (hasConfig) {
    config = within('config', () => parseUpsertFlagConfig(p.config, limits));
    if (!sameName(config.stage, p.stage)) throw badRequest(`config.stage: '${config.stage}' is not the schedule's stage '${p.stage}'`);
    if ((config.clientId ?? null) !== clientId) throw badRequest(`config.clientId: must be the schedule's clientId (${clientId === null ? 'null' : `'${clientId}'`})`);
  }
  return { at, stage: p.stage, clientId, enabled, config };
}
