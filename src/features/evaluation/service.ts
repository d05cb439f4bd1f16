/**
 * Evaluating one flag for one user (SPEC 4.1, CONTRACT.md 6): step 1's checks here, steps 2 to 13
 * in the pure engine. No I/O: everything comes from the organization's snapshot.
 */
import type { Authenticated } from '../../auth/authenticate.js';
import { requireApplication, requireEnvironment, requireEvaluator, requirePermission } from '../../auth/permissions.js';
import { notFound } from '../../domain/errors.js';
import { findName } from '../../domain/name-matching.js';
import type { Evaluation, EvaluationRequest } from '../../domain/types.js';
import { evaluateFlag, type CompiledFlag } from '../../engine/index.js';
import { performance } from 'node:perf_hooks';
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
export function checkEvaluation(auth: Authenticated, flagName: string, input: EvaluationInput): { flag: CompiledFlag; req: EvaluationRequest } {
  requireEvaluator(auth.principal);
  return evaluationTarget(auth, flagName, input, true);
}

/**
 * The flag (404, then 403 outside the application scope) and the request with the stage in the
 * organization's spelling (404 when it is not an environment). With `environmentScope` a key's
 * environment scope must match the stage (403) and its spelling wins.
 */
function evaluationTarget(
  auth: Authenticated,
  flagName: string,
  input: EvaluationInput,
  environmentScope: boolean,
): { flag: CompiledFlag; req: EvaluationRequest } {
  const p = auth.principal;
  const snapshot = auth.snapshot;
  const flag = snapshot.flags.get(flagName);
  if (flag === undefined) throw notFound(`Flag '${flagName}' not found`);
  requireApplication(p, flag.flag.project);
  return { flag, req: { userId: input.userId, stage: resolveStage(auth, input.stage, environmentScope), clientId: input.clientId, context: input.context } };
}

/**
 * The stage an evaluation runs in: with `environmentScope`, the key's environment scope must
 * match it (403; the key's spelling wins); it must be an environment of the organization (404).
 * Returns the organization's spelling.
 */
export function resolveStage(auth: Authenticated, requested: string, environmentScope = true): string {
  const p = auth.principal;
  let stage = requested;
  if (environmentScope && p.environment !== null) {
    requireEnvironment(p, stage);
    stage = p.environment;
  }
  const canonical = findName(auth.snapshot.org.environments, stage);
  if (canonical === undefined) throw notFound(`Environment '${stage}' not found`);
  return canonical;
}

/**
 * CONTRACT.md 12 `explainEvaluation`: what `evaluate` would answer, for a person who can read the
 * flag. CanRead (CanWrite includes it) and the read scope rules: the application scope applies,
 * org-wide keys are welcome, and an environment scope does not restrict it (reads are not
 * environment-scoped). Runs on this thread, from the snapshot; the caller always gets `reason`.
 */
export function explainForKey(auth: Authenticated, flagName: string, input: EvaluationInput, nowMs: number): Evaluation {
  requirePermission(auth.principal, 'CanRead');
  const { flag, req } = evaluationTarget(auth, flagName, input, false);
  return evaluateFlag(auth.snapshot, flag, req, nowMs);
}

/** Evaluates on this thread (no pool). */
export function evaluateForKey(auth: Authenticated, flagName: string, input: EvaluationInput, nowMs: number): Evaluation {
  const { flag, req } = checkEvaluation(auth, flagName, input);
  return evaluateFlag(auth.snapshot, flag, req, nowMs);
}

/**
 * The entry point for evaluation traffic (REST; OFREP), counted in `rt.evalCounts` (metrics):
 * the checks run here on the front thread, the engine runs in the worker pool when the node has
 * one (VEXIL_EVAL_WORKERS > 0) and its hand-off policy says the pool pays (src/pool/handoff.ts),
 * else right here. `evaluateForKey` is not counted: its callers count traffic themselves (GraphQL
 * `evaluate`) or are not traffic (explanations).
 */
export function evaluate(rt: Runtime, auth: Authenticated, flagName: string, input: EvaluationInput): Evaluation | Promise<Evaluation> {
  const { flag, req } = checkEvaluation(auth, flagName, input);
  const pool = rt.pool;
  if (pool !== null && pool.wants('rest', 1)) {
    // The worker counts what it evaluates (workers/evaluator.ts).
    return pool.evaluate({ orgId: auth.snapshot.org.id, version: auth.snapshot.org.version, flag: flagName, ...req });
  }
  let ev: Evaluation;
  // Inline: with a pool, every 32nd evaluation is timed, so the hand-off policy follows this machine's costs.
  if (pool === null || (++sampled & 31) !== 0) ev = evaluateFlag(auth.snapshot, flag, req, rt.now());
  else {
    const t0 = performance.now();
    ev = evaluateFlag(auth.snapshot, flag, req, rt.now());
    pool.policy.recordInline('rest', (performance.now() - t0) * 1000, 1);
  }
  rt.evalCounts.count(ev.reason.code);
  return ev;
}

let sampled = 0;
