-- Vexil schema, version 6: scheduled configuration changes (docs/api.md "Scheduled changes",
-- docs/cluster.md "Scheduled changes"). Version 5 is left to another change; the runner
-- (src/storage/migrate.ts) applies every version not yet recorded, in order, so this one works
-- whether 005 is absent, present, or added after 006 was applied.
--
-- One row per schedule. `config` is the FlagConfig to upsert (rule ids fixed when scheduled; its
-- stage is always the row's `stage`), or null with `enabled` set for an enable/disable. `key_id`
-- is the scheduling key: the change is applied with its authority, read again when due.
-- `created_by` ({keyId, keyName}) is `json` so it keeps its field order, like the audit log's.

create table schedules (
  id          text primary key,
  org_id      text not null references organizations(id) on delete cascade,
  flag_name   text not null,
  at          timestamptz not null,
  stage       text not null,
  client_id   text not null default '',
  enabled     boolean,
  config      json,
  key_id      text not null,
  created_by  json not null,
  -- pending | applied | cancelled | failed
  status      text not null default 'pending',
  applied_at  timestamptz,
  error       text,
  created_at  timestamptz not null default now()
);
-- The runner's timer reads the soonest pending `at`, and its claim the due ones, from this index.
create index schedules_pending_at on schedules (at) where status = 'pending';
create index schedules_org_flag on schedules (org_id, flag_name, at);

-- An event a schedule's change records names the schedule (docs/audit.md).
alter table audit_events add column schedule_id text;
