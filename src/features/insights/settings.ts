/**
 * Lifecycle settings of an organization (CONTRACT 18, docs/insights.md "Lifecycle"): how long a
 * flag of each purpose is expected to live, and after how long without evaluations it is unused.
 * Validation is pure; the store and the service (GET / PUT /api/insights/settings) use it.
 */
import { z } from 'zod';
import { badRequest } from '../../domain/errors.js';
import { FLAG_PURPOSES, type FlagPurpose } from '../../domain/types.js';
import { parseInput } from '../../domain/validation.js';
import { parseDuration } from './duration.js';

export interface InsightsSettings {
  /** ISO 8601 duration per purpose; null: flags of that purpose never grow old. */
  lifetimes: Record<FlagPurpose, string | null>;
  /** ISO 8601 duration without any evaluation after which a flag is `unused`. */
  unusedAfter: string;
}

/** The same settings as milliseconds, as the status computation reads them. */
export interface SettingsMs {
  lifetimes: Record<FlagPurpose, number | null>;
  unusedAfter: number;
}

export const DEFAULT_SETTINGS: InsightsSettings = Object.freeze({
  lifetimes: Object.freeze({ release: 'P40D', experiment: 'P40D', operational: 'P7D', killSwitch: null, permission: null }),
  unusedAfter: 'P7D',
}) as InsightsSettings;

const duration = z.string().max(64).superRefine((s, ctx) => {
  const r = parseDuration(s);
  if ('error' in r) ctx.addIssue({ code: 'custom', message: r.error, input: s });
});

/** `PUT /api/insights/settings`: every field optional; what is absent keeps its current value. */
export const settingsInputSchema = z.strictObject({
  lifetimes: z
    .strictObject(Object.fromEntries(FLAG_PURPOSES.map((p) => [p, duration.nullable().optional()])) as Record<FlagPurpose, z.ZodOptional<z.ZodNullable<typeof duration>>>)
    .optional()
    .meta({ description: 'ISO 8601 duration per purpose (at least PT1S), or null: never stale by age. Purposes not given keep their value.' }),
  unusedAfter: duration.optional().meta({ description: 'ISO 8601 duration (at least PT1S) without evaluations after which a flag is unused' }),
});

export const settingsSchema = z.object({
  lifetimes: z.object(Object.fromEntries(FLAG_PURPOSES.map((p) => [p, z.string().nullable()])) as Record<FlagPurpose, z.ZodNullable<z.ZodString>>),
  unusedAfter: z.string(),
});

/** The settings after applying `raw` (a PUT body) to `current`; 400 naming the bad field. */
export function applySettings(current: InsightsSettings, raw: unknown): InsightsSettings {
  const p = parseInput(settingsInputSchema, raw, 'settings');
  if (p.lifetimes === undefined && p.unusedAfter === undefined) throw badRequest('settings: give lifetimes, unusedAfter or both');
  const lifetimes = { ...current.lifetimes };
  for (const purpose of FLAG_PURPOSES) {
    const v = p.lifetimes?.[purpose];
    if (v !== undefined) lifetimes[purpose] = v;
  }
  return { lifetimes, unusedAfter: p.unusedAfter ?? current.unusedAfter };
}

/** Stored settings (possibly written by an older version) over the defaults, in field order. */
export function normaliseSettings(stored: unknown): InsightsSettings {
  const s = (stored ?? {}) as Partial<InsightsSettings>;
  const valid = (v: unknown): v is string => typeof v === 'string' && !('error' in parseDuration(v));
  const lifetimes = {} as Record<FlagPurpose, string | null>;
  for (const p of FLAG_PURPOSES) {
    const v = s.lifetimes?.[p];
    lifetimes[p] = v === null ? null : valid(v) ? v : DEFAULT_SETTINGS.lifetimes[p];
  }
  return { lifetimes, unusedAfter: valid(s.unusedAfter) ? s.unusedAfter : DEFAULT_SETTINGS.unusedAfter };
}

export function settingsMs(s: InsightsSettings): SettingsMs {
  const ms = (d: string): number => {
    const r = parseDuration(d);
    return 'error' in r ? Number.POSITIVE_INFINITY : r.ms;
  };
  const lifetimes = {} as Record<FlagPurpose, number | null>;
  for (const p of FLAG_PURPOSES) lifetimes[p] = s.lifetimes[p] === null ? null : ms(s.lifetimes[p]!);
  return { lifetimes, unusedAfter: ms(s.unusedAfter) };
}
