-- Vexil schema, version 4: bus trust (CONTRACT.md 14, docs/cluster.md "Bus trust").
-- org_changes: what each organization version touched, written in the write's own transaction
-- (src/features/organizations/store.ts lockAndBumpVersion), so a node told of a change reads what
-- changed, and the version it may claim, from the database rather than from the message. The last
-- 1000 versions of each organization are kept; a node further behind reloads the organization.
-- cluster_nodes: the nodes that share this database, each refreshing its row every 10 s; a bus
-- heartbeat counts toward the rate-limit share only for a node found here (src/cluster/membership.ts).

create table org_changes (
  org_id  text not null references organizations(id) on delete cascade,
  version integer not null,
  -- {"flag": name} | "settings" | "all" (src/snapshots/apply-rules.ts Touches)
  touches jsonb not null,
  primary key (org_id, version)
);

create table cluster_nodes (
  id        text primary key,
  last_seen timestamptz not null default now()
);
