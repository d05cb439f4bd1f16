/**
 * The engine plus counting: the only call of the engine on the server, on the front thread or in
 * an evaluation worker. Counting feeds `vexil_evaluations_total` (ops/eval-counts.ts; the workers
 * count into the same shared cells).
 */
import type { Evaluation, EvaluationRequest } from '../domain/types.js';
import { evaluateFlag, type CompiledFlag, type OrgSnapshot } from '../engine/index.js';
import type { EvalCounts } from '../ops/eval-counts.js';

/** The engine on one flag, counted in `counts` (null: not traffic, or counted later with `countEvaluations`). */
export function runEvaluation(snapshot: OrgSnapshot, flag: CompiledFlag, req: EvaluationRequest, nowMs: number, counts: EvalCounts | null): Evaluation {
  const ev = evaluateFlag(snapshot, flag, req, nowMs);
  if (counts !== null) counts.count(ev.reason.code);
  return ev;
}

/** Counts evaluations made uncounted (a GraphQL plan counts once every field has answered). */
export function countEvaluations(counts: EvalCounts, evs: readonly Evaluation[]): void {
  for (let i = 0; i < evs.length; i++) counts.count(evs[i].reason.code);
}
