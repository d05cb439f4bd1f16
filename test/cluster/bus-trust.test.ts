/**
 * Bus trust (docs/cluster.md, "Bus trust"): messages only tell a node where to look. Forged,
 * replayed and malformed messages are published straight onto the bus (real NATS, a subject of the
 * test's own) next to real nodes on real PostgreSQL, and every check goes through HTTP: no node
 * serves a version or data the database does not hold, the next real write still propagates,
 * evaluation keeps answering, and the reader keeps reading. Forged heartbeats:
 * bus-membership.test.ts; signing (VEXIL_CLUSTER_SECRET): bus-signing.test.ts.
 */
import postgres from 'postgres';
import t from 'tap';
import { BusTap, busCluster, orgRow, propagates, seedShared, SHARED_BODY as body, until } from '../helpers/cluster.js';
import { scrape } from '../helpers/metrics.js';
import { evaluate } from '../helpers/node.js';

const skip = !process.env.DATABASE_URL || !process.env.NATS_URL ? 'DATABASE_URL and NATS_URL are needed: bus trust suite skipped' : false;
const REJECTED = 'vexil_bus_rejected_total';

t.test('without a secret: forged, replayed and malformed messages mislead no node', { skip }, async (t) => {
  const { nodes, subject, databaseUrl } = await busCluster(t, 2);
  const [a, b] = nodes;
  const ek = await seedShared(t, nodes);
  const tap = await BusTap.open(t, subject);
  const org = await orgRow(databaseUrl);

  // Evaluations on B for the whole test: every one answers 200 with a variant the database held.
  let stop = false;
  const bad: string[] = [];
  let served = 0;
  const load = (async () => {
    while (!stop) {
      const r = await evaluate(b, ek, 'shared', body);
      served++;
      if (r.status !== 200 || (r.body.key !== 'on' && r.body.key !== 'off')) bad.push(`${r.status} ${r.text.slice(0, 100)}`);
    }
  })();

  // 1. A forged change one version ahead (docs/cluster.md, "Bus trust"). Before, every node then claimed that
  // version and skipped the real write that followed as stale.
  const change = (version: number, touches: unknown) => ({ kind: 'change', change: { orgId: org.id, version, touches } });
  await tap.publish(BusTap.envelope(change(org.version + 1, { flag: 'shared' })));
  await tap.publish(BusTap.envelope(change(org.version + 2, 'settings')));
  await new Promise((r) => setTimeout(r, 200));
  await propagates(t, a, nodes, ek, 'off', 'after forged next versions');

  // 2. A forged version far ahead, touching everything, then the next real write.
  await tap.publish(BusTap.envelope(change(2_000_000_000, 'all')));
  await new Promise((r) => setTimeout(r, 200));
  await propagates(t, b, nodes, ek, 'on', 'after a forged far-ahead version');

  // 3. A write whose message never came (written straight into the database), announced by a
  // forged message naming another flag: the node reads what the version really touched.
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
  t.teardown(() => sql.end());
  const lost = await sql.begin(async (tx) => {
    const [o] = await tx<{ version: number }[]>`update organizations set version = version + 1 where id = ${org.id} returning version`;
    await tx`insert into org_changes (org_id, version, touches) values (${org.id}, ${o.version}, ${sql.json({ flag: 'shared' })})`;
    await tx`update flag_configs set default_variant_key = 'off' where org_id = ${org.id} and flag_name = 'shared'`;
    return o.version;
  });
  await tap.publish(BusTap.envelope(change(lost, { flag: 'decoy' })));
  for (const n of nodes) {
    const r = await until(() => evaluate(n, ek, 'shared', body), (x) => x.body?.key === 'off', 2000);
    t.equal(r.body?.key, 'off', `${n.url} serves what version ${lost} really wrote, not what the message named`);
  }

  // 4. Replays: every real message seen so far, again, in order. Nothing goes back.
  const recorded = tap.seen.filter((m) => m.data.byteLength > 0).slice();
  t.ok(recorded.some((m) => new TextDecoder().decode(m.data).includes('"change"')), `recorded ${recorded.length} real messages to replay`);
  for (const m of recorded) await tap.publish(m.data);
  await new Promise((r) => setTimeout(r, 300));
  for (const n of nodes) t.equal((await evaluate(n, ek, 'shared', body)).body?.key, 'off', `${n.url} still serves the latest after replays`);

  // 5. Malformed messages of every kind; the reader keeps reading.
  const before = await Promise.all(nodes.map((n) => scrape(n)));
  const malformed: (string | Uint8Array)[] = [
    'not json',
    '',
    'null',
    '[]',
    '{}',
    JSON.stringify({ node: 'x' }), // no event: this threw inside the reader before
    JSON.stringify({ node: 'x', event: null }),
    BusTap.envelope({ kind: 'change' }),
    BusTap.envelope({ kind: 'change', change: { orgId: org.id, version: 'high', touches: 'all' } }),
    BusTap.envelope({ kind: 'change', change: { orgId: org.id, version: -1, touches: 'all' } }),
    BusTap.envelope({ kind: 'change', change: { orgId: org.id, version: 1e300, touches: 'all' } }),
    BusTap.envelope({ kind: 'change', change: { orgId: org.id, version: 5, touches: { flag: 42 } } }),
    BusTap.envelope({ kind: 'key', orgId: org.id }),
    BusTap.envelope({ kind: 'heartbeat' }),
    BusTap.envelope({ kind: 'heartbeat', node: 'someone-else' }, 'sender'),
    BusTap.envelope({ kind: 'explode' }),
    JSON.stringify({ node: 'x', ts: 'now', nonce: 'n', event: { kind: 'heartbeat', node: 'x' } }),
    new Uint8Array([0xff, 0xfe, 0x00, 0x7b]),
  ];
  for (const m of malformed) await tap.publish(m);
  await tap.publish(BusTap.envelope(change(lost + 1, { flag: 'shared', padding: 'x'.repeat(200_000) })));
  await new Promise((r) => setTimeout(r, 300));
  const after = await Promise.all(nodes.map((n) => scrape(n)));
  for (let i = 0; i < nodes.length; i++) {
    const d = (reason: string) => after[i].value(REJECTED, { reason }) - before[i].value(REJECTED, { reason });
    t.equal(d('malformed'), malformed.length, `node ${i}: every malformed message counted`);
    t.equal(d('too_large'), 1, `node ${i}: the huge one counted as too_large`);
  }
  await propagates(t, a, nodes, ek, 'on', 'after malformed messages (the reader still reads)');

  stop = true;
  await load;
  t.ok(served > 20, `B answered ${served} evaluations during the attack`);
  t.same(bad, [], 'every evaluation answered 200 with a variant the database held');
});
