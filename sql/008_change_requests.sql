-- Vexil schema, version 8: change requests (CONTRACT 17, docs/change-requests.md). Version 7 (environment
-- policies) is another change's; the runner applies every version not yet recorded, in order.
--
-- A request's current content is its last row in change_request_revisions (`revision` on the
-- request names it): its changes, the state of each target when the revision was made (bases) and
-- the SHA-256 of both. Reviews name the revision and hash they were given on; a new revision voids
-- the reviews of the earlier ones (`voided`), which stay in the history. `state` is open, rejected
-- (a rejection on the current revision), scheduled, applied, closed or failed.

create table change_requests (
  id              text primary key,
  org_id          text not null references organizations(id) on delete cascade,
  title           text not null,
  description     text,
  state           text not null default 'open',
  revision        integer not null,
  hash            text not null,
  author_key_id   text not null,
  author          json not null,
  -- The scheduled apply: when, and the key whose authority applies it.
  scheduled_at    timestamptz,
  scheduled_by    text,
  error           text,
  -- The request this one reverts (a revert is a new request).
  reverts         text,
  created_at      timestamptz not null default now(),
  updated_at      timestamptz not null default now(),
  applied_at      timestamptz,
  applied_version bigint
);
-- Listing pages by id (ids sort by creation) within an organization, optionally by state.
create index change_requests_org on change_requests (org_id, id);
-- The schedule runner's timer reads the soonest scheduled request from this index.
create index change_requests_scheduled on change_requests (scheduled_at) where state = 'scheduled';

create table change_request_revisions (
  request_id    text not null references change_requests(id) on delete cascade,
  revision      integer not null,
  hash          text not null,
  author_key_id text not null,
  author        json not null,
  changes       json not null,
  -- Each change's target, in the changes' order (changes.ts `Target`).
  targets       json not null,
  bases         json not null,
  afters        json not null,
  environments  json not null,
  created_at    timestamptz not null default now(),
  primary key (request_id, revision)
);

create table change_request_reviews (
  id              bigserial primary key,
  request_id      text not null references change_requests(id) on delete cascade,
  revision        integer not null,
  hash            text not null,
  decision        text not null,
  comment         text,
  reviewer_key_id text not null,
  reviewer        json not null,
  voided          boolean not null default false,
  at              timestamptz not null default now()
);
create index change_request_reviews_request on change_request_reviews (request_id, id);

-- An event a change request's apply records names the request (docs/audit.md).
alter table audit_events add column change_request_id text;
