-- Vexil schema, version 5: segments (docs/api.md#segments), named audiences that rules reuse.
-- Names are unique in an organization whatever their application (rules name them); application
-- null is an organization-wide segment. A segment's change is logged in org_changes as
-- {"segment": name} (src/snapshots/apply-rules.ts Touches), so other nodes reload that segment only.
-- A rule names its segments in flag_configs.rules (jsonb, `segments`: [name]); a delete finds the
-- flags using a segment with a containment test over the organization's configurations (no index:
-- one would cost every configuration write, for a rare delete).

create table segments (
  org_id      text not null references organizations(id) on delete cascade,
  name        text not null,
  description text,
  application text,
  conditions  jsonb not null default '[]'::jsonb,
  created_at  timestamptz not null default now(),
  updated_at  timestamptz not null default now(),
  primary key (org_id, name)
);
