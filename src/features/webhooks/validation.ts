/** Webhook inputs (docs/webhooks.md): endpoint bodies and the deliveries query. Pure (zod). */
import { z } from 'zod';
import { parseInput } from '../../domain/validation/common.js';
import { MAX_URL_LENGTH } from './address.js';
import { MAX_PATTERNS, patternProblem } from './patterns.js';

export const MAX_DESCRIPTION = 500;
export const DELIVERIES_LIMIT_MAX = 1000;
export const DELIVERIES_LIMIT_DEFAULT = 100;

const pattern = z.string().superRefine((p, ctx) => {
  const problem = patternProblem(p);
  if (problem !== null) ctx.addIssue({ code: 'custom', message: `event pattern '${p.slice(0, 100)}' ${problem}` });
});

export const endpointInputSchema = z.strictObject({
  url: z.string().min(1).max(MAX_URL_LENGTH),
  events: z.array(pattern).min(1).max(MAX_PATTERNS),
  description: z.string().max(MAX_DESCRIPTION).nullish(),
  enabled: z.boolean().nullish(),
});

export interface EndpointBody {
  url: string;
  events: string[];
  description: string;
  enabled: boolean;
}

/** `POST /api/webhooks` and `PUT /api/webhooks/{id}` (the whole endpoint; description '' and enabled true when absent). */
export function parseEndpointInput(raw: unknown): EndpointBody {
  const p = parseInput(endpointInputSchema, raw, 'webhook endpoint');
  return { url: p.url, events: [...new Set(p.events)], description: p.description ?? '', enabled: p.enabled ?? true };
}

const integer = z.union([z.number(), z.string().regex(/^-?[0-9]{1,6}$/, { error: 'expected an integer' }).transform(Number)]).pipe(z.number().int());
const ID_RE = /^[1-9][0-9]{0,17}$/;

export const deliveriesQuerySchema = z.strictObject({
  limit: integer.pipe(z.number().min(1).max(DELIVERIES_LIMIT_MAX)).nullish(),
  after: z.union([z.number().int().positive().transform(String), z.string()]).pipe(z.string().regex(ID_RE, { error: 'expected a delivery id' })).nullish(),
});

export function parseDeliveriesQuery(raw: unknown): { limit: number; after: string | null } {
  const p = parseInput(deliveriesQuerySchema, raw, 'deliveries query');
  return { limit: p.limit ?? DELIVERIES_LIMIT_DEFAULT, after: p.after ?? null };
}
