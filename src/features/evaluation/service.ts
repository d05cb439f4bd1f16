/**
 * The one evaluation door: every transport (REST, OFREP single and bulk, GraphQL `evaluate` on the
 * front thread or in a worker, `explainEvaluation`) and the evaluation workers evaluate through
 * this module. Step 1's checks (permission, flag, scopes, stage) are here, steps 2 to 13 in the
 * pure engine (docs/evaluation.md). This module also owns counting (`runEvaluation`,
 * `countEvaluations`: the `vexil_evaluations_total` metric) and the choice between this thread and
 * the worker pool (`evaluate`; the pool times what runs here, `EvalPool.inlineStart`). No I/O:
 * everything comes from the organization's snapshot.
 */
import type { Authenticated } from '../../auth/authenticate.js';
import { requireApplication, requireEnvironment, requireEvaluator, requirePermission } from '../../auth/permissions.js';
import { notFound } from '../../domain/errors.js';
import { findName } from '../../domain/name-matching.js';
import type { Evaluation, EvaluationRequest } from '../../domain/types.js';
import { evaluateFlag, type CompiledFlag, type OrgSnapshot } from '../../engine/index.js';
import type { EvalCounts } from '../../ops/eval-counts.js';
import type { Runtime } from '../../runtime.js';

export type { EvaluationRequest } from '../../domain/types.js';

/**
 * The engine on one flag, counted in `counts` as evaluation traffic (null: not traffic, or counted
 * later with `countEvaluations`). The only call of the engine outside it.
 */
export function runEvaluation(snapshot: OrgSnapshot, flag: CompiledFlag, req: EvaluationRequest, nowMs: number, counts: EvalCounts | null): Evaluation {
  const ev = evaluateFlag(snapshot, flag, req, nowMs);
  if (counts !== null) counts.count(ev.reason.code);
  return ev;
}

/** Counts evaluations made uncounted (a GraphQL plan counts once every field has answered). */
export function countEvaluations(counts: EvalCounts, evs: readonly Evaluation[]): void {
  for (let i = 0; i < evs.length; i++) counts.count(evs[i].reason.code);
}

/**
 * Step 1 of docs/evaluation.md, "Order", after the 400s (the caller has checked that stage and
 * userId are present): permission (403), flag in the organization (404), application scope (403),
 * environment scope (403, the key's spelling wins), stage an environment of the organization (404).
 * Returns what the engine needs.
 */
export function checkEvaluation(auth: Authenticated, flagName: string, input: EvaluationRequest): { flag: CompiledFlag; req: EvaluationRequest } {
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
  input: EvaluationRequest,
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
 * `explainEvaluation` (README, "Web UI"): what `evaluate` would answer, for a person who can read
 * the flag. CanRead (CanWrite includes it) and the read scope rules: the application scope applies,
 * org-wide keys are welcome, and an environment scope does not restrict it (reads are not
 * environment-scoped). Runs on this thread, from the snapshot; not counted (not traffic).
 */
export function explainForKey(auth: Authenticated, flagName: string, input: EvaluationRequest, nowMs: number): Evaluation {
  requirePermission(auth.principal, 'CanRead');
  const { flag, req } = evaluationTarget(auth, flagName, input, false);
  return runEvaluation(auth.snapshot, flag, req, nowMs, null);
}

/**
 * Step 1 and the engine on this thread (GraphQL `evaluate`, wherever its document runs), counted in
 * `counts` (null: the caller counts later, or it is not traffic).
 */
export function evaluateForKey(auth: Authenticated, flagName: string, input: EvaluationRequest, nowMs: number, counts: EvalCounts | null = null): Evaluation {
  const { flag, req } = checkEvaluation(auth, flagName, input);
  return runEvaluation(auth.snapshot, flag, req, nowMs, counts);
}

/**
 * Evaluation traffic of one flag (REST, OFREP): the checks run here on the front thread, the
 * engine runs in the worker pool when the node has one (VEXIL_EVAL_WORKERS > 0) and its hand-off
 * policy says the pool pays (src/pool/handoff.ts), else right here. Counted either way (a worker
 * counts what it evaluates into the same shared counters).
 */
export function evaluate(rt: Runtime, auth: Authenticated, flagName: string, input: EvaluationRequest): Evaluation | Promise<Evaluation> {
  const { flag, req } = checkEvaluation(auth, flagName, input);
  const pool = rt.pool;
  if (pool === null) return runEvaluation(auth.snapshot, flag, req, rt.now(), rt.evalCounts);
  if (pool.wants('rest', 1)) return pool.evaluate({ orgId: auth.snapshot.org.id, version: auth.snapshot.org.version, flag: flagName, ...req });
  const started = pool.inlineStart('rest');
  const ev = runEvaluation(auth.snapshot, flag, req, rt.now(), rt.evalCounts);
  pool.inlineEnd('rest', started, 1);
  return ev;
}

/**
 * Evaluation traffic of several flags for one request (OFREP bulk), on this thread in one pass
 * over the snapshot (no pool round trip per flag): `answer` gets the evaluation of each flag that
 * `include` keeps, counted.
 * The caller has run step 1 for the request (`resolveStage` and the application).
 */
export function evaluateEach(
  rt: Runtime,
  snapshot: OrgSnapshot,
  flags: readonly CompiledFlag[],
  req: EvaluationRequest,
  include: (flag: CompiledFlag) => boolean,
  answer: (flag: CompiledFlag, ev: Evaluation) => void,
): void {
  const now = rt.now();
  for (let i = 0; i < flags.length; i++) {
    const flag = flags[i];
    if (include(flag)) answer(flag, runEvaluation(snapshot, flag, req, now, rt.evalCounts));
  }
}
