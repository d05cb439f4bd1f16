/**
 * The engine plus counting: the only call of the engine on the server, on the front thread or in
 * an evaluation worker. Counting feeds `vexil_evaluations_total` (ops/eval-counts.ts; the workers
 * count into the same shared cells) and this thread's per-flag insights counters
 * (insights/counter.ts, docs/insights.md).
 */
import type { Evaluation, EvaluationRequest } from '../domain/types.js';
import { evaluateFlag, type CompiledFlag, type OrgSnapshot } from '../engine/index.js';
import type { EvaluationCounter } from '../ops/eval-counts.js';

/** The engine on one flag, counted in `counts` (null: not traffic). */
export function runEvaluation(snapshot: OrgSnapshot, flag: CompiledFlag, req: EvaluationRequest, nowMs: number, counts: EvaluationCounter | null): Evaluation {
  const ev = evaluateFlag(snapshot, flag, req, nowMs);
  if (counts !== null) counts.evaluated(snapshot, flag, req, ev);
  return ev;
}
