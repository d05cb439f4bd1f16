/**
 * Organization settings managed over GraphQL (docs/graphql.md, "Fields and permissions"):
 * environments, applications and the kill switch. Changing them needs CanWrite on a key without
 * application or environment scope. Removing a name still in use is CONFLICT; renaming cascades to
 * every use.
 */
import type { Authenticated } from '../../auth/authenticate.js';
import { requirePermission, requireUnscoped, type Principal } from '../../auth/permissions.js';
import { badRequest, conflict, notFound } from '../../domain/errors.js';
import { findName, sameName } from '../../domain/name-matching.js';
import type { KillSwitchRule, Organization } from '../../domain/types.js';
import { parseKillSwitchRules, parseName, parseNameList } from '../../domain/validation.js';
import type { ActorRuntime } from '../../runtime.js';
import type { Queryable } from '../../storage/database.js';
import * as flagStore from '../flags/store.js';
import * as keyStore from '../keys/store.js';
import * as segmentStore from '../segments/store.js';
import { orgChange } from '../audit/events.js';
import { renameEventApplication } from '../audit/store.js';
import { renameScheduleStage } from '../schedules/store.js';
import { forgetKey } from '../keys/service.js';
import { actorOf, writeOrg, type Audited } from '../write.js';
import { updateOrgSettings } from './store.js';
import { guardWrite, type GuardOptions } from '../policies/guard.js';
import { deletePolicy, renamePolicyStage } from '../policies/store.js';

export type OrgList = 'environments' | 'applications';

const KEY_COLUMN = { environments: 'environment', applications: 'application' } as const;
const RULE_FIELD = { environments: 'environment', applications: 'application' } as const;
const AUDIT_ACTION = { environments: 'org.environments', applications: 'org.applications' } as const;

export function readList(auth: Authenticated, list: OrgList): string[] {
  requirePermission(auth.principal, 'CanRead');
  return auth.snapshot.org[list];
}

export function killSwitch(auth: Authenticated): KillSwitchRule[] {
  requirePermission(auth.principal, 'CanRead');
  return auth.snapshot.org.killSwitch;
}

function requireOrgWriter(auth: Authenticated, what: string): void {
  requirePermission(auth.principal, 'CanWrite');
  requireUnscoped(auth.principal, what);
}

/** Where a name is still used: a reason for CONFLICT, or null. */
async function usage(tx: Queryable, org: Organization, list: OrgList, name: string): Promise<string | null> {
  const flags = await flagStore.listFlags(tx, org.id);
  if (list === 'environments') {
    const f = flags.find((fl) => fl.environments.some((e) => sameName(e, name)));
    if (f) return `flag '${f.name}' uses it`;
  } else {
    const f = flags.find((fl) => sameName(fl.project, name));
    if (f) return `flag '${f.name}' belongs to it`;
    const [segment] = await segmentStore.segmentsOfApplication(tx, org.id, name);
    if (segment !== undefined) return `segment '${segment}' belongs to it`;
  }
  if ((await keyStore.keysScopedTo(tx, org.id, KEY_COLUMN[list], name)) > 0) return 'a management key is scoped to it';
  const field = RULE_FIELD[list];
  if (org.killSwitch.some((r) => r[field] !== null && sameName(r[field]!, name))) return 'a kill-switch rule names it';
  return null;
}

/**
 * Renames `from` to `to` everywhere it is used (flags, configurations, segments, schedules, key scopes,
 * kill switch, and the `application` of audit events). The ids of re-scoped keys are added to `rescoped`.
 */
async function cascadeRename(tx: Queryable, org: Organization, list: OrgList, from: string, to: string, rescoped: string[]): Promise<KillSwitchRule[]> {
  for (const f of await flagStore.listFlags(tx, org.id)) {
    if (list === 'environments' && f.environments.includes(from)) {
      await flagStore.saveFlag(tx, org.id, { ...f, environments: f.environments.map((e) => (e === from ? to : e)) });
    } else if (list === 'applications' && f.project === from) {
      await flagStore.saveFlag(tx, org.id, { ...f, project: to });
    }
  }
  if (list === 'environments') {
    await flagStore.renameConfigStage(tx, org.id, from, to);
    await renameScheduleStage(tx, org.id, from, to);
    await renamePolicyStage(tx, org.id, from, to);
  } else {
    await renameEventApplication(tx, org.id, from, to);
    await segmentStore.renameSegmentApplication(tx, org.id, from, to);
  }
  rescoped.push(...(await keyStore.renameKeyScope(tx, org.id, KEY_COLUMN[list], from, to)));
  const field = RULE_FIELD[list];
  return org.killSwitch.map((r) => (r[field] !== null && sameName(r[field]!, from) ? { ...r, [field]: to } : r));
}

/**
 * A change of the environments or applications. After commit, the keys whose scope a rename
 * changed are dropped from every node's key cache, so they act under the new name at once.
 */
async function changeList(
  rt: ActorRuntime,
  auth: Authenticated,
  fn: (tx: Queryable, org: Organization, rescoped: string[]) => Promise<Audited<string[]>>,
): Promise<string[]> {
  const rescoped: string[] = [];
  const orgId = auth.principal.orgId;
  const result = await writeOrg(rt, actorOf(auth.principal), orgId, 'all', (tx, org) => fn(tx, org, rescoped));
  for (const id of rescoped) forgetKey(rt, orgId, id);
  return result;
}

export async function replaceList(rt: ActorRuntime, auth: Authenticated, list: OrgList, raw: unknown): Promise<string[]> {
  requireOrgWriter(auth, `Changing ${list}`);
  const next = parseNameList(raw, list);
  return changeList(rt, auth, async (tx, org, rescoped) => {
    if (list === 'environments') {
      // A protected environment removed or renamed (a change of case included) is a change to it (policies/guard.ts).
      const removed = org.environments.filter((e) => findName(next, e) === undefined);
      const renamed = org.environments.filter((e) => { const k = findName(next, e); return k !== undefined && k !== e; });
      await guardWrite(tx, org, auth.principal, { kind: 'environments', removed, renamed });
    } else if (org.applications.length !== next.length || org.applications.some((a) => !next.includes(a))) {
      await guardWrite(tx, org, auth.principal, { kind: 'applications' });
    }
    let killSwitch = org.killSwitch;
    for (const old of org[list]) {
      const kept = findName(next, old);
      if (kept === undefined) {
        const why = await usage(tx, { ...org, killSwitch }, list, old);
        if (why !== null) throw conflict(`Cannot remove ${list === 'environments' ? 'environment' : 'application'} '${old}': ${why}`);
        if (list === 'environments') await deletePolicy(tx, org.id, old);
      } else if (kept !== old) {
        killSwitch = await cascadeRename(tx, { ...org, killSwitch }, list, old, kept, rescoped);
      }
    }
    return listChanged(list, org, await updateOrgSettings(tx, org.id, { [list]: next, killSwitch }));
  });
}

/** The new list, and its audit event (the list before and after). */
const listChanged = (list: OrgList, before: Organization, after: Organization) => ({
  result: after[list],
  audit: orgChange(AUDIT_ACTION[list], after.name, { [list]: before[list] }, { [list]: after[list] }),
});

export async function renameInList(rt: ActorRuntime, auth: Authenticated, list: OrgList, rawFrom: unknown, rawTo: unknown): Promise<string[]> {
  requireOrgWriter(auth, `Renaming ${list}`);
  const fromName = parseName(rawFrom, 'from');
  const to = parseName(rawTo, 'to');
  return changeList(rt, auth, async (tx, org, rescoped) => {
    const from = findName(org[list], fromName);
    const what = list === 'environments' ? 'Environment' : 'Application';
    if (from === undefined) throw notFound(`${what} '${fromName}' not found`);
    const clash = findName(org[list], to);
    if (clash !== undefined && clash !== from) throw conflict(`${what} '${clash}' already exists`);
    if (from === to) return listChanged(list, org, org);
    await guardWrite(tx, org, auth.principal, list === 'environments' ? { kind: 'environments', removed: [], renamed: [from] } : { kind: 'applications' });
    const killSwitch = await cascadeRename(tx, org, list, from, to, rescoped);
    const next = org[list].map((n) => (n === from ? to : n));
    return listChanged(list, org, await updateOrgSettings(tx, org.id, { [list]: next, killSwitch }));
  });
}

export async function replaceKillSwitch(rt: ActorRuntime, auth: Authenticated, raw: unknown): Promise<KillSwitchRule[]> {
  const rules = prepareKillSwitch(auth.principal, raw);
  return writeOrg(rt, actorOf(auth.principal), auth.principal.orgId, 'settings', (tx, org) => replaceKillSwitchTx(tx, org, auth.principal, rules));
}

/** The checks a kill-switch write needs before its transaction (403, 400). */
export function prepareKillSwitch(p: Principal, raw: unknown): KillSwitchRule[] {
  requirePermission(p, 'CanWrite');
  requireUnscoped(p, 'Changing the kill switch');
  return parseKillSwitchRules(raw);
}

/** A kill-switch write inside a write's transaction (the direct write, a change request's apply). */
export async function replaceKillSwitchTx(tx: Queryable, org: Organization, p: Principal, rules: KillSwitchRule[], guard: GuardOptions = {}): Promise<Audited<KillSwitchRule[]>> {
  const canonical = rules.map((r) => {
    const application = r.application === null ? null : findName(org.applications, r.application);
    const environment = r.environment === null ? null : findName(org.environments, r.environment);
    if (application === undefined) throw badRequest(`Unknown application '${r.application}'`);
    if (environment === undefined) throw badRequest(`Unknown environment '${r.environment}'`);
    return { flag: r.flag, application, environment };
  });
  await guardWrite(tx, org, p, { kind: 'killSwitch', before: org.killSwitch, after: canonical }, guard);
  const saved = await updateOrgSettings(tx, org.id, { killSwitch: canonical });
  return {
    result: saved.killSwitch,
    audit: orgChange('org.killswitch', org.name, { killSwitch: org.killSwitch }, { killSwitch: saved.killSwitch }),
  };
}
