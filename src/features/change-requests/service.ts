/**
 * Change requests (docs/change-requests.md, CONTRACT 17): the functions REST and GraphQL both call.
 *
 * - A revision is made in one transaction with the organization locked: each target's state is
 *   read (its base), then every change runs, with the author's authority, through the very
 *   transaction-level function its direct write runs (flags/service.ts `upsertConfigTx`, ...)
 *   inside a savepoint that is rolled back: the changes are validated exactly as the direct
 *   writes would be, and each target's state after the request is read for the diff.
 * - An apply runs the same functions for real in one `writeOrg` transaction: one organization
 *   version, one propagated change, each change audited as its direct write with
 *   `changeRequestId`, after checking the hash, the approvals and that no target moved.
 * - Reviews bind to the hash; a new revision voids every review given so far.
 */
import { randomBytes } from 'node:crypto';
import type { Authenticated } from '../../auth/authenticate.js';
import {
  has,
  requireApplication,
  requireEnvironment,
  requirePermission,
  requireUnscoped,
  type Principal,
} from '../../auth/permissions.js';
import { badRequest, conflict, forbidden, notFound, quotaExceeded, VexilError } from '../../domain/errors.js';
import { findName, sameName } from '../../domain/name-matching.js';
import { changedKillSwitchRules } from '../../domain/protection.js';
import type { AuditActor, AuditChange, Flag, FlagConfig, KillSwitchRule, Organization, Segment } from '../../domain/types.js';
import { parseDateTime } from '../../domain/validation.js';
import type { ActorRuntime } from '../../runtime.js';
import type { Touches } from '../../snapshots/registry.js';
import type { Queryable } from '../../storage/database.js';
import { insertEvent } from '../audit/store.js';
import * as flags from '../flags/service.js';
import * as flagStore from '../flags/store.js';
import * as orgs from '../organizations/service.js';
import { getOrg } from '../organizations/store.js';
import type { GuardOptions } from '../policies/guard.js';
import { readPolicies } from '../policies/store.js';
import * as segments from '../segments/service.js';
import * as segmentStore from '../segments/store.js';
import { actorOf, writeOrg, writeOrgKeys, type Audited } from '../write.js';
import {
  approvalState,
  describeTarget,
  diffOf,
  MAX_OPEN_REQUESTS,
  movedTargets,
  parseCreateRequest,
  parseHashBody,
  parseReview,
  parseUpdateRequest,
  revisionHash,
  selfReviewAllowed,
  targetKey,
  targetOf,
  uniqueTargets,
  type Change,
  type Policy,
  type Target,
} from './changes.js';
import * as store from './store.js';

/** A change request's changes pass the review guard of protected environments: their approvals are the review. */
const VIA: GuardOptions = { viaChangeRequest: true };

/** Thrown inside a scheduled apply's transaction when the request is no longer scheduled (another node applied it). */
export class Taken extends Error {}

export type Run = (tx: Queryable, org: Organization) => Promise<Audited<unknown>>;

// ---- each change as its direct write ------------------------------------------------------------------

/** A change's checks before any transaction (permission, scopes, body: 403, 400), and its transaction-level write. */
function prepare(rt: ActorRuntime, p: Principal, c: Change, at: number): Run {
  const limits = rt.config.tenancyLimits;
  try {
    switch (c.op) {
      case 'upsertConfig': {
        requirePermission(p, 'CanWrite');
        const input = flags.parseConfigUpsert(rt, c.input);
        return (tx, org) => flags.upsertConfigTx(tx, org, p, c.flag, input, limits, VIA);
      }
      case 'setConfigEnabled':
        requirePermission(p, 'CanWrite');
        return (tx, org) => flags.setConfigEnabledTx(tx, org, p, c.flag, c.stage, c.clientId, c.enabled, VIA);
      case 'deleteConfig':
        requirePermission(p, 'CanWrite');
        return (tx, org) => flags.deleteConfigTx(tx, org, p, c.flag, c.stage, c.clientId, VIA);
      case 'updateFlag': {
        const input = flags.prepareUpdateFlag(rt, p, c.input);
        return (tx, org) => flags.updateFlagTx(tx, org, p, c.flag, input, VIA);
      }
      case 'upsertSegment': {
        // An existing segment is updated (description, conditions); a new one created.
        const { application: _ignored, ...rest } = c.input;
        const update = segments.prepareUpdateSegment(rt, p, rest);
        const create = segments.prepareCreateSegment(rt, p, { ...c.input, name: c.segment });
        return async (tx, org) => {
          const cur = await segmentStore.getSegment(tx, p.orgId, c.segment);
          if (cur === null) return segments.createSegmentTx(tx, org, p, create.input, create.application, limits);
          if (c.input.application !== undefined && (c.input.application === null) !== (cur.application === null || !sameName(String(c.input.application), cur.application ?? '')))
            throw badRequest(`Segment '${c.segment}' exists in application ${cur.application === null ? '(organization-wide)' : `'${cur.application}'`}: its application does not change`);
          return segments.updateSegmentTx(tx, org, p, c.segment, update, VIA);
        };
      }
      case 'deleteSegment':
        requirePermission(p, 'CanWrite');
        return (tx, org) => segments.deleteSegmentTx(tx, org, p, c.segment, VIA);
      case 'setKillSwitch': {
        const rules = orgs.prepareKillSwitch(p, c.input);
        // The organization as the earlier changes of the request left it.
        return async (tx, org) => orgs.replaceKillSwitchTx(tx, (await getOrg(tx, org.id)) ?? org, p, rules, VIA);
      }
    }
  } catch (err) {
    throw prefixed(err, at);
  }
}

/** An error of change `at`, its message naming the change. */
function prefixed(err: unknown, at: number): unknown {
  if (err instanceof VexilError) return new VexilError(err.code, `changes[${at}]: ${err.message}`, { cause: err });
  return err;
}

const prepareAll = (rt: ActorRuntime, p: Principal, changes: readonly Change[]): Run[] => changes.map((c, i) => prepare(rt, p, c, i));
/** Each change's transaction-level write, checked for `p` (the preview's rolled-back run). */
export const prepareChanges = prepareAll;

// ---- targets and their states -----------------------------------------------------------------------------

async function resolveTargets(tx: Queryable, orgId: string, changes: readonly Change[]): Promise<Target[]> {
  const envs = new Map<string, string[]>();
  for (const c of changes) {
    if ((c.op === 'upsertConfig' || c.op === 'setConfigEnabled' || c.op === 'deleteConfig') && !envs.has(c.flag)) {
      envs.set(c.flag, (await flagStore.getFlag(tx, orgId, c.flag))?.environments ?? []);
    }
  }
  return changes.map((c) => targetOf(c, (flag, stage) => findName(envs.get(flag) ?? [], stage) ?? stage));
}

async function readState(tx: Queryable, orgId: string, t: Target): Promise<unknown> {
  switch (t.type) {
    case 'config':
      return flagStore.getConfig(tx, orgId, t.flag, t.stage, t.clientId);
    case 'flag':
      return flagStore.getFlag(tx, orgId, t.flag);
    case 'segment':
      return segmentStore.getSegment(tx, orgId, t.segment);
    default:
      return (await getOrg(tx, orgId))?.killSwitch ?? [];
  }
}

async function readStates(tx: Queryable, orgId: string, targets: readonly Target[]): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  for (const t of uniqueTargets(targets)) out[targetKey(t)] = await readState(tx, orgId, t);
  return out;
}

/** The environments whose evaluation the targets' change can alter, in the organization's order. */
async function environmentsOf(tx: Queryable, org: Organization, targets: readonly Target[], bases: Record<string, unknown>, afters: Record<string, unknown>): Promise<string[]> {
  const out = new Set<string>();
  const add = (s: string) => out.add(findName(org.environments, s) ?? s);
  for (const t of uniqueTargets(targets)) {
    const k = targetKey(t);
    if (t.type === 'config') add(t.stage);
    else if (t.type === 'flag') for (const f of [bases[k], afters[k]] as (Flag | null)[]) for (const e of f?.environments ?? []) add(e);
    else if (t.type === 'segment') {
      for (const name of await segmentStore.flagsUsingSegment(tx, org.id, t.segment)) for (const c of await flagStore.listConfigs(tx, org.id, name)) add(c.stage);
    } else {
      for (const r of changedKillSwitchRules((bases[k] ?? []) as KillSwitchRule[], (afters[k] ?? []) as KillSwitchRule[])) {
        if (r.environment === null) org.environments.forEach(add);
        else add(r.environment);
      }
    }
  }
  return org.environments.filter((e) => out.has(e)).concat([...out].filter((e) => !org.environments.includes(e)));
}

interface Evaluated {
  targets: Target[];
  bases: Record<string, unknown>;
  afters: Record<string, unknown>;
  environments: string[];
}

/**
 * Reads each target's base, then runs every change inside a savepoint that is rolled back: each is
 * checked as its direct write (400, 403, 404, 409), and each target's state after is read.
 */
async function evaluate(tx: Queryable, org: Organization, changes: readonly Change[], runs: readonly Run[]): Promise<Evaluated> {
  const targets = await resolveTargets(tx, org.id, changes);
  const bases = await readStates(tx, org.id, targets);
  await tx.query('savepoint change_request_dry_run');
  try {
    for (let i = 0; i < runs.length; i++) {
      try {
        await runs[i](tx, org);
      } catch (err) {
        throw prefixed(err, i);
      }
    }
    const afters = await readStates(tx, org.id, targets);
    const environments = await environmentsOf(tx, org, targets, bases, afters);
    return { targets, bases, afters, environments };
  } finally {
    await tx.query('rollback to savepoint change_request_dry_run');
  }
}

// ---- views -----------------------------------------------------------------------------------------------

type PolicyOf = (stage: string) => Policy | undefined;

async function policiesOf(tx: Queryable, orgId: string): Promise<PolicyOf> {
  const map = await readPolicies(tx, orgId);
  return (stage) => {
    for (const [k, v] of map) if (sameName(k, stage)) return v;
    return undefined;
  };
}

const reviewView = (r: store.StoredReview) => ({ reviewer: r.reviewer, decision: r.decision, hash: r.hash, revision: r.revision, comment: r.comment, at: r.at, voided: r.voided });

export async function viewOf(tx: Queryable, req: store.StoredRequest, withHistory: boolean, policyOf?: PolicyOf) {
  const pol = policyOf ?? (await policiesOf(tx, req.orgId));
  const rev = await store.getRevision(tx, req.id, req.revision);
  const reviews = await store.listReviews(tx, req.id);
  const st = approvalState(req.revision, rev.environments, pol, reviews);
  const current = reviews.filter((r) => r.revision === req.revision && !r.voided);
  const view = {
    id: req.id,
    title: req.title,
    description: req.description,
    state: req.state,
    approved: (req.state === 'open' || req.state === 'scheduled') && st.approved,
    revision: req.revision,
    hash: req.hash,
    author: req.author,
    changes: rev.changes,
    diff: diffOf(rev.targets, rev.bases, rev.afters),
    environments: rev.environments,
    requiredApprovals: st.environments,
    approvals: current.filter((r) => r.decision === 'approve').map(reviewView),
    rejections: current.filter((r) => r.decision === 'reject').map(reviewView),
    createdAt: req.createdAt,
    updatedAt: req.updatedAt,
    appliedAt: req.appliedAt,
    scheduledAt: req.scheduledAt,
    error: req.error,
    reverts: req.reverts,
  };
  if (!withHistory) return view;
  const revisions = await store.listRevisions(tx, req.id);
  return {
    ...view,
    history: {
      revisions: revisions.map((r) => ({ revision: r.revision, hash: r.hash, author: r.author, changes: r.changes, diff: diffOf(r.targets, r.bases, r.afters), environments: r.environments, createdAt: r.createdAt })),
      reviews: reviews.map(reviewView),
    },
  };
}

export type ChangeRequestView = Awaited<ReturnType<typeof viewOf>>;

function requestEvent(action: AuditChange['action'], req: store.StoredRequest, extra: Record<string, unknown> = {}): AuditChange {
  return {
    action,
    target: { type: 'changeRequest' as AuditChange['target']['type'], name: req.id },
    application: null,
    before: null,
    after: { id: req.id, hash: req.hash, revision: req.revision, state: req.state, title: req.title, ...extra },
    changeRequestId: req.id,
  };
}

const newId = (): string => 'cr_' + Date.now().toString(36).padStart(10, '0') + randomBytes(5).toString('hex');

async function loadLocked(tx: Queryable, orgId: string, id: string): Promise<store.StoredRequest> {
  const req = await store.getRequest(tx, orgId, id, true);
  if (req === null) throw notFound(`Change request '${id}' not found`);
  return req;
}

// ---- reads ---------------------------------------------------------------------------------------------

export async function getRequest(rt: ActorRuntime, auth: Authenticated, id: string) {
  requirePermission(auth.principal, 'CanRead');
  const req = await store.getRequest(rt.db, auth.principal.orgId, id);
  if (req === null) throw notFound(`Change request '${id}' not found`);
  return viewOf(rt.db, req, true);
}

export interface ListArgs {
  state?: string | null;
  limit?: number | null;
  after?: string | null;
}

export async function listRequests(rt: ActorRuntime, auth: Authenticated, args: ListArgs) {
  requirePermission(auth.principal, 'CanRead');
  const state = args.state ?? null;
  if (state !== null && !store.REQUEST_STATES.includes(state as store.RequestState)) throw badRequest(`state: one of ${store.REQUEST_STATES.join(', ')}`);
  const limit = args.limit ?? 1000;
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw badRequest('limit: an integer from 1 to 1000');
  const page = await store.listRequests(rt.db, auth.principal.orgId, state as store.RequestState | null, args.after ?? null, limit);
  const pol = await policiesOf(rt.db, auth.principal.orgId);
  const items = [];
  for (const r of page.rows) items.push(await viewOf(rt.db, r, false, pol));
  return { items, total: page.total, hasMore: page.hasMore };
}

// ---- writes --------------------------------------------------------------------------------------------

async function makeRequest(rt: ActorRuntime, p: Principal, body: { title: string; description: string | null; changes: Change[] }, reverts: string | null) {
  const runs = prepareAll(rt, p, body.changes);
  return writeOrgKeys(rt, actorOf(p), p.orgId, async (tx, org) => {
    if ((await store.countLive(tx, p.orgId)) >= MAX_OPEN_REQUESTS) {
      throw quotaExceeded(`The organization has ${MAX_OPEN_REQUESTS} open change requests, the limit (docs/limits.md); apply or close some first`);
    }
    const ev = await evaluate(tx, org, body.changes, runs);
    const hash = revisionHash(body.changes, ev.bases);
    const author = { keyId: p.keyId, keyName: p.keyName };
    const req = await store.insertRequest(tx, p.orgId, { id: newId(), title: body.title, description: body.description, author, reverts }, hash);
    await store.insertRevision(tx, req.id, { revision: 1, hash, author, changes: body.changes, ...ev });
    return { result: await viewOf(tx, req, false), audit: requestEvent('change.create', req, reverts === null ? {} : { reverts }) };
  });
}

export function createRequest(rt: ActorRuntime, auth: Authenticated, raw: unknown) {
  const p = auth.principal;
  requirePermission(p, 'CanWrite');
  return makeRequest(rt, p, parseCreateRequest(raw), null);
}

const REVISABLE: readonly store.RequestState[] = ['open', 'rejected', 'scheduled', 'failed'];

async function revise(rt: ActorRuntime, p: Principal, id: string, next: { changes?: Change[]; title?: string; description?: string | null }) {
  const pre = await store.getRequest(rt.db, p.orgId, id);
  if (pre === null) throw notFound(`Change request '${id}' not found`);
  const changes = next.changes ?? (await store.getRevision(rt.db, id, pre.revision)).changes;
  const runs = prepareAll(rt, p, changes);
  return writeOrgKeys(rt, actorOf(p), p.orgId, async (tx, org) => {
    const cur = await loadLocked(tx, p.orgId, id);
    if (!REVISABLE.includes(cur.state)) throw conflict(`Change request '${id}' is ${cur.state}: it takes no new revision`);
    if (next.changes === undefined && cur.revision !== pre.revision) throw conflict(`Change request '${id}' was revised meanwhile; rebase again`);
    const ev = await evaluate(tx, org, changes, runs);
    const hash = revisionHash(changes, ev.bases);
    const revision = cur.revision + 1;
    await store.insertRevision(tx, id, { revision, hash, author: { keyId: p.keyId, keyName: p.keyName }, changes, ...ev });
    const saved = await store.reviseRequest(tx, id, revision, hash, { title: next.title, description: next.description });
    return { result: await viewOf(tx, saved, false), audit: requestEvent('change.revise', saved, { previousHash: cur.hash }) };
  });
}

export function updateRequest(rt: ActorRuntime, auth: Authenticated, id: string, raw: unknown) {
  const p = auth.principal;
  requirePermission(p, 'CanWrite');
  return revise(rt, p, id, parseUpdateRequest(raw));
}

export function rebaseRequest(rt: ActorRuntime, auth: Authenticated, id: string) {
  const p = auth.principal;
  requirePermission(p, 'CanWrite');
  return revise(rt, p, id, {});
}

/** The reviewer's scopes cover every target: its application and environment (403 otherwise). */
async function requireCovers(tx: Queryable, p: Principal, rev: store.StoredRevision): Promise<void> {
  for (const t of uniqueTargets(rev.targets)) {
    const k = targetKey(t);
    const state = (rev.bases[k] ?? rev.afters[k]) as Flag | Segment | FlagConfig | null;
    if (t.type === 'config') {
      const flag = await flagStore.getFlag(tx, p.orgId, t.flag);
      if (flag !== null) requireApplication(p, flag.project);
      requireEnvironment(p, t.stage);
    } else if (t.type === 'flag') {
      const flag = (state as Flag | null) ?? (await flagStore.getFlag(tx, p.orgId, t.flag));
      if (flag !== null) requireApplication(p, flag.project);
      if (p.environment !== null) throw forbidden(`This key is scoped to environment '${p.environment}': it cannot review a change of flag '${t.flag}'`);
    } else if (t.type === 'segment') {
      const s = state as Segment | null;
      const app = s?.application ?? null;
      if (app === null) requireUnscoped(p, `Reviewing a change of organization-wide segment '${t.segment}'`);
      else requireApplication(p, app);
      if (p.environment !== null) throw forbidden(`This key is scoped to environment '${p.environment}': it cannot review a change of segment '${t.segment}'`);
    } else requireUnscoped(p, 'Reviewing a change of the kill switch');
  }
}

export async function reviewRequest(rt: ActorRuntime, auth: Authenticated, id: string, raw: unknown) {
  const p = auth.principal;
  requirePermission(p, 'CanApprove');
  const body = parseReview(raw);
  return writeOrgKeys(rt, actorOf(p), p.orgId, async (tx) => {
    const req = await loadLocked(tx, p.orgId, id);
    if (req.state !== 'open' && req.state !== 'rejected') throw conflict(`Change request '${id}' is ${req.state}: it takes no review`);
    if (body.hash !== req.hash) throw conflict(`The hash ${body.hash} is not the current revision's (revision ${req.revision}, hash ${req.hash}): the request changed since it was read`);
    const rev = await store.getRevision(tx, id, req.revision);
    const pol = await policiesOf(tx, p.orgId);
    if ((await store.revisionAuthors(tx, id)).has(p.keyId) && !selfReviewAllowed(rev.environments, pol)) {
      throw forbidden(`This key authored a revision of change request '${id}': a protected environment it touches does not allow self-approval`);
    }
    await requireCovers(tx, p, rev);
    const review = await store.insertReview(tx, id, { revision: req.revision, hash: req.hash, decision: body.decision, comment: body.comment ?? null, reviewer: { keyId: p.keyId, keyName: p.keyName } });
    const saved = body.decision === 'reject' && req.state === 'open' ? await store.setState(tx, id, 'rejected') : req;
    return { result: await viewOf(tx, saved, false, pol), audit: requestEvent('change.review', saved, { decision: review.decision, comment: review.comment }) };
  });
}

/** What an apply touches, so that every node reloads no more than that. */
function touchesOf(targets: readonly Target[]): Touches {
  const u = uniqueTargets(targets);
  const flagsOf = new Set(u.map((t) => (t.type === 'config' || t.type === 'flag' ? t.flag : null)));
  if (u.every((t) => t.type === 'config' || t.type === 'flag') && flagsOf.size === 1) return { flag: [...flagsOf][0]! };
  if (u.length === 1 && u[0].type === 'segment') return { segment: u[0].segment };
  if (u.length === 1 && u[0].type === 'killSwitch') return 'settings';
  return 'all';
}

/**
 * Applies the request's current revision with `p`'s authority, in one transaction and one
 * organization version, when the hash is current, the approvals are given and no target moved.
 * `scheduled`: the schedule runner's apply (the request must still be scheduled, else `Taken`).
 */
export async function applyAs(rt: ActorRuntime, p: Principal, id: string, hash: string, scheduled = false) {
  requirePermission(p, 'CanWrite');
  const pre = await store.getRequest(rt.db, p.orgId, id);
  if (pre === null) throw notFound(`Change request '${id}' not found`);
  const rev = await store.getRevision(rt.db, id, pre.revision);
  const runs = prepareAll(rt, p, rev.changes);
  const actor = actorOf(p);
  return writeOrg(rt, actor, p.orgId, touchesOf(rev.targets), async (tx, org) => {
    const req = await loadLocked(tx, p.orgId, id);
    if (scheduled && req.state !== 'scheduled') throw new Taken();
    if (!scheduled && req.state !== 'open') {
      throw conflict(`Change request '${id}' is ${req.state}${req.state === 'rejected' ? ' (a rejection on its current revision)' : ''}: it cannot be applied`);
    }
    if (hash !== req.hash) throw conflict(`The hash ${hash} is not the current revision's (revision ${req.revision}, hash ${req.hash})`);
    if (req.revision !== rev.revision) throw conflict(`Change request '${id}' was revised meanwhile; read it again`);
    const pol = await policiesOf(tx, p.orgId);
    const st = approvalState(req.revision, rev.environments, pol, await store.listReviews(tx, id));
    if (st.rejected) throw conflict(`Change request '${id}' has a rejection on its current revision`);
    if (!st.approved) {
      const lacking = st.environments.filter((e) => e.approvals < e.required).map((e) => `'${e.stage}' (${e.approvals} of ${e.required})`);
      throw conflict(`Change request '${id}' lacks the approvals its protected environments require: ${lacking.join(', ')}`);
    }
    const moved = movedTargets(rev.targets, rev.bases, await readStates(tx, p.orgId, rev.targets));
    if (moved.length > 0) {
      throw conflict(`Change request '${id}' conflicts: ${moved.map(describeTarget).join('; ')} changed since its base; rebase it. Targets: ${moved.map(targetKey).join(', ')}`);
    }
    for (let i = 0; i < runs.length; i++) {
      let done: Audited<unknown>;
      try {
        done = await runs[i](tx, org);
      } catch (err) {
        throw prefixed(err, i);
      }
      await insertEvent(tx, p.orgId, actor, { ...done.audit, changeRequestId: id });
    }
    const saved = await store.markApplied(tx, id, org.version);
    return { result: await viewOf(tx, saved, false, pol), audit: requestEvent('change.apply', saved, { version: org.version }) };
  });
}

export function applyRequest(rt: ActorRuntime, auth: Authenticated, id: string, raw: unknown) {
  requirePermission(auth.principal, 'CanWrite');
  return applyAs(rt, auth.principal, id, parseHashBody(raw));
}

const YEAR_MS = 366 * 24 * 3600 * 1000;

export async function scheduleRequest(rt: ActorRuntime, auth: Authenticated, id: string, raw: unknown) {
  const p = auth.principal;
  requirePermission(p, 'CanWrite');
  const obj = (raw ?? {}) as Record<string, unknown>;
  const { at: rawAt, ...rest } = obj;
  const hash = parseHashBody(rest);
  const at = parseDateTime(rawAt, 'at');
  const now = rt.now();
  if (Date.parse(at) <= now) throw badRequest('at: must be in the future');
  if (Date.parse(at) > now + YEAR_MS) throw badRequest('at: at most a year ahead');
  // A new organization version: every node's schedule runner looks at the soonest due time again.
  return writeOrg(rt, actorOf(p), p.orgId, 'settings', async (tx) => {
    const req = await loadLocked(tx, p.orgId, id);
    if (req.state !== 'open') throw conflict(`Change request '${id}' is ${req.state}: only an open request is scheduled`);
    if (hash !== req.hash) throw conflict(`The hash ${hash} is not the current revision's (revision ${req.revision}, hash ${req.hash})`);
    const saved = await store.setState(tx, id, 'scheduled', { scheduledAt: at, scheduledBy: p.keyId });
    return { result: await viewOf(tx, saved, false), audit: requestEvent('change.schedule', saved, { at }) };
  });
}

export async function closeRequest(rt: ActorRuntime, auth: Authenticated, id: string) {
  const p = auth.principal;
  return writeOrgKeys(rt, actorOf(p), p.orgId, async (tx) => {
    const req = await loadLocked(tx, p.orgId, id);
    if (req.authorKeyId !== p.keyId && !has(p, 'Admin')) throw forbidden(`Only the author of change request '${id}' or an Admin key closes it`);
    if (req.state === 'applied' || req.state === 'closed') throw conflict(`Change request '${id}' is ${req.state}`);
    const saved = await store.setState(tx, id, 'closed', { scheduledAt: null });
    return { result: await viewOf(tx, saved, false), audit: requestEvent('change.close', saved) };
  });
}

/** The change that puts a target back to `state`. */
function restoring(t: Target, state: unknown): Change {
  switch (t.type) {
    case 'config': {
      const c = state as FlagConfig | null;
      if (c === null) return { op: 'deleteConfig', flag: t.flag, stage: t.stage, clientId: t.clientId };
      return {
        op: 'upsertConfig',
        flag: t.flag,
        input: {
          stage: c.stage,
          clientId: c.clientId,
          enabled: c.enabled,
          defaultVariantKey: c.defaultVariantKey,
          rolloutPercentage: c.rolloutPercentage,
          rules: c.rules.map((r) => ({ id: r.id, priority: r.priority, conditions: r.conditions, segments: r.segments, allocations: r.allocations })),
          activeFrom: c.activeFrom,
          activeUntil: c.activeUntil,
          enrollmentCutoff: c.enrollmentCutoff,
        },
      };
    }
    case 'flag': {
      const f = state as Flag;
      return {
        op: 'updateFlag',
        flag: t.flag,
        input: { type: f.type, description: f.description, tags: f.tags, variants: f.variants, isArchived: f.isArchived, dependencies: f.dependencies.map((d) => ({ flag: d.flag, variants: d.variants })) },
      };
    }
    case 'segment': {
      const s = state as Segment | null;
      if (s === null) return { op: 'deleteSegment', segment: t.segment };
      return { op: 'upsertSegment', segment: t.segment, input: { description: s.description, conditions: s.conditions } };
    }
    default:
      return { op: 'setKillSwitch', input: (state ?? []) as unknown[] };
  }
}

export async function revertRequest(rt: ActorRuntime, auth: Authenticated, id: string) {
  const p = auth.principal;
  requirePermission(p, 'CanWrite');
  const req = await store.getRequest(rt.db, p.orgId, id);
  if (req === null) throw notFound(`Change request '${id}' not found`);
  if (req.state !== 'applied') throw conflict(`Change request '${id}' is ${req.state}: only an applied request is reverted`);
  const rev = await store.getRevision(rt.db, id, req.revision);
  // Applied only when every target equalled its base: the bases are each target's state just before the apply.
  const changes = uniqueTargets(rev.targets).map((t) => restoring(t, rev.bases[targetKey(t)] ?? null));
  return makeRequest(rt, p, { title: `Revert: ${req.title}`.slice(0, 200), description: `Restores each target of change request ${id} to its state just before it was applied.`, changes }, id);
}

/** A scheduled apply refused when due: failed, with the reason; nothing else changes. */
export async function markFailed(rt: ActorRuntime, actor: AuditActor, orgId: string, id: string, reason: string): Promise<boolean> {
  return writeOrgKeys(rt, actor, orgId, async (tx) => {
    const req = await loadLocked(tx, orgId, id);
    if (req.state !== 'scheduled') throw new Taken();
    const saved = await store.setState(tx, id, 'failed', { error: reason, scheduledAt: null });
    return { result: true, audit: requestEvent('change.fail', saved, { reason }) };
  }).catch((err) => {
    if (err instanceof Taken) return false;
    throw err;
  });
}
