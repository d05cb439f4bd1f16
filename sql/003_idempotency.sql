-- Vexil schema, version 3: Idempotency-Key records (CONTRACT.md 14, src/management/idempotency.ts).
-- One row per (scope, key): the scope is the calling Management Key (`key:<id>`) or `operator`.
-- The row is inserted in the write's own transaction (src/features/write.ts), so a write and its
-- record commit together, and the primary key lets only one of two concurrent duplicates write.
-- The answer is filled in right after the commit; an answer that carried a key value is never
-- kept: only the key's id (`key_id`). Rows older than 24 hours are ignored and deleted.
create table idempotency_keys (
  scope       text not null,
  idem_key    text not null,
  -- sha256 (hex) of the request's method, path and body
  fingerprint text not null,
  status      integer,
  headers     json,
  body        text,
  key_id      text,
  created_at  timestamptz not null default now(),
  primary key (scope, idem_key)
);
create index idempotency_keys_created on idempotency_keys (created_at);
