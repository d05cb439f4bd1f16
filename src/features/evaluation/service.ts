/**
 * Evaluating one flag for one user (SPEC 4.1, CONTRACT.md 6): step 1's checks here, steps 2 to 13
 * in the pure engine. No I/O: everything comes from the organization's snapshot.
 */
import type { Authenticated } from '../../auth/authenticate.js';
import { requireApplication, requireEvaluator } from '../../auth/permissions.js';
import { forbidden, notFound } from '../../domain/errors.js';
import { findName, sameName } from '../../domain/names.js';
import type { Evaluation, EvaluationRequest } from '../../domain/types.js';
import { evaluateFlag, type CompiledFlag } from '../../evaluation/index.js';
import type { Runtime } from '../../runtime.js';

export interface EvaluationInput {
  userId: string;
  stage: string;
  clientId: string | null;
  context: Record<string, unknown> | null;
}

/**
 * CONTRACT.md 6 step 1 after the 400s (the caller has checked that stage and userId are present):
 * permission (403), flag in the organization (404), application scope (403), environment scope
 * (403, the key's spelling wins), stage an environment of the organization (404). Returns what the
 * engine needs.
 */
export function checkEvaluation(
  auth: Authenticated,
  flagName: string,
  input: EvaluationInput,
  orgWideCode: 'FORBIDDEN' | 'AUTH_NOT_AUTHORIZED' = 'FORBIDDEN',
): { flag: CompiledFlag; req: EvaluationRequest } {
  const p = auth.principal;
  requireEvaluator(p, orgWideCode);
  const snapshot = auth.snapshot;
  const flag = snapshot.flags.get(flagName);
  if (flag === undefined) throw notFound(`Flag '${flagName}' not found`);
  requireApplication(p, flag.flag.project);
  let stage = input.stage;
  if (p.environment !== null) {
    if (!sameName(p.environment, stage)) throw forbidden(`This key is scoped to environment '${p.environment}'`);
    stage = p.environment;
  }
  const canonical = findName(snapshot.org.environments, stage);
  if (canonical === undefined) throw notFound(`Environment '${stage}' not found`);
  return { flag, req: { userId: input.userId, stage: canonical, clientId: input.clientId, context: input.context } };
}

/** Evaluates on this thread (no pool). */
export function evaluateForKey(
  auth: Authenticated,
  flagName: string,
  input: EvaluationInput,
  nowMs: number,
  orgWideCode: 'FORBIDDEN' | 'AUTH_NOT_AUTHORIZED' = 'FORBIDDEN',
): Evaluation {
  const { flag, req } = checkEvaluation(auth, flagName, input, orgWideCode);
  return evaluateFlag(auth.snapshot, flag, req, nowMs);
}

/**
 * The entry point REST and GraphQL use: the checks run here on the front thread, the engine runs
 * in the worker pool when the node has one (VEXIL_EVAL_WORKERS > 0), else right here.
 */
export function evaluate(
  rt: Runtime,
  auth: Authenticated,
  flagName: string,
  input: EvaluationInput,
  orgWideCode: 'FORBIDDEN' | 'AUTH_NOT_AUTHORIZED' = 'FORBIDDEN',
): Evaluation | Promise<Evaluation> {
  const { flag, req } = checkEvaluation(auth, flagName, input, orgWideCode);
  if (rt.pool === null) return evaluateFlag(auth.snapshot, flag, req, rt.now());
  return rt.pool.evaluate({ orgId: auth.snapshot.org.id, version: auth.snapshot.org.version, flag: flagName, ...req });
}
