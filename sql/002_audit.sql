-- Vexil schema, version 2: the audit log (CONTRACT.md 11). One row per successful write,
-- inserted in the write's own transaction (src/features/write.ts). Existing tables are untouched.
-- actor/before/after are `json` (not jsonb) so that objects keep the field order they were
-- written with; they are only ever read back whole.

create table audit_events (
  -- the event id: increasing per organization in commit order (every audited write holds the
  -- organization's row lock), so `before=<id>` pages are stable
  id               bigint generated always as identity primary key,
  org_id           text not null references organizations(id) on delete cascade,
  at               timestamptz not null default now(),
  actor            json not null,
  action           text not null,
  target_type      text not null,
  target_name      text not null,
  target_stage     text,
  target_client_id text,
  -- the flag's application for flag and configuration events, else null; follows renames
  application      text,
  before           json,
  after            json
);
create index audit_events_org on audit_events (org_id, id desc);
create index audit_events_org_target on audit_events (org_id, target_name, id desc);
