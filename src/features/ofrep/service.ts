/**
 * OpenFeature Remote Evaluation Protocol (docs/ofrep.md), the service side: reading an OFREP
 * request into the evaluation service's input, mapping Vexil evaluations to OFREP answers, the
 * bulk evaluation and its ETag. Single evaluation goes through `evaluate` of the evaluation
 * service, the same checks and engine (front thread or pool) as `POST /flags/{name}`.
 */
import { authenticateKeyId, type AddressSource, type Authenticated } from '../../auth/authenticate.js';
import { contextLimitError, DEFAULT_CONTEXT_LIMITS, measureContext, type ContextLimits } from '../../domain/validation.js';
import { createHash } from 'node:crypto';
import { requireEvaluator, type Principal } from '../../auth/permissions.js';
import { VexilError } from '../../domain/errors.js';
import type { Evaluation, Organization, ReasonCode } from '../../domain/types.js';
import { USER_ID_MAX, describeType, isPlainObject } from '../../domain/validation/common.js';
import { selectConfig, type CompiledFlag, type CompiledRule, type OrgSnapshot } from '../../engine/index.js';
import type { Runtime } from '../../runtime.js';
import { evaluate, evaluateEach, resolveStage, type EvaluationRequest } from '../evaluation/service.js';
import { issueStreamToken, readStreamToken, tokenExpiry, verifyStreamToken } from './stream-token.js';

// ---- errors -------------------------------------------------------------------------------------

export type OfrepErrorCode = 'PARSE_ERROR' | 'INVALID_CONTEXT' | 'TARGETING_KEY_MISSING' | 'FLAG_NOT_FOUND';

/** A failure with an OFREP error code: 400 (bad request) or 404 (FLAG_NOT_FOUND). */
export class OfrepError extends VexilError {
  constructor(
    readonly errorCode: OfrepErrorCode,
    message: string,
    /** The flag key of a single evaluation; null for bulk. */
    readonly flagKey: string | null,
  ) {
    super(errorCode === 'FLAG_NOT_FOUND' ? 'NOT_FOUND' : 'BAD_REQUEST', message);
  }
}

/** The OFREP body of an error (docs/ofrep.md, 'Answers'): `{key?, errorCode, errorDetails}` or `{errorDetails}`. */
export function ofrepErrorBody(err: VexilError): Record<string, string> {
  if (err instanceof OfrepError) {
    return err.flagKey === null
      ? { errorCode: err.errorCode, errorDetails: err.message }
      : { key: err.flagKey, errorCode: err.errorCode, errorDetails: err.message };
  }
  return { errorDetails: err.message };
}

// ---- requests -----------------------------------------------------------------------------------

/** An OFREP request read from its body: `context` split into Vexil's evaluation input. */
export interface OfrepRequest {
  userId: string;
  /** `context.stage`, or null to use the key's environment scope. */
  stage: string | null;
  clientId: string | null;
  /** `context` without targetingKey, stage and clientId; null when nothing is left. */
  context: Record<string, unknown> | null;
}

const RESERVED = new Set(['targetingKey', 'stage', 'clientId']);

/**
 * The parsed body (an object; the caller turned non-JSON into PARSE_ERROR) as an OfrepRequest.
 * No `context`, or no `context.targetingKey`: TARGETING_KEY_MISSING; a context that is not an
 * object or fields of the wrong type: INVALID_CONTEXT.
 */
export function parseOfrepRequest(body: Record<string, unknown>, flagKey: string | null, limits: ContextLimits = DEFAULT_CONTEXT_LIMITS): OfrepRequest {
  const invalid = (msg: string) => new OfrepError('INVALID_CONTEXT', msg, flagKey);
  const ctx = body.context;
  if (ctx !== undefined && ctx !== null && !isPlainObject(ctx)) {
    throw invalid(`context: expected an object, got ${describeType(ctx)}`);
  }
  const c = (ctx ?? {}) as Record<string, unknown>;
  const { targetingKey, stage, clientId } = c;
  if (targetingKey === undefined || targetingKey === null || targetingKey === '') {
    throw new OfrepError('TARGETING_KEY_MISSING', 'context.targetingKey is required (it is the userId)', flagKey);
  }
  if (typeof targetingKey !== 'string') throw invalid(`context.targetingKey: expected a string, got ${describeType(targetingKey)}`);
  if (targetingKey.length > USER_ID_MAX) throw invalid(`context.targetingKey: must be at most ${USER_ID_MAX} characters`);
  if (stage !== undefined && (typeof stage !== 'string' || stage === '')) {
    throw invalid(`context.stage: expected a non-empty string, got ${describeType(stage)}`);
  }
  if (clientId !== undefined && clientId !== null && (typeof clientId !== 'string' || clientId === '')) {
    throw invalid(`context.clientId: expected a non-empty string or null, got ${describeType(clientId)}`);
  }
  let rest: Record<string, unknown> | null = null;
  for (const k in c) {
    if (RESERVED.has(k)) continue;
    (rest ??= {})[k] = c[k];
  }
  // The context limits of docs/limits.md, 'Evaluation contexts' (VEXIL_CONTEXT_MAX_DEPTH / VEXIL_CONTEXT_MAX_VALUES), on the whole context.
  const tooBig = contextLimitError(measureContext(c, limits), limits);
  if (tooBig !== null) throw invalid(tooBig.message);
  return { userId: targetingKey, stage: (stage as string | undefined) ?? null, clientId: (clientId as string | null | undefined) ?? null, context: rest };
}

/** The evaluation service's input: the stage is `context.stage`, else the key's environment scope. */
export function evaluationInput(auth: Authenticated, req: OfrepRequest, flagKey: string | null): EvaluationRequest {
  const stage = req.stage ?? auth.principal.environment;
  if (stage === null) {
    throw new OfrepError('INVALID_CONTEXT', 'context.stage is required: this key has no environment scope', flagKey);
  }
  return { userId: req.userId, stage, clientId: req.clientId, context: req.context };
}

// ---- answers ------------------------------------------------------------------------------------

export type OfrepReason = 'STATIC' | 'TARGETING_MATCH' | 'SPLIT' | 'DISABLED' | 'UNKNOWN';

/** Vexil reason code → OFREP reason (docs/ofrep.md, 'Answers') (`rule_matched` is refined by `ruleSplits`). */
export const REASON_MAP: Record<ReasonCode, OfrepReason> = {
  rule_matched: 'TARGETING_MATCH',
  default: 'STATIC',
  rollout_excluded: 'SPLIT',
  enrollment_closed: 'SPLIT',
  config_disabled: 'DISABLED',
  killswitch: 'DISABLED',
  archived: 'DISABLED',
  not_yet_active: 'DISABLED',
  expired: 'DISABLED',
  disabled_dependency: 'DISABLED',
  project_or_env_mismatch: 'UNKNOWN',
  config_missing: 'UNKNOWN',
  no_variants: 'UNKNOWN',
};

const splits = new WeakMap<CompiledRule, boolean>();

/** Whether a rule's allocations give buckets to more than one variant. */
function ruleSplits(rule: CompiledRule): boolean {
  let s = splits.get(rule);
  if (s === undefined) {
    const keys = new Set<string>();
    let prev = 0;
    for (const a of rule.allocations) {
      if (a.upTo > prev) keys.add(a.variantKey);
      prev = a.upTo;
    }
    s = keys.size > 1;
    splits.set(rule, s);
  }
  return s;
}

/** rule_matched reasons already classified: the engine shares one frozen reason object per rule. */
const ruleReasons = new WeakMap<object, OfrepReason>();

/** The OFREP reason of an evaluation of `cf` in (canonical) `stage` for `clientId` (the stage is only needed the first time a rule matches). */
function reasonOf(ev: Evaluation, cf: CompiledFlag | undefined, stage: string | (() => string), clientId: string | null): OfrepReason {
  const code = ev.reason.code;
  if (code !== 'rule_matched' || cf === undefined) return REASON_MAP[code];
  let r = ruleReasons.get(ev.reason);
  if (r === undefined) {
    const rule = selectConfig(cf, typeof stage === 'string' ? stage : stage(), clientId)?.rules.find((x) => x.id === ev.reason.ruleId);
    r = rule !== undefined && ruleSplits(rule) ? 'SPLIT' : 'TARGETING_MATCH';
    // Only shared reasons are remembered (an answer from a worker thread is a fresh copy).
    if (Object.isFrozen(ev.reason)) ruleReasons.set(ev.reason, r);
  }
  return r;
}

export interface OfrepSuccess {
  key: string;
  value?: unknown;
  variant?: string;
  reason: OfrepReason;
  metadata: { reasonCode: ReasonCode };
}

/**
 * An evaluation as OFREP's evaluationSuccess (an OfrepSuccess), serialised by hand: the hot path
 * builds one string and no intermediate objects. An outcome without a variant leaves `value` (and
 * `variant`) out, so the client uses its code default. Reason and reason code are ASCII words.
 */
export function ofrepJson(flagKey: string, ev: Evaluation, reason: OfrepReason): string {
  const tail = `,"reason":"${reason}","metadata":{"reasonCode":"${ev.reason.code}"}}`;
  return ev.key === null
    ? `{"key":${JSON.stringify(flagKey)}${tail}`
    : `{"key":${JSON.stringify(flagKey)},"value":${JSON.stringify(ev.variant)},"variant":${JSON.stringify(ev.key)}${tail}`;
}

// ---- single evaluation --------------------------------------------------------------------------

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

// ---- ETag ---------------------------------------------------------------------------------------

const boundariesCache = new WeakMap<Organization, number[]>();

/** Every activeFrom / activeUntil instant of the organization's configurations, sorted. */
function timeBoundaries(snapshot: OrgSnapshot): number[] {
  let b = boundariesCache.get(snapshot.org);
  if (b === undefined) {
    const set = new Set<number>();
    for (const cf of snapshot.flags.values()) {
      for (const c of cf.configs.values()) {
        if (c.activeFromMs !== null) set.add(c.activeFromMs);
        if (c.activeUntilMs !== null) set.add(c.activeUntilMs);
      }
    }
    b = [...set].sort((x, y) => x - y);
    boundariesCache.set(snapshot.org, b);
  }
  return b;
}

/** How many of the sorted `boundaries` are at or before `now` (binary search). */
function passed(boundaries: number[], now: number): number {
  let lo = 0;
  let hi = boundaries.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (boundaries[mid] <= now) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * The bulk answer's ETag, computed without evaluating anything: a SHA-256 over the organization's
 * data version (every write bumps it, on every node the same), the number of configuration time
 * boundaries already passed (an answer changes when activeFrom / activeUntil passes without a
 * write), the key's id and scope, and the request body (the context). Same data, key and context
 * give the same ETag on every node; any change of them gives another.
 */
export function bulkEtag(plan: BulkPlan, body: Buffer, now: number): string {
  const snapshot = plan.auth.snapshot;
  const p = plan.auth.principal;
  const h = createHash('sha256');
  h.update(`v1\u0000${snapshot.org.id}\u0000${snapshot.org.version}\u0000${passed(timeBoundaries(snapshot), now)}\u0000${p.keyId}\u0000${p.application}\u0000${p.environment}\u0000`);
  h.update(body);
  return '"' + h.digest('base64url').slice(0, 27) + '"';
}

/** RFC 9110 13.1.2: If-None-Match (a list, weak comparison, or `*`) matches `etag`. */
export function etagMatches(ifNoneMatch: string, etag: string): boolean {
  if (ifNoneMatch === '') return false;
  if (ifNoneMatch === etag) return true;
  for (let tag of ifNoneMatch.split(',')) {
    tag = tag.trim();
    if (tag === '*') return true;
    if (tag.startsWith('W/')) tag = tag.slice(2);
    if (tag === etag) return true;
  }
  return false;
}

// ---- event streams ------------------------------------------------------------------------------

/** The SSE endpoint, advertised in bulk answers' `eventStreams` (docs/ofrep.md, 'The event stream'). */
export const EVENTS_PATH = '/ofrep/v1/events';

const tokens = new WeakMap<Principal, { expiry: number; token: string }>();

/**
 * The bulk answer's `eventStreams`: the SSE URL with a signed token for the calling key (whose
 * stored hash `keyHash` gives). Absolute: VEXIL_PUBLIC_URL, else http://<Host>; without either, the
 * OFREP `endpoint` form, which the provider resolves against its own base URL.
 */
export function eventStreams(rt: Runtime, auth: Authenticated, keyHash: () => string, host: string): OfrepEventStream[] {
  const p = auth.principal;
  const now = rt.now();
  let t = tokens.get(p);
  if (t === undefined || t.expiry !== tokenExpiry(now)) {
    t = { expiry: tokenExpiry(now), token: issueStreamToken(p.keyId, keyHash(), now) };
    tokens.set(p, t);
  }
  const requestUri = `${EVENTS_PATH}?token=${t.token}`;
  const base = rt.config.publicUrl ?? (host !== '' ? `http://${host}` : null);
  return [base === null ? { type: 'sse', endpoint: { requestUri } } : { type: 'sse', url: base + requestUri }];
}

export type OfrepEventStream = { type: 'sse'; url: string } | { type: 'sse'; endpoint: { requestUri: string } };

/** Who an open stream belongs to. */
export interface StreamGrant {
  orgId: string;
  keyId: string;
  application: string;
  /** The key's stored hash the token was checked against. */
  hash: string;
}

const BAD_TOKEN = 'Missing, invalid or expired stream token';
const evalBucket = () => 'eval' as const;

/**
 * Admits a stream connection through the one admission path (auth/authenticate.ts,
 * `authenticateKeyId`): the token names its key by id and must be well-formed, unexpired and
 * signed with the key's current hash (401 otherwise, also for a disabled or deleted key; charged to
 * the address's failed-authentication budget like a bad key), then an active subscription (402)
 * and the rate limit (429, one evaluation token); then CanEvaluate with an application scope (403).
 * One key lookup per connection (none when the key is cached), nothing per event.
 */
export async function authorizeStream(rt: Runtime, token: string | undefined, source: AddressSource = null): Promise<StreamGrant> {
  const claims = token === undefined ? null : readStreamToken(token);
  const credential = claims === null ? null : { keyId: claims.keyId, verify: (storedHash: string) => verifyStreamToken(token!, storedHash, rt.now()) };
  const { principal: p, keyHash } = await authenticateKeyId(rt, credential, evalBucket, source, BAD_TOKEN);
  requireEvaluator(p);
  return { orgId: p.orgId, keyId: p.keyId, application: p.application!, hash: keyHash };
}
