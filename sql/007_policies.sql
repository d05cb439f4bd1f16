-- Vexil schema, version 7: environment policies (docs/change-requests.md, "Protecting an
-- environment"). One row per environment that has a stored policy; an environment without a row
-- has the default policy {requiredApprovals: 0, allowSelfApproval: false, allowBypass: false}.
-- Every write that a protected environment refuses reads its row inside the write's transaction
-- (src/features/policies/guard.ts), so a policy set on one node protects every node at once.
-- `stage` is the environment's name as the organization spells it; a rename of the environment
-- renames its row in the same transaction, a removal deletes it.

create table environment_policies (
  org_id              text not null references organizations(id) on delete cascade,
  stage               text not null,
  required_approvals  integer not null default 0 check (required_approvals between 0 and 5),
  allow_self_approval boolean not null default false,
  allow_bypass        boolean not null default false,
  updated_at          timestamptz not null default now(),
  primary key (org_id, stage)
);

-- An event a bypassing write records carries its reason (docs/audit.md, "Bypass").
alter table audit_events add column bypass json;
