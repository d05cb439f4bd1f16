/**
 * Segment create / update bodies (docs/api.md#segments). A segment's conditions follow the rules'
 * condition syntax (configs.ts `checkCondition`); its limits are docs/limits.md, "Segments".
 */
import { z } from 'zod';
import { DESCRIPTION_MAX, flagName, name, optionalNonNull, parseInput } from './common.js';
import { checkCondition, conditionSchema, normaliseCondition } from './configs.js';
import { checkSegmentLimits, DEFAULT_TENANCY_LIMITS, type TenancyLimits } from './tenancy-limits.js';
import type { Condition } from '../types.js';

export interface CreateSegmentInput {
  name: string;
  description: string | null;
  /** Absent: the writing key's application (organization-wide for a key without one); null: organization-wide. */
  application?: string | null;
  conditions: Condition[];
}

export interface UpdateSegmentInput {
  description?: string | null;
  conditions?: Condition[];
}

export const createSegmentSchema = z.strictObject({
  // Segment names follow flag names' pattern.
  name: flagName,
  description: z.string().max(DESCRIPTION_MAX).nullable().optional(),
  application: name.nullable().optional(),
  conditions: optionalNonNull(z.array(conditionSchema)),
});

export const updateSegmentSchema = z.strictObject({
  description: z.string().max(DESCRIPTION_MAX).nullable().optional(),
  conditions: optionalNonNull(z.array(conditionSchema)),
});

function segmentConditions(list: readonly z.infer<typeof conditionSchema>[], limits: TenancyLimits): Condition[] {
  checkSegmentLimits(list, limits);
  list.forEach((c, i) => checkCondition(c, `conditions[${i}]`));
  return list.map(normaliseCondition);
}

/** `POST /api/segments`, GraphQL `createSegment`: description null and conditions [] when absent. */
export function parseCreateSegment(data: unknown, limits: TenancyLimits = DEFAULT_TENANCY_LIMITS): CreateSegmentInput {
  const p = parseInput(createSegmentSchema, data, 'segment');
  const out: CreateSegmentInput = {
    name: p.name,
    description: p.description ?? null,
    conditions: segmentConditions(p.conditions ?? [], limits),
  };
  if (p.application !== undefined) out.application = p.application;
  return out;
}

/** `PUT /api/segments/{name}`, GraphQL `updateSegment`: partial, absent fields are kept. */
export function parseUpdateSegment(data: unknown, limits: TenancyLimits = DEFAULT_TENANCY_LIMITS): UpdateSegmentInput {
  const p = parseInput(updateSegmentSchema, data, 'segment update');
  const out: UpdateSegmentInput = {};
  if (p.description !== undefined) out.description = p.description;
  if (p.conditions != null) out.conditions = segmentConditions(p.conditions, limits);
  return out;
}
