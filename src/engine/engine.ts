/**
 * The evaluation engine: steps 2-13 of docs/evaluation.md, "Order", first match wins. Step 1
 * (400/404/403 and resolving the stage to the organization's spelling) is the caller's. Pure:
 * `nowMs` is passed in.
 *
 * Hot path: one result object per call, always of the shape {key, variant, reason, index} (one
 * hidden class); reasons of the common outcomes are shared frozen objects precomputed by
 * compileFlag (do not mutate `evaluation.reason`; replace or drop it instead), and `index` (the
 * served variant's position in the compiled flag's variants, -1 for none) is copied from the
 * compiled allocation or configuration, never looked up.
 */
import { clientIdApplication, nameKey, sameName } from '../domain/name-matching.js';
import { NO_VARIANT_INDEX, type Evaluation, type EvaluationReason, type EvaluationRequest, type KillSwitchRule } from '../domain/types.js';
import { allocationBucket, BUCKETS, rolloutBucket } from './hash.js';
import { conditionMatches } from './conditions.js';
import type { CompiledConfig, CompiledFlag, OrgSnapshot } from './compiled.js';
import type { CompiledCondition } from './conditions.js';

/** Dependency chains deeper than this are treated as a disabled dependency (cycle guard). */
export const MAX_DEPENDENCY_DEPTH = 32;

/** Per top-level evaluation memo of parent results; IN_PROGRESS marks a flag on the current path. */
type Memo = Map<string, Evaluation | typeof IN_PROGRESS>;
const IN_PROGRESS: unique symbol = Symbol('in-progress');

const NO_VARIANTS: EvaluationReason = Object.freeze({ code: 'no_variants', message: 'Flag has no variants' });
const ARCHIVED: EvaluationReason = Object.freeze({ code: 'archived', message: 'Flag is archived' });

function killSwitchMatches(rule: KillSwitchRule, flagName: string, project: string, stage: string): boolean {
  return (
    (rule.flag === null || rule.flag === undefined || rule.flag === flagName) &&
    (rule.application === null || rule.application === undefined || sameName(rule.application, project)) &&
    (rule.environment === null || rule.environment === undefined || sameName(rule.environment, stage))
  );
}

/** Reasons of kill-switch rules, built once per rule object (org snapshots are immutable). */
const killSwitchReasons = new WeakMap<KillSwitchRule, EvaluationReason>();

function killSwitchReason(rule: KillSwitchRule): EvaluationReason {
  let r = killSwitchReasons.get(rule);
  if (r === undefined) {
    r = Object.freeze({ code: 'killswitch', message: describeKillSwitch(rule) }) as EvaluationReason;
    killSwitchReasons.set(rule, r);
  }
  return r;
}

function describeKillSwitch(rule: KillSwitchRule): string {
  const parts: string[] = [];
  if (rule.flag != null) parts.push(`flag '${rule.flag}'`);
  if (rule.application != null) parts.push(`application '${rule.application}'`);
  if (rule.environment != null) parts.push(`environment '${rule.environment}'`);
  return parts.length === 0 ? 'Flag is disabled by a kill switch covering every flag' : `Flag is disabled by the kill switch on ${parts.join(', ')}`;
}

export function selectConfig(flag: CompiledFlag, stage: string, clientId: string | null): CompiledConfig | null {
  let sc = flag.stages.get(stage);
  if (sc === undefined) {
    sc = flag.stages.get(nameKey(stage));
    if (sc === undefined) return null;
  }
  if (clientId !== null && clientId !== '' && sc.byClient !== null) {
    const byClient = sc.byClient.get(clientId);
    if (byClient !== undefined) return byClient;
  }
  return sc.base;
}

function terminal(config: CompiledConfig | null, reason: EvaluationReason): Evaluation {
  return config === null
    ? { key: null, variant: null, reason, index: NO_VARIANT_INDEX }
    : { key: config.defaultKey, variant: config.defaultValue, reason, index: config.defaultIndex };
}

/**
 * Evaluates `flag` for the request at `nowMs` (docs/evaluation.md, steps 2-13). Always returns a
 * reason. `snapshot` supplies the organization (kill switch, applications) and the parents of
 * dependencies.
 */
export function evaluateFlag(
  snapshot: OrgSnapshot,
  flag: CompiledFlag,
  req: EvaluationRequest,
  nowMs: number,
): Evaluation {
  return evaluate(snapshot, flag, req, nowMs, null, 0);
}

function evaluate(
  snapshot: OrgSnapshot,
  cf: CompiledFlag,
  req: EvaluationRequest,
  nowMs: number,
  memo: Memo | null,
  depth: number,
): Evaluation {
  const flag = cf.flag;
  const stage = req.stage;
  const clientId = req.clientId ?? null;

  // 2. no_variants: no variant to answer, so key and variant are null.
  if (cf.variants.size === 0) return { key: null, variant: null, reason: NO_VARIANTS, index: NO_VARIANT_INDEX };

  // The configuration of the request, used by every terminal outcome from here on.
  const config = selectConfig(cf, stage, clientId);
  const org = snapshot.org;

  // 3. killswitch
  const ks = org.killSwitch;
  for (let i = 0; i < ks.length; i++) {
    if (killSwitchMatches(ks[i], flag.name, flag.project, stage)) {
      return terminal(config, killSwitchReason(ks[i]));
    }
  }

  // 4. archived
  if (flag.isArchived) return terminal(config, ARCHIVED);

  // 5. project_or_env_mismatch
  if (!cf.environments.has(stage) && !cf.environments.has(nameKey(stage))) {
    return terminal(config, {
      code: 'project_or_env_mismatch',
      message: `Flag is not enabled in stage '${stage}'`,
    });
  }
  const app = clientIdApplication(clientId, org.applications);
  if (app !== undefined && !sameName(app, flag.project)) {
    return terminal(config, {
      code: 'project_or_env_mismatch',
      message: `Client '${clientId}' belongs to application '${app}', not to the flag's application '${flag.project}'`,
    });
  }

  // 6. config_missing
  if (config === null) {
    return {
      key: null,
      variant: null,
      reason: {
        code: 'config_missing',
        message:
          clientId === null || clientId === ''
            ? `Stage '${stage}' has no configuration`
            : `Stage '${stage}' has no configuration (neither for client '${clientId}' nor without a client)`,
      },
      index: NO_VARIANT_INDEX,
    };
  }

  // 7. config_disabled
  if (!config.config.enabled) return terminal(config, config.reasons.configDisabled);

  // 8. not_yet_active / expired
  if (config.activeFromMs !== null && nowMs < config.activeFromMs) return terminal(config, config.reasons.notYetActive);
  if (config.activeUntilMs !== null && nowMs >= config.activeUntilMs) return terminal(config, config.reasons.expired);

  // 9. disabled_dependency
  const deps = flag.dependencies;
  if (deps.length > 0) {
    for (let i = 0; i < deps.length; i++) {
      const dep = deps[i];
      const parent = snapshot.flags.get(dep.flag);
      let failure: string | null;
      if (parent === undefined) {
        failure = `Parent flag '${dep.flag}' does not exist`;
      } else if (depth + 1 > MAX_DEPENDENCY_DEPTH) {
        failure = `Parent flag '${dep.flag}' is deeper than ${MAX_DEPENDENCY_DEPTH} dependency levels`;
      } else if (parent.flag.dependencies.length === 0 && parent !== cf) {
        // A leaf parent cannot recurse: evaluate it directly, no memo needed.
        failure = dependencyFailure(dep.flag, dep.variants, evaluate(snapshot, parent, req, nowMs, null, depth + 1));
      } else {
        // The memo (cycle marker + shared results) is created by the first flag whose parent has
        // parents of its own, which is always the top of the evaluation.
        if (memo === null) {
          memo = new Map();
          memo.set(flag.name, IN_PROGRESS);
        }
        failure = checkDependency(snapshot, parent, dep.flag, dep.variants, req, nowMs, memo, depth);
      }
      if (failure !== null) return terminal(config, { code: 'disabled_dependency', message: failure });
    }
  }

  // 10. rollout_excluded, 11. enrollment_closed. Buckets are below 10000: a full rollout with open
  // enrollment excludes no one, and the hash is not computed.
  if (config.rolloutUpTo < BUCKETS || config.cutoffUpTo !== null) {
    const bucket = rolloutBucket(flag.name, req.userId);
    if (bucket >= config.rolloutUpTo) return terminal(config, config.reasons.rolloutExcluded);
    if (config.cutoffUpTo !== null && bucket >= config.cutoffUpTo) return terminal(config, config.reasons.enrollmentClosed);
  }

  // 12. rule_matched
  const rules = config.rules;
  const context = req.context ?? null;
  for (let r = 0; r < rules.length; r++) {
    const rule = rules[r];
    if (!allMatch(rule.conditions, req.userId, context)) continue;
    // A rule's segments are checked with its conditions (docs/evaluation.md, "Segments").
    if (rule.segments.length > 0 && !inSegments(snapshot, rule.segments, req.userId, context)) continue;
    const allocs = rule.allocations;
    const n = allocs.length;
    if (n === 0) return { key: config.defaultKey, variant: config.defaultValue, reason: rule.reason, index: config.defaultIndex };
    if (n === 1) return { key: allocs[0].key, variant: allocs[0].value, reason: rule.reason, index: allocs[0].index };
    const ab = allocationBucket(flag.name, req.userId);
    for (let a = 0; a < n; a++) {
      const alloc = allocs[a];
      if (ab < alloc.upTo) return { key: alloc.key, variant: alloc.value, reason: rule.reason, index: alloc.index };
    }
    // Unreachable: the last threshold is 10000.
    const last = allocs[n - 1];
    return { key: last.key, variant: last.value, reason: rule.reason, index: last.index };
  }

  // 13. default
  return { key: config.defaultKey, variant: config.defaultValue, reason: config.reasons.default, index: config.defaultIndex };
}

function allMatch(conds: readonly CompiledCondition[], userId: string, context: Record<string, unknown> | null): boolean {
  for (let c = 0; c < conds.length; c++) if (!conditionMatches(conds[c], userId, context)) return false;
  return true;
}

/**
 * Whether the context is in every named segment: each one's conditions all match (none: everyone).
 * A name the snapshot does not hold matches no one (writes refuse such names; docs/api.md#segments).
 */
function inSegments(snapshot: OrgSnapshot, names: readonly string[], userId: string, context: Record<string, unknown> | null): boolean {
  const segments = snapshot.segments;
  if (segments === undefined) return false;
  for (let i = 0; i < names.length; i++) {
    const seg = segments.get(names[i]);
    if (seg === undefined || !allMatch(seg.conditions, userId, context)) return false;
  }
  return true;
}

/** Returns null when the dependency holds, else the message of the disabled_dependency reason. */
function checkDependency(
  snapshot: OrgSnapshot,
  parent: CompiledFlag,
  parentName: string,
  variants: string[] | null,
  req: EvaluationRequest,
  nowMs: number,
  memo: Memo,
  depth: number,
): string | null {
  let result = memo.get(parentName);
  if (result === IN_PROGRESS) return `Parent flag '${parentName}' is part of a dependency cycle`;
  if (result === undefined) {
    memo.set(parentName, IN_PROGRESS);
    result = evaluate(snapshot, parent, req, nowMs, memo, depth + 1);
    memo.set(parentName, result);
  }
  return dependencyFailure(parentName, variants, result);
}

/** Null when the parent's result satisfies the dependency, else the reason message. */
function dependencyFailure(parentName: string, variants: string[] | null, result: Evaluation): string | null {
  const code = result.reason.code;
  if (code !== 'rule_matched' && code !== 'default') {
    return `Parent flag '${parentName}' ended in '${code}'`;
  }
  if (variants !== null && variants !== undefined) {
    if (result.key === null || !variants.includes(result.key)) {
      return `Parent flag '${parentName}' served variant '${result.key}', not one of [${variants.join(', ')}]`;
    }
  }
  return null;
}
