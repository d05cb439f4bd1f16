/**
 * SQL for `cluster_nodes` (sql/004_change_log.sql; the management actor runs it for the front, src/cluster/membership.ts): the nodes that share this database. Each node
 * refreshes its own row; a peer's bus heartbeats count only while its row is fresh, so a node's id
 * is confirmed by the database, which no bus message can write (src/cluster/membership.ts).
 */
import type { Queryable } from '../../storage/database.js';

/** A row not refreshed for this long no longer confirms its node. */
export const NODE_ROW_TTL_S = 30;

/** Registers (or refreshes) `nodeId`, and forgets rows a day old. */
export async function touchNode(q: Queryable, nodeId: string): Promise<void> {
  await q.query(
    `with gone as (delete from cluster_nodes where last_seen < now() - interval '1 day')
     insert into cluster_nodes (id, last_seen) values ($1, now()) on conflict (id) do update set last_seen = now()`,
    [nodeId],
  );
}

/** The ids of the nodes whose rows are fresh. */
export async function liveNodes(q: Queryable): Promise<Set<string>> {
  const rows = await q.query<{ id: string }>(`select id from cluster_nodes where last_seen > now() - make_interval(secs => $1)`, [NODE_ROW_TTL_S]);
  return new Set(rows.map((r) => r.id));
}

/** A node leaving on purpose: its peers stop counting it at their next refresh. */
export async function removeNode(q: Queryable, nodeId: string): Promise<void> {
  await q.query('delete from cluster_nodes where id = $1', [nodeId]);
}
