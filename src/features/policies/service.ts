/**
 * Environment policies (CONTRACT 17; docs/change-requests.md, "Protecting an environment"): the
 * functions REST (`GET`/`PUT /api/environments/{stage}/policy`) and GraphQL (`environmentPolicy`,
 * `setEnvironmentPolicy`) both call. Reading needs CanRead, writing an organization-wide Admin key.
 * A write goes through `writeOrg` (audited `org.policy`; the organization's version is bumped, so
 * every node reloads its settings), and every protected write reads the policy inside its own
 * transaction (guard.ts): a policy committed on one node protects the next write on every node.
 */
import type { Authenticated } from '../../auth/authenticate.js';
import { requireAdmin, requirePermission } from '../../auth/permissions.js';
import { notFound } from '../../domain/errors.js';
import { findName } from '../../domain/name-matching.js';
import { parseEnvironmentPolicy } from '../../domain/validation/policies.js';
import type { ActorRuntime } from '../../runtime.js';
import { parseName } from '../../domain/validation.js';
import { orgChange } from '../audit/events.js';
import { actorOf, writeOrg } from '../write.js';
import { readPolicy, savePolicy, type EnvironmentPolicy } from './store.js';

/** A policy as the API answers it: the environment's name (the organization's spelling) and its settings. */
export interface EnvironmentPolicyView extends EnvironmentPolicy {
  environment: string;
}

const unknownStage = (stage: string) => notFound(`Environment '${stage}' not found`);

export async function getEnvironmentPolicy(rt: ActorRuntime, auth: Authenticated, rawStage: unknown): Promise<EnvironmentPolicyView> {
  requirePermission(auth.principal, 'CanRead');
  const stage = parseName(rawStage, 'stage');
  const canonical = findName(auth.snapshot.org.environments, stage);
  if (canonical === undefined) throw unknownStage(stage);
  return { environment: canonical, ...(await readPolicy(rt.db, auth.principal.orgId, canonical)) };
}

export async function setEnvironmentPolicy(rt: ActorRuntime, auth: Authenticated, rawStage: unknown, raw: unknown): Promise<EnvironmentPolicyView> {
  const p = auth.principal;
  requireAdmin(p);
  const stage = parseName(rawStage, 'stage');
  const input = parseEnvironmentPolicy(raw);
  return writeOrg(rt, actorOf(p), p.orgId, 'settings', async (tx, org) => {
    const canonical = findName(org.environments, stage);
    if (canonical === undefined) throw unknownStage(stage);
    const before = await readPolicy(tx, org.id, canonical);
    await savePolicy(tx, org.id, canonical, input);
    const after = await readPolicy(tx, org.id, canonical);
    return {
      result: { environment: canonical, ...after },
      audit: orgChange('org.policy', org.name, { environment: canonical, policy: before }, { environment: canonical, policy: after }),
    };
  });
}
