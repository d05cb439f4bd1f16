/**
 * Step 1 of docs/evaluation.md, "Order": what every evaluation transport checks before the engine
 * runs, after its own 400s. Owned here once for REST, OFREP single and bulk, GraphQL and the feed.
 * Pure: everything comes from the request's principal and the organization's snapshot.
 */
import type { Authenticated } from '../auth/authenticate.js';
import { requireApplication, requireEnvironment, requireEvaluator, requirePermission } from '../auth/permissions.js';
import { badRequest, notFound } from '../domain/errors.js';
import { findName } from '../domain/name-matching.js';
import type { EvaluationRequest } from '../domain/types.js';
import type { CompiledFlag } from '../engine/index.js';

/** What the engine needs for one flag: the flag, and the request with the stage in the organization's spelling. */
export interface Checked {
  flag: CompiledFlag;
  req: EvaluationRequest;
}

/**
 * One flag (REST, OFREP single, GraphQL `evaluate`): permission (403), flag in the organization
 * (404), application scope (403), environment scope (403, the key's spelling wins), stage an
 * environment of the organization (404).
 */
export function checkEvaluation(auth: Authenticated, flagName: string, input: EvaluationRequest): Checked {
  requireEvaluator(auth.principal);
  return target(auth, flagName, input, true);
}

/**
 * `explainEvaluation` (README, "Web UI"): CanRead (CanWrite includes it) and the read scope rules:
 * the application scope applies, org-wide keys are welcome, and an environment scope does not
 * restrict it (reads are not environment-scoped).
 */
export function checkExplain(auth: Authenticated, flagName: string, input: EvaluationRequest): Checked {
  requirePermission(auth.principal, 'CanRead');
  return target(auth, flagName, input, false);
}

/** Which flags a request that is not about one flag may evaluate: the key's application and the stage. */
export interface Scope {
  /** The key's application, in the organization's spelling. */
  application: string;
  /** The stage, in the organization's spelling. */
  stage: string;
}

/**
 * Every flag of the key's application in one stage (OFREP bulk, the feed): the checks of one flag
 * that do not depend on the flag, in the same order: permission (403), environment scope (403),
 * stage an environment of the organization (404). A request that names no stage is refused after
 * the permission with the transport's own error, `noStage` (the feed's 400).
 */
export function checkScope(auth: Authenticated, stage: string | null, noStage?: () => Error): Scope {
  const p = auth.principal;
  requireEvaluator(p);
  if (stage === null) throw noStage === undefined ? badRequest('stage is required') : noStage();
  const resolved = resolveStage(auth, stage, true);
  return { application: findName(auth.snapshot.org.applications, p.application!) ?? p.application!, stage: resolved };
}

function target(auth: Authenticated, flagName: string, input: EvaluationRequest, environmentScope: boolean): Checked {
  const flag = auth.snapshot.flags.get(flagName);
  if (flag === undefined) throw notFound(`Flag '${flagName}' not found`);
  requireApplication(auth.principal, flag.flag.project);
  return { flag, req: { userId: input.userId, stage: resolveStage(auth, input.stage, environmentScope), clientId: input.clientId, context: input.context } };
}

/**
 * The stage an evaluation runs in: with `environmentScope`, the key's environment scope must
 * match it (403; the key's spelling wins); it must be an environment of the organization (404).
 * Returns the organization's spelling.
 */
export function resolveStage(auth: Authenticated, requested: string, environmentScope: boolean): string {
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
