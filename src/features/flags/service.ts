/**
 * Flag management (docs/api.md#flags): the functions REST and GraphQL both call, so that
 * permissions, scopes, validation and conflicts cannot drift apart. Reads come from this node's
 * snapshot (no database work); writes go through `writeOrg` and check the stored state inside the
 * transaction, where the organization is locked. Each write returns its audit event (docs/audit.md)
 * to `writeOrg`, which records it in the same transaction.
 *
 * Check order: permission (403), environment scope of flag-level writes (403), body (400, size
 * limits included), flag exists (404), application scope (403), environment scope of a
 * configuration (403), then semantic validation (400: segments a rule names included), conflicts (409) and count limits (409
 * QUOTA_EXCEEDED). Limits: docs/limits.md "Tenancy limits", `rt.config.tenancyLimits`.
 */
import { randomBytes } from 'node:crypto';
import type { Authenticated } from '../../auth/authenticate.js';
import {
  inApplicationScope,
  requireApplication,
  requireEnvironment,
  requireFlagLevelWriter,
  requirePermission,
  type Principal,
} from '../../auth/permissions.js';
import { badRequest, conflict, forbidden, notFound } from '../../domain/errors.js';
import { clientIdApplication, findName, sameName } from '../../domain/name-matching.js';
import type { AuditChange, Flag, FlagConfig, FlagDependency, Organization, Rule } from '../../domain/types.js';
import {
  parseCreateFlag,
  parseFlagListArgs,
  parseFlagListQuery,
  parseNameList,
  parseUpdateFlag,
  parseUpsertFlagConfig,
  quotaError,
  validateConfigAgainstFlag,
  validateVariants,
  type TenancyLimits,
  type UpdateFlagInput,
  type UpsertFlagConfigInput,
} from '../../domain/validation.js';
import type { CompiledFlag } from '../../engine/index.js';
import type { ActorRuntime } from '../../runtime.js';
import { flagIndexOf } from '../../snapshots/flag-index.js';
import { flagPage, type FlagPage } from './page.js';
import type { Queryable } from '../../storage/database.js';
import { configChange, flagChange } from '../audit/events.js';
import { checkRuleSegments } from '../segments/service.js';
import { cancelPendingSchedules } from '../schedules/store.js';
import { tracker } from '../insights/tracker.js';
import { actorOf, writeOrg, type Audited } from '../write.js';
import { flagEffect, guardWrite, type GuardOptions } from '../policies/guard.js';
import * as store from './store.js';

export type FlagWithConfigs = Flag & { configs: FlagConfig[] };

// ---- reads (snapshot) -------------------------------------------------------------------------

/** The flag as the key may see it: 404 when the organization has no such flag, 403 outside scope. */
function visible(auth: Authenticated, name: string): CompiledFlag {
  const compiled = auth.snapshot.flags.get(name);
  if (compiled === undefined) throw notFound(`Flag '${name}' not found`);
  requireApplication(auth.principal, compiled.flag.project);
  return compiled;
}

export type { FlagPage } from './page.js';

/**
 * The flag list, REST `GET /api/flags` and GraphQL `flags` / `flagConnection` alike: the key's
 * application scope and the filters of `raw` (query parameters, or GraphQL arguments with
 * `from: 'graphql'`), sorted by name, paged. Served from the snapshot's name-sorted index
 * (snapshots/flag-index.ts, page.ts): no sort, and no scan unless a filter other than the
 * application asks for one. The lifecycle status filter is the management actor's tracker's
 * (features/insights/tracker.ts).
 */
export function listFlagPage(auth: Authenticated, raw: unknown = {}, from: 'query' | 'graphql' = 'query'): FlagPage {
  requirePermission(auth.principal, 'CanRead');
  const q = from === 'graphql' ? parseFlagListArgs(raw) : parseFlagListQuery(raw);
  const lifecycle = q.status === null ? null : tracker();
  const now = Date.now();
  const status =
    q.status === null || lifecycle === null
      ? null
      : { predicate: lifecycle.statusFilter(auth.principal.orgId, q.status, now), key: lifecycle.filterKey(auth.principal.orgId, q.status, now) };
  return flagPage(flagIndexOf(auth.snapshot), auth, q, status);
}

/** Every flag the key may read, sorted by name. */
export const listFlags = (auth: Authenticated): Flag[] => listFlagPage(auth).flags;

export function getFlag(auth: Authenticated, name: string): Flag {
  requirePermission(auth.principal, 'CanRead');
  return visible(auth, name).flag;
}

const configsOf = (c: CompiledFlag): FlagConfig[] =>
  [...c.configs.values()].map((cc) => cc.config).sort((a, b) =>
    a.stage === b.stage ? (a.clientId ?? '').localeCompare(b.clientId ?? '') : a.stage.localeCompare(b.stage));

export function getFlagWithConfigs(auth: Authenticated, name: string): FlagWithConfigs {
  requirePermission(auth.principal, 'CanRead');
  const c = visible(auth, name);
  return { ...c.flag, configs: configsOf(c) };
}

export function listConfigs(auth: Authenticated, name: string, stage?: string | null, clientId?: string | null): FlagConfig[] {
  requirePermission(auth.principal, 'CanRead');
  return configsOf(visible(auth, name)).filter(
    (c) => (stage == null || sameName(c.stage, stage)) && (clientId == null || c.clientId === clientId),
  );
}

export function flagEnvironments(auth: Authenticated, name: string): string[] {
  requirePermission(auth.principal, 'CanRead');
  return visible(auth, name).flag.environments;
}

// ---- writes -----------------------------------------------------------------------------------

/** Loads the flag inside a write transaction: 404 when absent, 403 outside the key's scope. */
export async function loadForWrite(tx: Queryable, p: Principal, name: string): Promise<Flag> {
  const flag = await store.getFlag(tx, p.orgId, name);
  if (flag === null) throw notFound(`Flag '${name}' not found`);
  requireApplication(p, flag.project);
  return flag;
}

function canonicalEnvironments(org: Organization, names: string[]): string[] {
  const out: string[] = [];
  for (const n of names) {
    const canonical = findName(org.environments, n);
    if (canonical === undefined) throw badRequest(`Unknown environment '${n}'`);
    if (!out.includes(canonical)) out.push(canonical);
  }
  return out;
}

/**
 * Dependencies (docs/api.md#flags): each parent exists, has every environment of the dependent flag
 * (409), and lists only its own variants; the graph stays acyclic (409).
 *
 * When `writer` is given (the dependencies are being written), each parent must be a flag that key
 * can read. For a key with application scope, a parent outside its scope and a parent that does not
 * exist are the same 403, so the answer tells nothing about the parent. An organization-wide key
 * reads every flag: for it, a missing parent stays 400.
 */
async function checkDependencies(
  tx: Queryable,
  orgId: string,
  flagName: string,
  environments: string[],
  deps: FlagDependency[],
  writer: Principal | null,
): Promise<void> {
  if (deps.length === 0) return;
  const all = new Map((await store.dependencyGraph(tx, orgId, deps.map((d) => d.flag))).map((f) => [f.name, f]));
  for (const d of deps) {
    if (d.flag === flagName) throw badRequest(`Flag '${flagName}' cannot depend on itself`);
    const parent = all.get(d.flag);
    if (writer !== null && writer.application !== null && (parent === undefined || !inApplicationScope(writer, parent.project))) {
      throw forbidden(`Dependency parent '${d.flag}' is not a flag this key can read (key scoped to application '${writer.application}')`);
    }
    if (parent === undefined) throw badRequest(`Dependency parent flag '${d.flag}' does not exist`);
    const missing = environments.filter((e) => !parent.environments.some((pe) => sameName(pe, e)));
    if (missing.length > 0) {
      throw conflict(`Dependency parent '${d.flag}' lacks environment(s) ${missing.map((m) => `'${m}'`).join(', ')} of flag '${flagName}'`);
    }
    for (const v of d.variants ?? []) {
      if (!parent.variants.some((pv) => pv.key === v)) throw badRequest(`Dependency parent '${d.flag}' has no variant '${v}'`);
    }
  }
  // Cycle check on the graph with this flag's new edges.
  const edges = (name: string): string[] =>
    name === flagName ? deps.map((d) => d.flag) : (all.get(name)?.dependencies ?? []).map((d) => d.flag);
  const seen = new Set<string>();
  const stack = [...edges(flagName)];
  while (stack.length > 0) {
    const n = stack.pop()!;
    if (n === flagName) throw conflict(`Dependencies of '${flagName}' would form a cycle`);
    if (seen.has(n)) continue;
    seen.add(n);
    stack.push(...edges(n));
  }
}

const normaliseDeps = (deps: { flag: string; variants?: string[] | null }[] | undefined): FlagDependency[] =>
  (deps ?? []).map((d) => ({ flag: d.flag, variants: d.variants ?? null }));

export async function createFlag(rt: ActorRuntime, auth: Authenticated, raw: unknown): Promise<Flag> {
  const p = auth.principal;
  requirePermission(p, 'CanWrite');
  requireFlagLevelWriter(p);
  const limits = rt.config.tenancyLimits;
  const input = parseCreateFlag(raw, limits);
  requireApplication(p, input.project);
  return writeOrg(rt, actorOf(p), p.orgId, { flag: input.name }, async (tx, org) => {
    const project = findName(org.applications, input.project);
    if (project === undefined) throw badRequest(`Unknown application '${input.project}'`);
    const environments = input.environments === undefined ? [...org.environments] : canonicalEnvironments(org, input.environments);
    const variants = validateVariants(input.type, input.variants);
    if ((await store.getFlag(tx, p.orgId, input.name)) !== null) throw conflict(`Flag '${input.name}' already exists`);
    const dependencies = normaliseDeps(input.dependencies);
    await checkDependencies(tx, p.orgId, input.name, environments, dependencies, p);
    // Counted with the organization locked: concurrent creates cannot pass the limit together.
    if ((await store.countFlags(tx, p.orgId)) >= limits.maxFlagsPerOrg) throw quotaError(limits, 'maxFlagsPerOrg');
    const flag = await store.insertFlag(tx, p.orgId, {
      name: input.name,
      project,
      type: input.type,
      description: input.description ?? null,
      tags: input.tags ?? [],
      isArchived: false,
      variants,
      environments,
      dependencies,
      purpose: input.purpose ?? 'release',
    });
    return { result: flag, audit: flagChange('flag.create', null, flag) };
  });
}

/** The checks an update needs before its transaction: permission, environment scope, body (403, 400). */
export function prepareUpdateFlag(rt: ActorRuntime, p: Principal, raw: unknown): UpdateFlagInput {
  requirePermission(p, 'CanWrite');
  requireFlagLevelWriter(p);
  return parseUpdateFlag(raw, rt.config.tenancyLimits);
}

export async function updateFlag(rt: ActorRuntime, auth: Authenticated, name: string, raw: unknown): Promise<Flag> {
  const p = auth.principal;
  const input = prepareUpdateFlag(rt, p, raw);
  return writeOrg(rt, actorOf(p), p.orgId, { flag: name }, (tx, org) => updateFlagTx(tx, org, p, name, input));
}

/** A flag update inside a write's transaction (the direct write, a change request's apply). */
export async function updateFlagTx(tx: Queryable, org: Organization, p: Principal, name: string, input: UpdateFlagInput, guard: GuardOptions = {}): Promise<Audited<Flag>> {
  // An update that only sets isArchived is an archive or a restore (GraphQL archiveFlag /
  // restoreFlag, or REST PUT {"isArchived": ...}); anything else is flag.update.
  const onlyArchive = input.isArchived !== undefined && Object.keys(input).length === 1;
  const action = onlyArchive ? (input.isArchived ? 'flag.archive' : 'flag.restore') : 'flag.update';
  const cur = await loadForWrite(tx, p, name);
  // Protected environments (policies/guard.ts): where this flag or a dependant has a configuration.
  await guardWrite(tx, org, p, () => flagEffect(tx, p.orgId, cur.name, Object.keys(input)), guard);
  const type = input.type ?? cur.type;
  const variants = input.variants !== undefined || input.type !== undefined ? validateVariants(type, input.variants ?? cur.variants) : cur.variants;
  if (input.variants !== undefined) {
    const keys = new Set(variants.map((v) => v.key));
    for (const c of await store.listConfigs(tx, p.orgId, name)) {
      const used = [c.defaultVariantKey, ...c.rules.flatMap((r) => r.allocations.map((a) => a.variantKey))];
      const gone = used.find((k) => !keys.has(k));
      if (gone !== undefined) throw conflict(`Variant '${gone}' is still used by the '${c.stage}' configuration`);
    }
    for (const child of await store.flagsDependingOn(tx, p.orgId, name)) {
      const dep = child.dependencies.find((d) => d.flag === name)!;
      const gone = (dep.variants ?? []).find((k) => !keys.has(k));
      if (gone !== undefined) throw conflict(`Variant '${gone}' is still required by dependent flag '${child.name}'`);
    }
  }
  const dependencies = input.dependencies !== undefined ? normaliseDeps(input.dependencies) : cur.dependencies;
  if (input.dependencies !== undefined) await checkDependencies(tx, p.orgId, name, cur.environments, dependencies, p);
  const saved = await store.saveFlag(tx, p.orgId, {
    ...cur,
    type,
    variants,
    dependencies,
    description: input.description !== undefined ? input.description : cur.description,
    tags: input.tags ?? cur.tags,
    isArchived: input.isArchived ?? cur.isArchived,
    purpose: input.purpose ?? cur.purpose,
  });
  return { result: saved!, audit: flagChange(action, cur, saved) };
}

export const setArchived = (rt: ActorRuntime, auth: Authenticated, name: string, isArchived: boolean): Promise<Flag> =>
  updateFlag(rt, auth, name, { isArchived });

export async function deleteFlag(rt: ActorRuntime, auth: Authenticated, name: string): Promise<void> {
  const p = auth.principal;
  requirePermission(p, 'CanWrite');
  requireFlagLevelWriter(p);
  await writeOrg(rt, actorOf(p), p.orgId, { flag: name }, async (tx, org) => {
    const cur = await loadForWrite(tx, p, name);
    await guardWrite(tx, org, p, () => flagEffect(tx, p.orgId, cur.name, null));
    const children = await store.flagsDependingOn(tx, p.orgId, name);
    if (children.length > 0) throw conflict(`Flag '${name}' is a dependency of '${children[0].name}'`);
    await store.deleteFlag(tx, p.orgId, name);
    await cancelPendingSchedules(tx, p.orgId, name);
    return { result: undefined, audit: flagChange('flag.delete', cur, null) };
  });
}

export async function updateFlagEnvironments(rt: ActorRuntime, auth: Authenticated, name: string, rawEnvironments: unknown): Promise<Flag> {
  const p = auth.principal;
  requirePermission(p, 'CanWrite');
  requireFlagLevelWriter(p);
  const names = parseNameList(rawEnvironments, 'environments');
  return writeOrg(rt, actorOf(p), p.orgId, { flag: name }, async (tx, org) => {
    const cur = await loadForWrite(tx, p, name);
    const environments = canonicalEnvironments(org, names);
    const removed = cur.environments.filter((e) => !environments.includes(e));
    // An environment added or removed: the flag's answers there change (project_or_env_mismatch <-> config_missing).
    await guardWrite(tx, org, p, { kind: 'flagEnvironments', changed: [...removed, ...environments.filter((e) => !cur.environments.includes(e))] });
    const configs = await store.listConfigs(tx, p.orgId, name);
    const used = configs.find((c) => removed.includes(c.stage));
    if (used !== undefined) throw conflict(`Environment '${used.stage}' still has a configuration of flag '${name}'`);
    for (const child of await store.flagsDependingOn(tx, p.orgId, name)) {
      const lost = child.environments.find((e) => removed.includes(e));
      if (lost !== undefined) throw conflict(`Dependent flag '${child.name}' needs environment '${lost}'`);
    }
    await checkDependencies(tx, p.orgId, name, environments, cur.dependencies, null);
    const saved = (await store.saveFlag(tx, p.orgId, { ...cur, environments }))!;
    return { result: saved, audit: flagChange('flag.environments', cur, saved) };
  });
}

// ---- stage configurations -----------------------------------------------------------------------

/** The stage as the flag spells it; 403 outside the key's environment scope, 409 when the flag does not use it. */
function flagStage(p: Principal, flag: Flag, stage: string): string {
  requireEnvironment(p, stage);
  const canonical = findName(flag.environments, stage);
  if (canonical === undefined) throw conflict(`Flag '${flag.name}' does not use environment '${stage}'`);
  return canonical;
}

const newRuleId = (): string => 'r_' + randomBytes(6).toString('hex');

/**
 * The earliest time-window bound the database round-trips: both drivers read a timestamptz of
 * the years 1-99 back through JavaScript's two-digit-year parsing (0050 comes back as 1950), and
 * PostgreSQL has no year 0. Earlier bounds are 400 rather than silently moved.
 */
const EARLIEST_STORABLE = Date.parse('0100-01-01T00:00:00.000Z');

function checkStorableWindow(input: UpsertFlagConfigInput): void {
  for (const field of ['activeFrom', 'activeUntil'] as const) {
    const v = input[field];
    if (v != null && Date.parse(v) < EARLIEST_STORABLE) throw badRequest(`${field}: '${v}' is before the year 100`);
  }
}

/** The configuration an upsert writes (rule ids generated where absent). */
export function toConfig(stage: string, input: UpsertFlagConfigInput): FlagConfig {
  const rules: Rule[] = (input.rules ?? []).map((r) => ({
    id: r.id ?? newRuleId(),
    priority: r.priority,
    conditions: r.conditions.map((c) => ({ field: c.field, operator: c.operator, value: c.value ?? null })),
    segments: r.segments ?? [],
    allocations: r.allocations.map((a) => ({ variantKey: a.variantKey, percentage: a.percentage })),
  }));
  return {
    stage,
    clientId: input.clientId ?? null,
    enabled: input.enabled,
    defaultVariantKey: input.defaultVariantKey,
    rolloutPercentage: input.rolloutPercentage,
    rules,
    activeFrom: input.activeFrom ?? null,
    activeUntil: input.activeUntil ?? null,
    enrollmentCutoff: input.enrollmentCutoff ?? null,
  };
}

/**
 * A configuration write made for a scheduled change (src/features/schedules/runner.ts): `claim`
 * runs first in the write's transaction, with the organization locked (`org` as it is now), and
 * throws when the schedule is no longer this write's to apply; the audit event names the schedule.
 */
export interface ScheduledWrite {
  scheduleId: string;
  claim(tx: Queryable, org: Organization): Promise<void>;
}

const scheduled = (audit: AuditChange, by: ScheduledWrite | undefined): AuditChange =>
  by === undefined ? audit : { ...audit, scheduleId: by.scheduleId };

/** What an upsert checks inside its transaction; a schedule runs the same checks when it is created. */
export interface ConfigWriteTarget {
  flag: Flag;
  /** The stage as the flag spells it. */
  stage: string;
  before: FlagConfig | null;
}

/**
 * The checks of a configuration upsert that need the stored flag: it exists and is in the key's
 * scope, the stage is the flag's and in the key's environment scope, the clientId's application,
 * the configuration against the flag's variants, and the configurations count limit.
 */
export async function checkConfigUpsert(tx: Queryable, p: Principal, org: Organization, name: string, input: UpsertFlagConfigInput, limits: TenancyLimits): Promise<ConfigWriteTarget> {
  const flag = await loadForWrite(tx, p, name);
  const stage = flagStage(p, flag, input.stage);
  const owner = clientIdApplication(input.clientId ?? null, org.applications);
  if (owner !== undefined && !sameName(owner, flag.project)) {
    throw badRequest(`clientId '${input.clientId}' belongs to application '${owner}', not to '${flag.project}'`);
  }
  validateConfigAgainstFlag(flag, input);
  await checkRuleSegments(tx, p, flag.project, input.rules ?? []);
  const before = await store.getConfig(tx, p.orgId, name, stage, input.clientId ?? null);
  if (before === null && (await store.countConfigs(tx, p.orgId, name)) >= limits.maxConfigsPerFlag) {
    throw quotaError(limits, 'maxConfigsPerFlag');
  }
  return { flag, stage, before };
}

/** Parses an upsert's body: every check that needs no stored state. */
export function parseConfigUpsert(rt: ActorRuntime, raw: unknown): UpsertFlagConfigInput {
  const input = parseUpsertFlagConfig(raw, rt.config.tenancyLimits);
  checkStorableWindow(input);
  return input;
}

export const upsertConfig = (rt: ActorRuntime, auth: Authenticated, name: string, raw: unknown): Promise<FlagConfig> =>
  upsertConfigAs(rt, auth.principal, name, raw);

/** `upsertConfig` by a principal: a request's key, or a schedule's key read again when it is due. */
export async function upsertConfigAs(rt: ActorRuntime, p: Principal, name: string, raw: unknown, by?: ScheduledWrite): Promise<FlagConfig> {
  requirePermission(p, 'CanWrite');
  const input = parseConfigUpsert(rt, raw);
  return writeOrg(rt, actorOf(p), p.orgId, { flag: name }, async (tx, org) => {
    await by?.claim(tx, org);
    const done = await upsertConfigTx(tx, org, p, name, input, rt.config.tenancyLimits);
    return { result: done.result, audit: scheduled(done.audit, by) };
  });
}

/** A configuration upsert inside a write's transaction (the direct write, a schedule, a change request's apply). */
export async function upsertConfigTx(tx: Queryable, org: Organization, p: Principal, name: string, input: UpsertFlagConfigInput, limits: TenancyLimits, guard: GuardOptions = {}): Promise<Audited<FlagConfig>> {
  const { flag, stage, before } = await checkConfigUpsert(tx, p, org, name, input, limits);
  await guardWrite(tx, org, p, { kind: 'config', stage }, guard);
  const saved = await store.upsertConfig(tx, p.orgId, name, toConfig(stage, input));
  return { result: saved, audit: configChange('config.upsert', flag, before, saved) };
}

const configNotFound = (name: string, stage: string, clientId: string | null) =>
  notFound(`Flag '${name}' has no configuration for stage '${stage}'${clientId ? ` and clientId '${clientId}'` : ''}`);

/** The checks of an enable or disable: the flag in scope, the stage, and the configuration exists. */
export async function checkConfigToggle(tx: Queryable, p: Principal, name: string, stage: string, clientId: string | null): Promise<ConfigWriteTarget & { before: FlagConfig }> {
  const flag = await loadForWrite(tx, p, name);
  const canonical = flagStage(p, flag, stage);
  const before = await store.getConfig(tx, p.orgId, name, canonical, clientId);
  if (before === null) throw configNotFound(name, canonical, clientId);
  return { flag, stage: canonical, before };
}

export const setConfigEnabled = (rt: ActorRuntime, auth: Authenticated, name: string, stage: string, clientId: string | null, enabled: boolean): Promise<FlagConfig> =>
  setConfigEnabledAs(rt, auth.principal, name, stage, clientId, enabled);

/** `setConfigEnabled` by a principal (see `upsertConfigAs`). */
export async function setConfigEnabledAs(rt: ActorRuntime, p: Principal, name: string, stage: string, clientId: string | null, enabled: boolean, by?: ScheduledWrite): Promise<FlagConfig> {
  requirePermission(p, 'CanWrite');
  return writeOrg(rt, actorOf(p), p.orgId, { flag: name }, async (tx, org) => {
    await by?.claim(tx, org);
    const done = await setConfigEnabledTx(tx, org, p, name, stage, clientId, enabled);
    return { result: done.result, audit: scheduled(done.audit, by) };
  });
}

/** An enable or disable inside a write's transaction. */
export async function setConfigEnabledTx(tx: Queryable, org: Organization, p: Principal, name: string, stage: string, clientId: string | null, enabled: boolean, guard: GuardOptions = {}): Promise<Audited<FlagConfig>> {
  const { flag, stage: canonical, before } = await checkConfigToggle(tx, p, name, stage, clientId);
  await guardWrite(tx, org, p, { kind: 'config', stage: canonical }, guard);
  const saved = (await store.setConfigEnabled(tx, p.orgId, name, canonical, clientId, enabled))!;
  return { result: saved, audit: configChange(enabled ? 'config.enable' : 'config.disable', flag, before, saved) };
}

export async function deleteConfig(rt: ActorRuntime, auth: Authenticated, name: string, stage: string, clientId: string | null): Promise<void> {
  const p = auth.principal;
  requirePermission(p, 'CanWrite');
  await writeOrg(rt, actorOf(p), p.orgId, { flag: name }, (tx, org) => deleteConfigTx(tx, org, p, name, stage, clientId));
}

/** A configuration delete inside a write's transaction (its pending schedules cancelled with it). */
export async function deleteConfigTx(tx: Queryable, org: Organization, p: Principal, name: string, stage: string, clientId: string | null, guard: GuardOptions = {}): Promise<Audited<undefined>> {
  const flag = await loadForWrite(tx, p, name);
  const canonical = flagStage(p, flag, stage);
  await guardWrite(tx, org, p, { kind: 'config', stage: canonical }, guard);
  const before = await store.deleteConfig(tx, p.orgId, name, canonical, clientId);
  if (before === null) throw configNotFound(name, canonical, clientId);
  await cancelPendingSchedules(tx, p.orgId, name, { stage: canonical, clientId });
  return { result: undefined, audit: configChange('config.delete', flag, before, null) };
}
