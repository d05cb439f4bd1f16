-- Vexil schema, version 9: webhooks (CONTRACT.md 19, docs/webhooks.md). Versions 7 and 8 belong to
-- other changes; the runner applies every version not yet recorded, in order.
--
-- webhook_endpoints: one row per endpoint. `secret` is the signing secret as stored
-- (features/webhooks/secrets.ts): AES-256-GCM under a key derived from VEXIL_CLUSTER_SECRET when
-- it is set ("v1:..."), else as is ("plain:..."); `previous_secret` signs beside it until
-- `previous_until` (a rotation's overlap).
create table webhook_endpoints (
  id              text primary key,
  org_id          text not null references organizations(id) on delete cascade,
  url             text not null,
  events          json not null,
  description     text not null default '',
  enabled         boolean not null default true,
  -- why the endpoint was disabled by delivery (a 410), null otherwise
  disabled_reason text,
  secret          text not null,
  previous_secret text,
  previous_until  timestamptz,
  created_at      timestamptz not null default now(),
  updated_at      timestamptz not null default now()
);
create index webhook_endpoints_org on webhook_endpoints (org_id, created_at);

-- The transactional outbox: one row per (audit event, matching endpoint), inserted by the audit
-- event's own statement (features/audit/store.ts `insertEvent`), so in the change's transaction.
-- `id` orders an endpoint's messages in commit order (every audited write holds its
-- organization's lock). `body` is frozen at the first attempt, so every attempt sends the same bytes.
-- status: pending | delivered | failed (given up after the retry period, or the endpoint gone: 410).
create table webhook_messages (
  id             bigint generated always as identity primary key,
  msg_id         text not null unique default ('msg_' || replace(gen_random_uuid()::text, '-', '')),
  endpoint_id    text not null references webhook_endpoints(id) on delete cascade,
  org_id         text not null,
  type           text not null,
  audit_event_id bigint,
  body           text,
  created_at     timestamptz not null default now(),
  status         text not null default 'pending',
  attempts       integer not null default 0,
  next_at        timestamptz not null default now(),
  -- a node's claim on the message while it sends it: no other node takes it before lease_until
  lease_until    timestamptz,
  lease_token    text,
  finished_at    timestamptz
);
create index webhook_messages_head on webhook_messages (endpoint_id, id) where status = 'pending';
create index webhook_messages_due on webhook_messages (next_at) where status = 'pending';
create index webhook_messages_finished on webhook_messages (finished_at) where status <> 'pending';

-- Every attempt (the deliveries log).
create table webhook_deliveries (
  id          bigint generated always as identity primary key,
  message_id  bigint not null references webhook_messages(id) on delete cascade,
  endpoint_id text not null references webhook_endpoints(id) on delete cascade,
  attempt     integer not null,
  at          timestamptz not null,
  status      integer,
  duration_ms integer not null,
  error       text
);
create index webhook_deliveries_endpoint on webhook_deliveries (endpoint_id, id);
