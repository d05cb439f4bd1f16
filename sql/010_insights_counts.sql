-- Vexil schema, version 10: evaluation counts for flag insights (CONTRACT 18, docs/insights.md).
-- The runner (src/storage/migrate.ts) applies every version not yet recorded, in order, so this
-- one works whatever versions 7 to 9 turn out to be.
--
-- Written only by the management actor's insights flusher (src/insights/flush.ts): one batched
-- statement per interval, additive upserts, so counts from every node add up exactly.
-- No foreign key to organizations: a batch must never fail because an organization was deleted
-- in the meantime; rows of deleted organizations and flags age out with the retention below.
-- Retention (src/insights/retention.ts): hour buckets kept 14 days, day buckets 400 days.

create table flag_evaluation_counts (
  org_id       text not null,
  flag_name    text not null,
  stage        text not null,
  -- the key's application (client id), '' when none
  application  text not null,
  -- variant key served ('' if none)
  variant      text not null,
  granularity  text not null check (granularity in ('hour','day')),
  bucket_start timestamptz not null,
  count        bigint not null,
  primary key (org_id, flag_name, granularity, bucket_start, stage, application, variant)
);
-- The retention job deletes by (granularity, bucket_start < cutoff).
create index flag_evaluation_counts_retention on flag_evaluation_counts (granularity, bucket_start);

-- Per flag, stage and variant: first and last evaluation seen (second precision).
create table flag_variant_usage (
  org_id    text not null,
  flag_name text not null,
  stage     text not null,
  variant   text not null,
  first_at  timestamptz not null,
  last_at   timestamptz not null,
  primary key (org_id, flag_name, stage, variant)
);
