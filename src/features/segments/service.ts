/**
 * Segment management (docs/api.md#segments): the functions REST and GraphQL both call. Reads come
 * from this node's snapshot; writes go through `writeOrg` (features/write.ts), touching the one
 * segment (`{segment: name}`), so every node reloads that segment only, and record their audit
 * event (docs/audit.md) in the same transaction.
 *
 * Scope rules: a key with an application scope sees and uses its application's segments and the
 * organization-wide ones (application null), and writes only its application's; organization-wide
 * segments are written by keys without application scope; keys with an environment scope write no
 * segments. Check order as for flags (features/flags/service.ts): permission (403), environment
 * scope (403), body (400, size limits included), segment exists (404), application scope (403),
 * then semantic checks (400), conflicts (409) and the count limit (409 QUOTA_EXCEEDED).
 */
import type { Authenticated } from '../../auth/authenticate.js';
import { inApplicationScope, requireApplication, requireFlagLevelWriter, requirePermission, type Principal } from '../../auth/permissions.js';
import { badRequest, conflict, forbidden, notFound } from '../../domain/errors.js';
import { findName, sameName } from '../../domain/name-matching.js';
import type { Organization, Segment } from '../../domain/types.js';
import { parseCreateSegment, parseUpdateSegment, quotaError, type CreateSegmentInput, type TenancyLimits, type UpdateSegmentInput } from '../../domain/validation.js';
import type { CompiledSegment } from '../../engine/index.js';
import type { ActorRuntime } from '../../runtime.js';
import type { Queryable } from '../../storage/database.js';
import { segmentChange } from '../audit/events.js';
import { actorOf, writeOrg, type Audited } from '../write.js';
import { guardWrite, segmentEffect, type GuardOptions } from '../policies/guard.js';
import * as store from './store.js';

/** Whether the key sees (and may use in rules) the segment: its application's, or organization-wide. */
export const canSee = (p: Principal, s: { application: string | null }): boolean =>
  s.application === null || inApplicationScope(p, s.application);

/** Writes need the key's application scope to cover the segment; organization-wide ones an unscoped key. */
function requireSegmentWriter(p: Principal, application: string | null): void {
  if (application === null) {
    if (p.application !== null)
      throw forbidden(`Organization-wide segments are written by keys without application scope (this key is scoped to '${p.application}')`);
  } else requireApplication(p, application);
}

// ---- reads (snapshot) -------------------------------------------------------------------------

function compiledSegments(auth: Authenticated): Iterable<CompiledSegment> {
  const s = auth.snapshot.segments;
  return s instanceof Map ? (s as Map<string, CompiledSegment>).values() : [];
}

/** The segments the key can see, sorted by name. */
export function listSegments(auth: Authenticated): Segment[] {
  requirePermission(auth.principal, 'CanRead');
  const out: Segment[] = [];
  for (const c of compiledSegments(auth)) if (canSee(auth.principal, c.segment)) out.push(c.segment);
  return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** 404 when the organization has no such segment, 403 when it is another application's. */
export function getSegment(auth: Authenticated, name: string): Segment {
  requirePermission(auth.principal, 'CanRead');
  const c = auth.snapshot.segments?.get(name);
  if (c === undefined) throw notFound(`Segment '${name}' not found`);
  if (!canSee(auth.principal, c.segment)) requireApplication(auth.principal, c.segment.application!);
  return c.segment;
}

// ---- writes -----------------------------------------------------------------------------------

async function loadForWrite(tx: Queryable, p: Principal, name: string): Promise<Segment> {
  const cur = await store.getSegment(tx, p.orgId, name);
  if (cur === null) throw notFound(`Segment '${name}' not found`);
  requireSegmentWriter(p, cur.application);
  return cur;
}

/** The checks a create needs before its transaction (403, 400): the parsed input and its application. */
export function prepareCreateSegment(rt: ActorRuntime, p: Principal, raw: unknown): { input: CreateSegmentInput; application: string | null } {
  requirePermission(p, 'CanWrite');
  requireFlagLevelWriter(p, 'segments');
  const input = parseCreateSegment(raw, rt.config.tenancyLimits);
  // Absent: the key's own application (organization-wide for a key without application scope).
  const application = input.application === undefined ? p.application : input.application;
  requireSegmentWriter(p, application);
  return { input, application };
}

export async function createSegment(rt: ActorRuntime, auth: Authenticated, raw: unknown): Promise<Segment> {
  const p = auth.principal;
  const { input, application } = prepareCreateSegment(rt, p, raw);
  return writeOrg(rt, actorOf(p), p.orgId, { segment: input.name }, (tx, org) => createSegmentTx(tx, org, p, input, application, rt.config.tenancyLimits));
}

/** A segment create inside a write's transaction (the direct write, a change request's apply). */
export async function createSegmentTx(tx: Queryable, org: Organization, p: Principal, input: CreateSegmentInput, application: string | null, limits: TenancyLimits): Promise<Audited<Segment>> {
  const canonical = application === null ? null : findName(org.applications, application);
  if (canonical === undefined) throw badRequest(`Unknown application '${application}'`);
  if ((await store.getSegment(tx, p.orgId, input.name)) !== null) throw conflict(`Segment '${input.name}' already exists`);
  // Counted with the organization locked: concurrent creates cannot pass the limit together.
  if ((await store.countSegments(tx, p.orgId)) >= limits.maxSegmentsPerOrg) throw quotaError(limits, 'maxSegmentsPerOrg');
  const saved = await store.insertSegment(tx, p.orgId, {
    name: input.name,
    description: input.description,
    application: canonical,
    conditions: input.conditions,
  });
  return { result: saved, audit: segmentChange('segment.create', null, saved) };
}

/** The checks an update needs before its transaction (403, 400). */
export function prepareUpdateSegment(rt: ActorRuntime, p: Principal, raw: unknown): UpdateSegmentInput {
  requirePermission(p, 'CanWrite');
  requireFlagLevelWriter(p, 'segments');
  return parseUpdateSegment(raw, rt.config.tenancyLimits);
}

export async function updateSegment(rt: ActorRuntime, auth: Authenticated, name: string, raw: unknown): Promise<Segment> {
  const p = auth.principal;
  const input = prepareUpdateSegment(rt, p, raw);
  return writeOrg(rt, actorOf(p), p.orgId, { segment: name }, (tx, org) => updateSegmentTx(tx, org, p, name, input));
}

/** A segment update inside a write's transaction. */
export async function updateSegmentTx(tx: Queryable, org: Organization, p: Principal, name: string, input: UpdateSegmentInput, guard: GuardOptions = {}): Promise<Audited<Segment>> {
  const cur = await loadForWrite(tx, p, name);
  // Its conditions change the answers of the configurations that use it (policies/guard.ts); its description none.
  if (input.conditions !== undefined) await guardWrite(tx, org, p, () => segmentEffect(tx, p.orgId, cur.name), guard);
  const saved = await store.saveSegment(tx, p.orgId, {
    ...cur,
    description: input.description !== undefined ? input.description : cur.description,
    conditions: input.conditions ?? cur.conditions,
  });
  return { result: saved, audit: segmentChange('segment.update', cur, saved) };
}

export async function deleteSegment(rt: ActorRuntime, auth: Authenticated, name: string): Promise<void> {
  const p = auth.principal;
  requirePermission(p, 'CanWrite');
  requireFlagLevelWriter(p, 'segments');
  await writeOrg(rt, actorOf(p), p.orgId, { segment: name }, (tx, org) => deleteSegmentTx(tx, org, p, name));
}

/** A segment delete inside a write's transaction: 409 while a rule uses it. */
export async function deleteSegmentTx(tx: Queryable, org: Organization, p: Principal, name: string, guard: GuardOptions = {}): Promise<Audited<undefined>> {
  const cur = await loadForWrite(tx, p, name);
  await guardWrite(tx, org, p, () => segmentEffect(tx, p.orgId, cur.name), guard);
  const users = await store.flagsUsingSegment(tx, p.orgId, name);
  if (users.length > 0) {
    const named = users.map((f) => `'${f}'`).join(', ');
    throw conflict(`Segment '${name}' is used by the rules of flag${users.length === 1 ? '' : 's'} ${named}`);
  }
  await store.deleteSegment(tx, p.orgId, name);
  return { result: undefined, audit: segmentChange('segment.delete', cur, null) };
}

/**
 * The segments a configuration's rules name, checked inside its write: each must exist and be
 * visible to the writing key (else 400, an invisible segment answered like an unknown one), and be
 * organization-wide or of the flag's application (else 400).
 */
export async function checkRuleSegments(
  tx: Queryable,
  p: Principal,
  flagApplication: string,
  rules: readonly { segments?: readonly string[] | null }[],
): Promise<void> {
  const names = [...new Set(rules.flatMap((r) => r.segments ?? []))];
  if (names.length === 0) return;
  const found = new Map((await store.getSegments(tx, p.orgId, names)).map((s) => [s.name, s]));
  rules.forEach((r, i) =>
    (r.segments ?? []).forEach((name, j) => {
      const s = found.get(name);
      const at = `rules[${i}].segments[${j}]`;
      if (s === undefined || !canSee(p, s)) throw badRequest(`${at}: unknown segment '${name}'`);
      if (s.application !== null && !sameName(s.application, flagApplication))
        throw badRequest(`${at}: segment '${name}' belongs to application '${s.application}', not to the flag's application '${flagApplication}'`);
    }),
  );
}
