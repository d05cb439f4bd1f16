/**
 * OFREP bulk's evaluation (docs/ofrep.md, "Bulk"): every flag of the key's application that has a
 * configuration for the stage (for this clientId, or without one), disabled ones included, each
 * evaluated as a single request would be and shaped as OFREP's evaluationSuccess
 * (engine/ofrep-answer.ts). Pure: the front thread and the evaluation workers run the same code
 * (evaluate.ts places it).
 */
import { nameKey, sameName } from '../domain/name-matching.js';
import type { Organization } from '../domain/types.js';
import { selectConfig, type CompiledFlag, type OrgSnapshot } from '../engine/index.js';
import { ofrepJson, reasonOf } from '../engine/ofrep-answer.js';
import type { EvaluationCounter } from '../ops/eval-counts.js';
import type { Scope } from './check.js';
import { runEvaluation } from './run.js';

/** A bulk request after step 1 (check.ts `checkScope`): which flags, and the request each is evaluated with. */
export interface BulkRequest {
  scope: Scope;
  userId: string;
  clientId: string | null;
  context: Record<string, unknown> | null;
}

/** Per organization data version: the flags of each application with a configuration per stage. */
const scopeFlagsCache = new WeakMap<Organization, Map<string, CompiledFlag[]>>();

/**
 * The flags of the scope's application that have a configuration for its stage (any clientId),
 * sorted by name; cached per snapshot version (the Organization object is replaced by every change).
 */
export function bulkFlags(snapshot: OrgSnapshot, scope: Scope): CompiledFlag[] {
  let byScope = scopeFlagsCache.get(snapshot.org);
  if (byScope === undefined) {
    byScope = new Map();
    scopeFlagsCache.set(snapshot.org, byScope);
  }
  const { application, stage } = scope;
  const cacheKey = nameKey(application) + '\u0000' + nameKey(stage);
  let list = byScope.get(cacheKey);
  if (list === undefined) {
    list = [];
    for (const cf of snapshot.flags.values()) {
      if (!sameName(cf.flag.project, application)) continue;
      const sc = cf.stages.get(stage) ?? cf.stages.get(nameKey(stage));
      if (sc !== undefined && (sc.base !== null || sc.byClient !== null)) list.push(cf);
    }
    list.sort((a, b) => (a.flag.name < b.flag.name ? -1 : a.flag.name > b.flag.name ? 1 : 0));
    byScope.set(cacheKey, list);
  }
  return list;
}

/** Each of `flags` (`bulkFlags`) with a configuration for the clientId, evaluated and counted; the answers joined with commas. */
export function bulkAnswers(snapshot: OrgSnapshot, flags: readonly CompiledFlag[], bulk: BulkRequest, nowMs: number, counts: EvaluationCounter | null): string {
  const stage = bulk.scope.stage;
  const req = { userId: bulk.userId, stage, clientId: bulk.clientId, context: bulk.context };
  let out = '';
  for (let i = 0; i < flags.length; i++) {
    const cf = flags[i];
    if (selectConfig(cf, stage, bulk.clientId) === null) continue;
    const ev = runEvaluation(snapshot, cf, req, nowMs, counts);
    out += (out === '' ? '' : ',') + ofrepJson(cf.flag.name, ev, reasonOf(ev, cf, stage, bulk.clientId));
  }
  return out;
}
