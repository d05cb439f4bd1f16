/**
 * Reading an OFREP request (docs/ofrep.md, "Requests"): the body's `context` split into the
 * evaluation service's request (targetingKey is the userId; stage and clientId are reserved), with
 * OFREP's error codes for what is missing or malformed. Pure.
 */
import type { Authenticated } from '../auth/authenticate.js';
import { contextLimitError, DEFAULT_CONTEXT_LIMITS, measureContext, type ContextLimits } from '../domain/validation.js';
import { USER_ID_MAX, describeType, isPlainObject } from '../domain/validation/common.js';
import type { EvaluationRequest } from '../domain/types.js';
import { evaluationContextOf } from '../engine/openfeature-context.js';
import { OfrepError } from './errors.js';

/** An OFREP request read from its body: `context` split into Vexil's evaluation input. */
export interface OfrepRequest {
  userId: string;
  /** `context.stage`, or null to use the key's environment scope. */
  stage: string | null;
  clientId: string | null;
  /** `context` without targetingKey, stage and clientId; null when nothing is left. */
  context: Record<string, unknown> | null;
}

/**
 * The parsed body (an object; the caller turned non-JSON into PARSE_ERROR) as an OfrepRequest.
 * No `context`, or no `context.targetingKey`: TARGETING_KEY_MISSING; a context that is not an
 * object or fields of the wrong type: INVALID_CONTEXT.
 */
export function parseOfrepRequest(body: Record<string, unknown>, flagKey: string | null, limits: ContextLimits = DEFAULT_CONTEXT_LIMITS): OfrepRequest {
  const invalid = (msg: string) => new OfrepError('INVALID_CONTEXT', msg, flagKey);
  const ctx = body.context;
  if (ctx !== undefined && ctx !== null && !isPlainObject(ctx)) {
    throw invalid(`context: expected an object, got ${describeType(ctx)}`);
  }
  const c = (ctx ?? {}) as Record<string, unknown>;
  const { targetingKey, stage, clientId } = c;
  if (targetingKey === undefined || targetingKey === null || targetingKey === '') {
    throw new OfrepError('TARGETING_KEY_MISSING', 'context.targetingKey is required (it is the userId)', flagKey);
  }
  if (typeof targetingKey !== 'string') throw invalid(`context.targetingKey: expected a string, got ${describeType(targetingKey)}`);
  if (targetingKey.length > USER_ID_MAX) throw invalid(`context.targetingKey: must be at most ${USER_ID_MAX} characters`);
  if (stage !== undefined && (typeof stage !== 'string' || stage === '')) {
    throw invalid(`context.stage: expected a non-empty string, got ${describeType(stage)}`);
  }
  if (clientId !== undefined && clientId !== null && (typeof clientId !== 'string' || clientId === '')) {
    throw invalid(`context.clientId: expected a non-empty string or null, got ${describeType(clientId)}`);
  }
  const rest = evaluationContextOf(c);
  // The context limits of docs/limits.md, 'Evaluation contexts' (VEXIL_CONTEXT_MAX_DEPTH / VEXIL_CONTEXT_MAX_VALUES), on the whole context.
  const tooBig = contextLimitError(measureContext(c, limits), limits);
  if (tooBig !== null) throw invalid(tooBig.message);
  return { userId: targetingKey, stage: (stage as string | undefined) ?? null, clientId: (clientId as string | null | undefined) ?? null, context: rest };
}

/** The evaluation service's input: the stage is `context.stage`, else the key's environment scope. */
export function evaluationInput(auth: Authenticated, req: OfrepRequest, flagKey: string | null): EvaluationRequest {
  const stage = req.stage ?? auth.principal.environment;
  if (stage === null) {
    throw new OfrepError('INVALID_CONTEXT', 'context.stage is required: this key has no environment scope', flagKey);
  }
  return { userId: req.userId, stage, clientId: req.clientId, context: req.context };
}
