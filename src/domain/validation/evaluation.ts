/** Body of an evaluation request (hot path: hand-written, no zod). */
import { z } from 'zod';
import { badRequest } from '../errors.js';
import { USER_ID_MAX, describeType, isPlainObject } from './common.js';
import { checkContextLimits, DEFAULT_CONTEXT_LIMITS, type ContextLimits } from './context-limits.js';

/**
 * The same rules as `parseEvaluationBody`, as a zod schema: the OpenAPI document is generated from
 * it, and test/node/ops/openapi.test.ts checks that both accept and refuse the same bodies.
 */
export const evaluationBodySchema = z.strictObject({
  userId: z.string().min(1).max(USER_ID_MAX),
  stage: z.string().min(1),
  clientId: z.string().min(1).nullable().optional(),
  context: z.record(z.string(), z.unknown()).nullable().optional(),
});

export interface EvaluationBody {
  userId: string;
  stage: string;
  clientId: string | null;
  context: Record<string, unknown> | null;
}

const EVAL_FIELDS = new Set(['userId', 'stage', 'clientId', 'context']);

/**
 * Body of `POST /flags/{name}` (docs/api.md#evaluation). Missing or null stage / userId: "stage is
 * required" / "userId is required". userId is a non-empty string of at most 1024 characters;
 * clientId a non-empty string or null; context a plain object or null, within the size `limits`
 * (docs/limits.md, context-limits.ts). Unknown fields are 400.
 */
export function parseEvaluationBody(data: unknown, limits: ContextLimits = DEFAULT_CONTEXT_LIMITS): EvaluationBody {
  if (!isPlainObject(data))
    throw badRequest(`evaluation request: expected a JSON object, got ${describeType(data)}`);
  const errors: string[] = [];
  for (const k in data) {
    if (!EVAL_FIELDS.has(k)) errors.push(`unknown field '${k}'`);
  }
  const { userId, stage, clientId, context } = data;
  if (stage === undefined || stage === null) errors.push('stage is required');
  else if (typeof stage !== 'string') errors.push(`stage: expected a string, got ${describeType(stage)}`);
  else if (stage.length === 0) errors.push('stage: must not be empty');
  if (userId === undefined || userId === null) errors.push('userId is required');
  else if (typeof userId !== 'string') errors.push(`userId: expected a string, got ${describeType(userId)}`);
  else if (userId.length === 0) errors.push('userId: must not be empty');
  else if (userId.length > USER_ID_MAX) errors.push(`userId: must be at most ${USER_ID_MAX} characters`);
  if (clientId !== undefined && clientId !== null) {
    if (typeof clientId !== 'string') errors.push(`clientId: expected a string or null, got ${describeType(clientId)}`);
    else if (clientId.length === 0) errors.push('clientId: must not be empty');
  }
  if (context !== undefined && context !== null && !isPlainObject(context))
    errors.push(`context: expected an object or null, got ${describeType(context)}`);
  if (errors.length > 0) throw badRequest(errors.slice(0, 3).join('; '));
  if (context !== undefined && context !== null) checkContextLimits(context, limits);
  return {
    userId: userId as string,
    stage: stage as string,
    clientId: (clientId as string | null | undefined) ?? null,
    context: (context as Record<string, unknown> | null | undefined) ?? null,
  };
}
