-- Vexil schema, version 11: flag lifecycle (CONTRACT 18, docs/insights.md "Lifecycle").
--
-- A flag's `purpose` sets how long it is expected to live (organization settings below).
alter table flags add column purpose text not null default 'release';

-- The status job reads the usage evaluated since its previous round (src/features/insights/tracker.ts).
create index flag_variant_usage_last_at on flag_variant_usage (last_at);

-- Per organization: {lifetimes: {<purpose>: ISO 8601 duration | null}, unusedAfter: duration}.
-- No row: the defaults (src/features/insights/settings.ts). `json` keeps its field order.
create table insights_settings (
  org_id     text primary key references organizations(id) on delete cascade,
  settings   json not null,
  updated_at timestamptz not null default now()
);

-- The last status recorded for each flag. A status job on every node computes statuses; a turn to
-- `stale` or `unused` is recorded here and in the audit log (`flag.stale`) in one transaction,
-- decided under this row's lock (`update ... where status <> $new returning`), so a restart or a
-- second node never records the same turn twice. Deleting the flag deletes its row.
create table flag_lifecycle (
  org_id     text not null,
  flag_name  text not null,
  status     text not null,
  reasons    jsonb not null default '[]'::jsonb,
  changed_at timestamptz not null default now(),
  primary key (org_id, flag_name),
  foreign key (org_id, flag_name) references flags (org_id, name) on delete cascade
);
