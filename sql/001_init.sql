-- Vexil schema, version 1. Applied by src/storage/migrate.ts on PGlite and PostgreSQL alike.
-- Identifiers are text (UUIDs made by the application); versions are integers so both drivers
-- return plain numbers; lists live in jsonb so both drivers return plain arrays.

create table organizations (
  id                  text primary key,
  name                text not null unique,
  subscription_active boolean not null default true,
  environments        jsonb not null,
  applications        jsonb not null,
  kill_switch         jsonb not null default '[]'::jsonb,
  -- bumped by every write to the organization's flags, configs, settings or keys
  version             integer not null default 1,
  created_at          timestamptz not null default now()
);

create table management_keys (
  id          text primary key,
  org_id      text not null references organizations(id) on delete cascade,
  name        text not null,
  -- SHA-256 of the key value, lowercase hex. The value itself is never stored.
  key_hash    text not null unique,
  permissions jsonb not null,
  application text,
  environment text,
  disabled    boolean not null default false,
  created_at  timestamptz not null default now(),
  rotated_at  timestamptz
);
create index management_keys_org on management_keys (org_id);

create table flags (
  org_id       text not null references organizations(id) on delete cascade,
  name         text not null,
  project      text not null,
  type         text not null,
  description  text,
  tags         jsonb not null default '[]'::jsonb,
  is_archived  boolean not null default false,
  variants     jsonb not null,
  environments jsonb not null,
  dependencies jsonb not null default '[]'::jsonb,
  created_at   timestamptz not null default now(),
  updated_at   timestamptz not null default now(),
  primary key (org_id, name)
);

create table flag_configs (
  org_id              text not null,
  flag_name           text not null,
  stage               text not null,
  -- '' stands for "no clientId" so that the selector can be part of the primary key
  client_id           text not null default '',
  enabled             boolean not null,
  default_variant_key text not null,
  rollout_percentage  double precision not null,
  rules               jsonb not null default '[]'::jsonb,
  active_from         timestamptz,
  active_until        timestamptz,
  enrollment_cutoff   double precision,
  updated_at          timestamptz not null default now(),
  primary key (org_id, flag_name, stage, client_id),
  foreign key (org_id, flag_name) references flags (org_id, name) on delete cascade
);
