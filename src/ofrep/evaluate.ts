/**
 * OFREP's two evaluation routes over the evaluation stage (src/evaluation/evaluate.ts): single
 * evaluation through `evaluate` (the same checks and engine, front thread or pool, as
 * `POST /flags/{name}`), bulk through `evaluateBulk` over the key's flags for the stage (front
 * thread or pool too), each answer shaped by engine/ofrep-answer.ts. What is OFREP's own here:
 * its request reading and its error codes.
 */
import type { Authenticated } from '../auth/authenticate.js';
import { VexilError } from '../domain/errors.js';
import type { EvaluationAnswer, EvaluationRequest } from '../domain/types.js';
import type { OrgSnapshot } from '../engine/index.js';
import { ofrepJson, reasonOf } from '../engine/ofrep-answer.js';
import { checkScope, resolveStage } from '../evaluation/check.js';
import { evaluate, evaluateBulk, type BulkRequest } from '../evaluation/evaluate.js';
import type { Runtime } from '../runtime.js';
import { OfrepError } from './errors.js';
import { evaluationInput, type OfrepRequest } from './request.js';

/**
 * `POST /ofrep/v1/evaluate/flags/{key}`: the evaluation stage's `evaluate` (checks, engine,
 * pool), answered in OFREP's shape. A flag that does not exist is FLAG_NOT_FOUND (404); a stage
 * that is not an environment of the organization is INVALID_CONTEXT (400).
 */
export function evaluateOne(rt: Runtime, auth: Authenticated, flagKey: string, req: OfrepRequest): string | Promise<string> {
  const input = evaluationInput(auth, req, flagKey);
  let ev: EvaluationAnswer | Promise<EvaluationAnswer>;
  try {
    ev = evaluate(rt, auth, flagKey, input);
  } catch (err) {
    throw notFoundAsOfrep(err, auth.snapshot, flagKey);
  }
  return ev instanceof Promise ? ev.then((e) => singleAnswer(auth, flagKey, input, e)) : singleAnswer(auth, flagKey, input, ev);
}

/** The evaluationSuccess of a single evaluation (the stage is resolved only when a rule's split must be looked up). */
function singleAnswer(auth: Authenticated, flagKey: string, input: EvaluationRequest, ev: EvaluationAnswer): string {
  const cf = ev.reason.code === 'rule_matched' ? auth.snapshot.flags.get(flagKey) : undefined;
  return ofrepJson(flagKey, ev, reasonOf(ev, cf, cf === undefined ? '' : () => resolveStage(auth, input.stage, true), input.clientId));
}

function notFoundAsOfrep(err: unknown, snapshot: OrgSnapshot, flagKey: string): unknown {
  if (!(err instanceof VexilError) || err.code !== 'NOT_FOUND') return err;
  return snapshot.flags.has(flagKey)
    ? new OfrepError('INVALID_CONTEXT', err.message, flagKey)
    : new OfrepError('FLAG_NOT_FOUND', `Flag '${flagKey}' was not found`, flagKey);
}

// ---- bulk evaluation ----------------------------------------------------------------------------

/**
 * What a bulk request will evaluate, fixed before anything is evaluated (its ETag is computed
 * from it): the request after the evaluation stage's step 1 for a scope (`checkScope`).
 */
export interface BulkPlan {
  auth: Authenticated;
  bulk: BulkRequest;
}

export function planBulk(auth: Authenticated, req: OfrepRequest): BulkPlan {
  const input = evaluationInput(auth, req, null);
  let scope;
  try {
    scope = checkScope(auth, input.stage);
  } catch (err) {
    if (err instanceof VexilError && err.code === 'NOT_FOUND') throw new OfrepError('INVALID_CONTEXT', err.message, null);
    throw err;
  }
  return { auth, bulk: { scope, userId: input.userId, clientId: input.clientId, context: input.context } };
}

/**
 * `POST /ofrep/v1/evaluate/flags`: every flag of the key's application with a configuration for
 * the stage (for this clientId, or without one), disabled ones included, each evaluated as a
 * single request would be; the serialised answers joined with commas.
 */
export function evaluatePlan(rt: Runtime, plan: BulkPlan): string | Promise<string> {
  return evaluateBulk(rt, plan.auth, plan.bulk);
}
