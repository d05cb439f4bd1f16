/**
 * A change request's preview (docs/change-requests.md, "Previewing"): every flag the request can
 * affect (the flags it writes, those whose rules use a segment it writes, those a kill-switch rule
 * it changes names, and every flag depending on one of these, transitively), evaluated with the
 * server's engine for the given contexts in every environment the request touches, before and
 * after. "Before" is the organization's data now; "after" is that data with the request's changes
 * made by the very writes an apply runs, inside a savepoint that is rolled back: the preview
 * cannot differ from what an apply would produce, and writes nothing.
 */
import type { Authenticated } from '../../auth/authenticate.js';
import { requirePermission, type Principal } from '../../auth/permissions.js';
import { badRequest, notFound } from '../../domain/errors.js';
import { sameName } from '../../domain/name-matching.js';
import { changedKillSwitchRules } from '../../domain/protection.js';
import type { EvaluationRequest, Organization, Permission } from '../../domain/types.js';
import { parseEvaluationBody } from '../../domain/validation/evaluation.js';
import { buildSnapshot, evaluateFlag, type OrgSnapshot } from '../../engine/index.js';
import type { ActorRuntime } from '../../runtime.js';
import type { Queryable } from '../../storage/database.js';
import * as flagStore from '../flags/store.js';
import { getOrg } from '../organizations/store.js';
import * as segmentStore from '../segments/store.js';
import { uniqueTargets, type Target } from './changes.js';
import { prepareChanges, type Run } from './service.js';
import * as store from './store.js';

/** Contexts one preview evaluates (docs/limits.md). */
export const MAX_PREVIEW_CONTEXTS = 10_000;
const MAX_EXAMPLES = 20;

export interface PreviewContext {
  userId: string;
  clientId?: string | null;
  context?: Record<string, unknown> | null;
}

export interface PreviewResult {
  evaluated: number;
  changed: number;
  flags: { flag: string; stage: string; evaluated: number; changed: number; transitions: { from: string | null; to: string | null; count: number }[] }[];
  examples: { userId: string; flag: string; stage: string; from: string | null; to: string | null }[];
}

async function readSnapshot(tx: Queryable, orgId: string): Promise<OrgSnapshot> {
  const org = (await getOrg(tx, orgId)) as Organization;
  return buildSnapshot(org, await flagStore.listFlags(tx, orgId), await flagStore.listOrgConfigs(tx, orgId), await segmentStore.listSegments(tx, orgId));
}

/** The flags the targets can change the answers of, dependants included, in name order. */
export function affectedFlags(targets: readonly Target[], before: OrgSnapshot, after: OrgSnapshot): string[] {
  const out = new Set<string>();
  const snaps = [before, after];
  for (const t of uniqueTargets(targets)) {
    if (t.type === 'config' || t.type === 'flag') out.add(t.flag);
    else if (t.type === 'segment') {
      for (const s of snaps)
        for (const cf of s.flags.values())
          if ([...cf.configs.values()].some((cc) => cc.config.rules.some((r) => (r.segments ?? []).includes(t.segment)))) out.add(cf.flag.name);
    } else {
      for (const r of changedKillSwitchRules(before.org.killSwitch, after.org.killSwitch))
        for (const s of snaps)
          for (const cf of s.flags.values())
            if ((r.flag === null || r.flag === cf.flag.name) && (r.application === null || sameName(r.application, cf.flag.project))) out.add(cf.flag.name);
    }
  }
  // Dependants, transitively, in either snapshot.
  for (let grew = true; grew; ) {
    grew = false;
    for (const s of snaps)
      for (const cf of s.flags.values())
        if (!out.has(cf.flag.name) && cf.flag.dependencies.some((d) => out.has(d.flag))) {
          out.add(cf.flag.name);
          grew = true;
        }
  }
  return [...out].sort();
}

/**
 * Evaluates `flags` in `stages` for every context, before and after (pure: the engine on two
 * snapshots). `sampled`, when given, adds the contexts sampled for each flag and stage (after `contexts`).
 */
export function compare(
  before: OrgSnapshot,
  after: OrgSnapshot,
  flags: readonly string[],
  stages: readonly string[],
  given: readonly PreviewContext[],
  nowMs: number,
  sampled?: (flag: string, stage: string) => readonly PreviewContext[],
): PreviewResult {
  const result: PreviewResult = { evaluated: 0, changed: 0, flags: [], examples: [] };
  for (const flag of flags) {
    const fb = before.flags.get(flag);
    const fa = after.flags.get(flag);
    for (const stage of stages) {
      const uses = (cf: typeof fb) => cf !== undefined && cf.flag.environments.some((e) => sameName(e, stage));
      if (!uses(fb) && !uses(fa)) continue;
      const contexts = sampled === undefined ? given : [...given, ...sampled(flag, stage)];
      const counts = new Map<string, { from: string | null; to: string | null; count: number }>();
      let changed = 0;
      for (const c of contexts) {
        const req: EvaluationRequest = { userId: c.userId, stage, clientId: c.clientId ?? null, context: c.context ?? null };
        const from = fb === undefined ? null : evaluateFlag(before, fb, req, nowMs).key;
        const to = fa === undefined ? null : evaluateFlag(after, fa, req, nowMs).key;
        const k = `${from}\u0000${to}`;
        const entry = counts.get(k);
        if (entry === undefined) counts.set(k, { from, to, count: 1 });
        else entry.count++;
        if (from !== to) {
          changed++;
          if (result.examples.length < MAX_EXAMPLES) result.examples.push({ userId: c.userId, flag, stage, from, to });
        }
      }
      result.flags.push({ flag, stage, evaluated: contexts.length, changed, transitions: [...counts.values()].sort((x, y) => y.count - x.count) });
      result.evaluated += contexts.length;
      result.changed += changed;
    }
  }
  return result;
}

function parseContexts(raw: unknown, rt: ActorRuntime): { contexts: PreviewContext[] | null; sample: boolean } {
  const body = (raw ?? {}) as Record<string, unknown>;
  for (const k of Object.keys(body)) if (k !== 'contexts' && k !== 'sample') throw badRequest(`preview: unknown field '${k}'`);
  if (body.sample !== undefined && typeof body.sample !== 'boolean') throw badRequest('sample: expected a boolean');
  const sample = body.sample === true;
  if (body.contexts === undefined || body.contexts === null) return { contexts: null, sample };
  if (!Array.isArray(body.contexts)) throw badRequest('contexts: expected an array');
  if (body.contexts.length > MAX_PREVIEW_CONTEXTS) throw badRequest(`contexts: at most ${MAX_PREVIEW_CONTEXTS} contexts per preview (docs/limits.md)`);
  const contexts = body.contexts.map((c, i) => {
    if (c === null || typeof c !== 'object' || Array.isArray(c)) throw badRequest(`contexts[${i}]: expected an object`);
    if ('stage' in c) throw badRequest(`contexts[${i}]: unknown field 'stage' (the preview evaluates every environment the request touches)`);
    try {
      const p = parseEvaluationBody({ ...(c as object), stage: '-' }, rt.config.contextLimits);
      return { userId: p.userId, clientId: p.clientId, context: p.context };
    } catch (err) {
      throw badRequest(`contexts[${i}]: ${(err as Error).message}`);
    }
  });
  return { contexts, sample };
}

/** The rolled-back changes run with write authority: a preview writes nothing, whoever asks. */
const previewer = (orgId: string): Principal => ({
  keyId: 'preview',
  keyName: 'preview',
  orgId,
  permissions: new Set<Permission>(['CanRead', 'CanWrite']),
  application: null,
  environment: null,
});

export async function previewRequest(rt: ActorRuntime, auth: Authenticated, id: string, raw: unknown): Promise<PreviewResult> {
  const p = auth.principal;
  requirePermission(p, 'CanRead');
  const { contexts, sample } = parseContexts(raw, rt);
  if (contexts === null && !sample) throw badRequest('preview: give contexts, or sample: true');
  const samples = rt.samples ?? null;
  if (sample && samples === null)
    throw badRequest('sample: VEXIL_CONTEXT_SAMPLE is off on this node (0), so it keeps no evaluated contexts to preview; give contexts, or set VEXIL_CONTEXT_SAMPLE');
  const req = await store.getRequest(rt.db, p.orgId, id);
  if (req === null) throw notFound(`Change request '${id}' not found`);
  const rev = await store.getRevision(rt.db, id, req.revision);
  const runs: Run[] = prepareChanges(rt, previewer(p.orgId), rev.changes);
  const { before, after } = await rt.db.transaction(async (tx) => {
    const before = await readSnapshot(tx, p.orgId);
    await tx.query('savepoint change_request_preview');
    try {
      for (const run of runs) await run(tx, before.org);
      return { before, after: await readSnapshot(tx, p.orgId) };
    } finally {
      await tx.query('rollback to savepoint change_request_preview');
    }
  });
  // A scoped reader sees the answers of its own application and environment only (like a read of the flags).
  const visible = (name: string): boolean => {
    if (p.application === null) return true;
    const cf = before.flags.get(name) ?? after.flags.get(name);
    return cf !== undefined && sameName(cf.flag.project, p.application);
  };
  const flags = affectedFlags(rev.targets, before, after).filter(visible);
  const stages = p.environment === null ? rev.environments : rev.environments.filter((s) => sameName(s, p.environment!));
  // With `sample: true`, each flag and stage is evaluated over the given contexts (if any) and then
  // the contexts this node sampled for that flag and stage (docs/change-requests.md, "Sampled contexts").
  const sampled = sample ? (flag: string, stage: string) => samples!.contexts(p.orgId, flag, stage) : undefined;
  return compare(before, after, flags, stages, contexts ?? [], rt.now(), sampled);
}
