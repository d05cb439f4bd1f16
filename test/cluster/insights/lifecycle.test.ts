/**
 * Flag statuses on a cluster (docs/insights.md, "`flag.stale`"): two nodes on one PostgreSQL, each
 * computing every flag's status every 50 ms, record each turn to `unused` exactly once between
 * them (the decision is taken under the flag's `flag_lifecycle` row lock), over three turns; and
 * both list the flag under the same status.
 */
import t from 'tap';
import { setTimeout as sleep } from 'node:timers/promises';
import { busCluster, until } from '../../helpers/cluster.js';
import { createFlag, type TestNode } from '../../helpers/node.js';

const skip = !process.env.DATABASE_URL || !process.env.NATS_URL ? 'DATABASE_URL and NATS_URL are needed: cluster suite skipped' : false;

t.setTimeout(240_000);

t.test('two nodes: one flag.stale per turn between them', { skip }, async (t) => {
  const { nodes: [a, b] } = await busCluster(t, 2, { VEXIL_INSIGHTS_STATUS_MS: '50' });
  const key = a.adminKey;
  t.equal((await a.req('PUT', '/api/insights/settings', { key, body: { unusedAfter: 'PT2S', lifetimes: { release: null } } })).status, 200);
  t.equal((await createFlag(a, 'turns')).status, 201);
  const orgId = (await a.node.db.query<{ id: string }>("select id from organizations where name = 'default'"))[0].id;
  // Both variants in one statement, as a flush writes them: a round that read one variant's row
  // updated and the other's not would see a single variant served and record a turn to `stale`.
  const use = async () => {
    const now = new Date();
    await a.node.db.query(
      `insert into flag_variant_usage (org_id, flag_name, stage, variant, first_at, last_at)
       values ($1, 'turns', 'production', 'on', $2, $2), ($1, 'turns', 'production', 'off', $2, $2)
       on conflict (org_id, flag_name, stage, variant) do update set last_at = excluded.last_at`,
      [orgId, now],
    );
  };
  const events = async () => ((await a.req('GET', '/api/audit?target=turns&limit=100', { key })).body as { action: string; actor: unknown }[]).filter((e) => e.action === 'flag.stale');
  const listedAs = async (n: TestNode, status: string) => ((await n.req('GET', `/api/flags?status=${status}`, { key })).body as { name: string }[]).map((f) => f.name);
  for (let turn = 1; turn <= 3; turn++) {
    await use();
    for (const n of [a, b]) await until(() => listedAs(n, 'active'), (l) => l.includes('turns'), 5000, 50);
    await until(events, (e) => e.length === turn, 10_000, 100);
    for (const n of [a, b]) await until(() => listedAs(n, 'unused'), (l) => l.includes('turns'), 5000, 50);
    await sleep(500); // many more rounds on both nodes
    t.equal((await events()).length, turn, `turn ${turn}: one event between the two nodes`);
  }
  t.ok((await events()).every((e) => JSON.stringify(e.actor) === '{"system":true}'), 'recorded by the service');
});
