/**
 * OFREP's two evaluation routes over the one evaluation door (features/evaluation/service.ts):
 * single evaluation through `evaluate` (the same checks and engine, front thread or pool, as
 * `POST /flags/{name}`), bulk through `evaluateEach` over the key's flags for the stage, each
 * answer shaped by answer.ts.
 */
import type { Authenticated } from '../auth/authenticate.js';
import { requireEvaluator } from '../auth/permissions.js';
import { VexilError } from '../domain/errors.js';
import type { Evaluation, Organization } from '../domain/types.js';
import { selectConfig, type CompiledFlag, type OrgSnapshot } from '../engine/index.js';
import { evaluate, evaluateEach, resolveStage, type EvaluationRequest } from '../features/evaluation/service.js';
import type { Runtime } from '../runtime.js';
import { ofrepJson, reasonOf } from './answer.js';
import { OfrepError } from './errors.js';
import { evaluationInput, type OfrepRequest } from './request.js';

/**
 * `POST /ofrep/v1/evaluate/flags/{key}`: the evaluation service's `evaluate` (checks, engine,
 * pool), answered in OFREP's shape. A flag that does not exist is FLAG_NOT_FOUND (404); a stage
 * that is not an environment of the organization is INVALID_CONTEXT (400).
 */
export function evaluateOne(rt: Runtime, auth: Authenticated, flagKey: string, req: OfrepRequest): string | Promise<string> {
  const input = evaluationInput(auth, req, flagKey);
  let ev: Evaluation | Promise<Evaluation>;
  try {
    ev = evaluate(rt, auth, flagKey, input);
  } catch (err) {
    throw notFoundAsOfrep(err, auth.snapshot, flagKey);
  }
  return ev instanceof Promise ? ev.then((e) => singleAnswer(auth, flagKey, input, e)) : singleAnswer(auth, flagKey, input, ev);
}

/** The evaluationSuccess of a single evaluation (the stage is resolved only when a rule's split must be looked up). */
function singleAnswer(auth: Authenticated, flagKey: string, input: EvaluationRequest, ev: Evaluation): string {
  const cf = ev.reason.code === 'rule_matched' ? auth.snapshot.flags.get(flagKey) : undefined;
  return ofrepJson(flagKey, ev, reasonOf(ev, cf, cf === undefined ? '' : () => resolveStage(auth, input.stage), input.clientId));
}

function notFoundAsOfrep(err: unknown, snapshot: OrgSnapshot, flagKey: string): unknown {
  if (!(err instanceof VexilError) || err.code !== 'NOT_FOUND') return err;
  return snapshot.flags.has(flagKey)
    ? new OfrepError('INVALID_CONTEXT', err.message, flagKey)
    : new OfrepError('FLAG_NOT_FOUND', `Flag '${flagKey}' was not found`, flagKey);
}

// ---- bulk evaluation ----------------------------------------------------------------------------

/**
 * What a bulk request will evaluate, fixed before anything is evaluated: the checks of
 * `POST /flags/{name}` that do not depend on one flag (permission, environment scope, stage).
 */
export interface BulkPlan {
  auth: Authenticated;
  stage: string;
  clientId: string | null;
  userId: string;
  context: Record<string, unknown> | null;
}

export function planBulk(auth: Authenticated, req: OfrepRequest): BulkPlan {
  const input = evaluationInput(auth, req, null);
  requireEvaluator(auth.principal);
  let stage: string;
  try {
    stage = resolveStage(auth, input.stage);
  } catch (err) {
    if (err instanceof VexilError && err.code === 'NOT_FOUND') throw new OfrepError('INVALID_CONTEXT', err.message, null);
    throw err;
  }
  return { auth, stage, clientId: input.clientId, userId: input.userId, context: input.context };
}

/** Per organization data version: the flags of each application with a configuration per stage. */
const appFlagsCache = new WeakMap<Organization, Map<string, CompiledFlag[]>>();

/**
 * The flags of `application` that have a configuration for `stage` (any clientId), sorted by
 * name; cached per snapshot version (the Organization object is replaced by every change).
 */
function flagsWithStage(snapshot: OrgSnapshot, application: string, stage: string): CompiledFlag[] {
  let byKey = appFlagsCache.get(snapshot.org);
  if (byKey === undefined) {
    byKey = new Map();
    appFlagsCache.set(snapshot.org, byKey);
  }
  const cacheKey = application.toLowerCase() + '\u0000' + stage.toLowerCase();
  let list = byKey.get(cacheKey);
  if (list === undefined) {
    list = [];
    const app = application.toLowerCase();
    for (const cf of snapshot.flags.values()) {
      if (cf.flag.project.toLowerCase() !== app) continue;
      const sc = cf.stages.get(stage) ?? cf.stages.get(stage.toLowerCase());
      if (sc !== undefined && (sc.base !== null || sc.byClient !== null)) list.push(cf);
    }
    list.sort((a, b) => (a.flag.name < b.flag.name ? -1 : a.flag.name > b.flag.name ? 1 : 0));
    byKey.set(cacheKey, list);
  }
  return list;
}

/**
 * `POST /ofrep/v1/evaluate/flags`: every flag of the key's application with a configuration for
 * the stage (for this clientId, or without one), disabled ones included, each evaluated as a
 * single request would be; each answer serialised (ofrepJson). Runs on the front thread: one pass over the snapshot, no pool round
 * trip per flag.
 */
export function evaluateBulk(rt: Runtime, plan: BulkPlan): string[] {
  const snapshot = plan.auth.snapshot;
  const req = { userId: plan.userId, stage: plan.stage, clientId: plan.clientId, context: plan.context };
  const out: string[] = [];
  evaluateEach(
    rt,
    snapshot,
    flagsWithStage(snapshot, plan.auth.principal.application!, plan.stage),
    req,
    (cf) => selectConfig(cf, plan.stage, plan.clientId) !== null,
    (cf, ev) => out.push(ofrepJson(cf.flag.name, ev, reasonOf(ev, cf, plan.stage, plan.clientId))),
  );
  return out;
}
