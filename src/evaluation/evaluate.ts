/**
 * The evaluation stage's door: every transport (REST `POST /flags/{name}`, OFREP single and bulk,
 * GraphQL `evaluate` and `explainEvaluation`) evaluates through these four functions, and the
 * evaluation workers run the same pieces (run.ts, bulk.ts). Each is step 1 (check.ts), the engine
 * with counting (run.ts), and, for a request's whole evaluation traffic, the choice of thread
 * (placement.ts). No I/O: everything comes from the organization's snapshot (docs/evaluation.md).
 *
 * - `evaluate`: one flag, placed (REST, OFREP single).
 * - `evaluateBulk`: every flag of the key's application in one stage, placed (OFREP bulk).
 * - `evaluateHere`: one flag on this thread (GraphQL `evaluate`: its document was placed whole).
 * - `explain`: what `evaluate` would answer, for a reader; not traffic, not counted.
 */
import type { Authenticated } from '../auth/authenticate.js';
import type { Evaluation, EvaluationAnswer, EvaluationRequest } from '../domain/types.js';
import type { EvaluationCounter } from '../ops/eval-counts.js';
import type { Runtime } from '../runtime.js';
import { bulkAnswers, bulkFlags, type BulkRequest } from './bulk.js';
import { checkEvaluation, checkExplain } from './check.js';
import { placed } from './placement.js';
import { runEvaluation } from './run.js';

export type { EvaluationRequest } from '../domain/types.js';
export type { BulkRequest } from './bulk.js';

/**
 * One flag's evaluation traffic (REST, OFREP single): step 1 here on the front thread, the engine
 * here or in the worker pool (placement.ts), counted either way.
 */
export function evaluate(rt: Runtime, auth: Authenticated, flagName: string, input: EvaluationRequest): EvaluationAnswer | Promise<EvaluationAnswer> {
  const { flag, req } = checkEvaluation(auth, flagName, input);
  const snapshot = auth.snapshot;
  return placed(
    rt.pool,
    'rest',
    1,
    () => runEvaluation(snapshot, flag, req, rt.now(), rt.evalCounts),
    (pool) => pool.evaluate({ orgId: snapshot.org.id, version: snapshot.org.version, flag: flagName, ...req }),
  );
}

/**
 * OFREP bulk: every flag of `bulk.scope` (checked by the caller with `checkScope`) evaluated as a
 * single request would be, each answer OFREP's evaluationSuccess, joined with commas; here or in
 * the worker pool (placement.ts, weighed by the number of flags), counted either way.
 */
export function evaluateBulk(rt: Runtime, auth: Authenticated, bulk: BulkRequest): string | Promise<string> {
  const snapshot = auth.snapshot;
  const flags = bulkFlags(snapshot, bulk.scope);
  return placed(
    rt.pool,
    'bulk',
    flags.length,
    () => bulkAnswers(snapshot, flags, bulk, rt.now(), rt.evalCounts),
    (pool) => pool.bulk({ orgId: snapshot.org.id, version: snapshot.org.version, flags: flags.map((f) => f.flag.name), ...bulk }, flags.length),
  );
}

/**
 * One flag on this thread (GraphQL `evaluate`, wherever its document runs), counted in `counts`
 * (null: not counted; a GraphQL plan counts in a `DeferredCounts` it commits once every field answered).
 */
export function evaluateHere(auth: Authenticated, flagName: string, input: EvaluationRequest, nowMs: number, counts: EvaluationCounter | null = null): Evaluation {
  const { flag, req } = checkEvaluation(auth, flagName, input);
  return runEvaluation(auth.snapshot, flag, req, nowMs, counts);
}

/**
 * `explainEvaluation` (README, "Web UI"): what `evaluate` would answer, for a person who can read
 * the flag (check.ts `checkExplain`). On this thread; not counted (not traffic).
 */
export function explain(auth: Authenticated, flagName: string, input: EvaluationRequest, nowMs: number): Evaluation {
  const { flag, req } = checkExplain(auth, flagName, input);
  return runEvaluation(auth.snapshot, flag, req, nowMs, null);
}
