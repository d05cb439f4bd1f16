/**
 * SQL for environment policies (sql/007_policies.sql; docs/change-requests.md, "Protecting an
 * environment"). An environment without a stored row has the default policy: no review required.
 * Reads take any Queryable: a write's transaction reads the policy there (features/policies/guard.ts),
 * so a policy committed on any node is seen by the next write on every node.
 */
import type { Queryable } from '../../storage/database.js';

export interface EnvironmentPolicy {
  /** 0..5; above 0 the environment is protected. */
  requiredApprovals: number;
  /** The author of a change request may approve it. */
  allowSelfApproval: boolean;
  /** An Admin key may write directly with `x-vexil-bypass-review: <reason>`. */
  allowBypass: boolean;
}

export const DEFAULT_POLICY: Readonly<EnvironmentPolicy> = Object.freeze({ requiredApprovals: 0, allowSelfApproval: false, allowBypass: false });

interface PolicyRow {
  stage: string;
  required_approvals: number;
  allow_self_approval: boolean;
  allow_bypass: boolean;
}

const toPolicy = (r: PolicyRow): EnvironmentPolicy => ({
  requiredApprovals: Number(r.required_approvals),
  allowSelfApproval: r.allow_self_approval,
  allowBypass: r.allow_bypass,
});

/** The policy of `stage` (the organization's spelling), or the default when none is stored. */
export async function readPolicy(q: Queryable, orgId: string, stage: string): Promise<EnvironmentPolicy> {
  const rows = await q.query<PolicyRow>(
    'select stage, required_approvals, allow_self_approval, allow_bypass from environment_policies where org_id = $1 and stage = $2',
    [orgId, stage],
  );
  return rows.length === 0 ? { ...DEFAULT_POLICY } : toPolicy(rows[0]);
}

/** Every stored policy of the organization, by stage; stages without a stored policy are absent. */
export async function readPolicies(q: Queryable, orgId: string): Promise<Map<string, EnvironmentPolicy>> {
  const rows = await q.query<PolicyRow>(
    'select stage, required_approvals, allow_self_approval, allow_bypass from environment_policies where org_id = $1 order by stage',
    [orgId],
  );
  return new Map(rows.map((r) => [r.stage, toPolicy(r)]));
}

/** Stores `policy` for `stage`; the default policy deletes the row (nothing to keep). */
export async function savePolicy(q: Queryable, orgId: string, stage: string, policy: EnvironmentPolicy): Promise<void> {
  if (policy.requiredApprovals === 0 && !policy.allowSelfApproval && !policy.allowBypass) {
    await q.query('delete from environment_policies where org_id = $1 and stage = $2', [orgId, stage]);
    return;
  }
  await q.query(
    `insert into environment_policies (org_id, stage, required_approvals, allow_self_approval, allow_bypass)
     values ($1, $2, $3, $4, $5)
     on conflict (org_id, stage) do update set required_approvals = excluded.required_approvals,
       allow_self_approval = excluded.allow_self_approval, allow_bypass = excluded.allow_bypass, updated_at = now()`,
    [orgId, stage, policy.requiredApprovals, policy.allowSelfApproval, policy.allowBypass],
  );
}

/** An environment renamed (organizations/service.ts `cascadeRename`): its policy follows it. */
export async function renamePolicyStage(q: Queryable, orgId: string, from: string, to: string): Promise<void> {
  await q.query('update environment_policies set stage = $3 where org_id = $1 and stage = $2', [orgId, from, to]);
}

/** An environment removed: its policy goes with it (a new environment of that name starts unprotected). */
export async function deletePolicy(q: Queryable, orgId: string, stage: string): Promise<void> {
  await q.query('delete from environment_policies where org_id = $1 and stage = $2', [orgId, stage]);
}

/** The stages of the configurations of the flags named (protection: where a flag write changes answers). */
export async function configStagesOfFlags(q: Queryable, orgId: string, flags: readonly string[]): Promise<string[]> {
  if (flags.length === 0) return [];
  const rows = await q.query<{ stage: string }>(
    `select distinct stage from flag_configs where org_id = $1 and flag_name in (select jsonb_array_elements_text($2::jsonb)) order by stage`,
    [orgId, JSON.stringify(flags)],
  );
  return rows.map((r) => r.stage);
}

/** The stages of the configurations whose rules name `segment` (jsonb containment, like segments/store.ts). */
export async function configStagesUsingSegment(q: Queryable, orgId: string, segment: string): Promise<string[]> {
  const rows = await q.query<{ stage: string }>(
    `select distinct stage from flag_configs where org_id = $1 and rules @> $2::jsonb order by stage`,
    [orgId, JSON.stringify([{ segments: [segment] }])],
  );
  return rows.map((r) => r.stage);
}

/** Whether any stored policy of the organization protects an environment (the guard's fast path). */
export async function anyProtected(q: Queryable, orgId: string): Promise<boolean> {
  const rows = await q.query('select 1 from environment_policies where org_id = $1 and required_approvals > 0 limit 1', [orgId]);
  return rows.length > 0;
}
