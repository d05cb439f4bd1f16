/**
 * Scheduled changes on a cluster (docs/cluster.md, "Scheduled changes"): two nodes on one
 * PostgreSQL racing for schedules due at the same moment apply each exactly once, within 1 s after
 * its time, with one audit event each, and the change reaches both nodes' evaluations; a schedule
 * whose time passes while its only node is down is applied when the node starts again.
 */
import t from 'tap';
import { setTimeout as sleep } from 'node:timers/promises';
import { busCluster, until } from '../helpers/cluster.js';
import { createFlag, createKey, evaluate, freshPostgresDatabase, randomKey, request, upsertConfig } from '../helpers/node.js';
import { spawnNode } from '../helpers/process.js';
import { createLogger } from '../../src/util/log.js';
import { flagEvents, inMs, listSchedules, postSchedule, settled, type Client } from '../helpers/schedules.js';

const skip = !process.env.DATABASE_URL || !process.env.NATS_URL ? 'DATABASE_URL and NATS_URL are needed: cluster suite skipped' : false;

t.setTimeout(240_000);

t.test('two nodes racing: every schedule due at one moment is applied exactly once, within 1 s', { skip }, async (t) => {
  // Both nodes log (debug) each schedule they apply and each they find taken by the other.
  const lines: string[] = [];
  const log = createLogger('debug', {}, (line) => lines.push(line));
  const { nodes: [a, b] } = await busCluster(t, 2, { VEXIL_LOG_LEVEL: 'debug' }, { log });
  const key = a.adminKey;
  const flags = ['r0', 'r1', 'r2', 'r3', 'r4', 'r5'];
  for (const f of flags) {
    t.equal((await createFlag(a, f)).status, 201);
    t.equal((await upsertConfig(a, f, { defaultVariantKey: 'off' })).status, 200);
  }
  const ek = await createKey(a, { permissions: ['CanEvaluate'], application: 'default' });
  // The same moment for all, each scheduled on one of the two nodes (half learn of theirs by the bus).
  const at = inMs(4000);
  const ids = new Map<string, string>();
  for (const [i, f] of flags.entries()) {
    const n = i % 2 === 0 ? a : b;
    const config = { stage: 'production', enabled: true, defaultVariantKey: 'on', rolloutPercentage: 100 };
    const r = await postSchedule(n, key, f, { at, stage: 'production', config });
    t.equal(r.status, 201, `schedule ${f}`);
    ids.set(f, r.body.id);
  }
  // A disable of r0's configuration due at the same moment too, scheduled on B.
  const off = await postSchedule(b, key, 'r0', { at, stage: 'production', clientId: null, enabled: false });
  t.equal(off.status, 201);

  for (const f of flags) {
    const s = await settled(a, key, f, ids.get(f)!, 8000);
    t.equal(s.status, 'applied', `${f} applied`);
    const delay = Date.parse(s.appliedAt) - Date.parse(at);
    t.ok(delay >= 0 && delay < 1000, `${f} applied ${delay} ms after at`);
    if (f === 'r0') continue; // two schedules: below
    const events = (await flagEvents(b, key, f)).filter((e) => e.scheduleId !== undefined);
    t.same(events.map((e) => [e.action, e.scheduleId]), [['config.upsert', ids.get(f)]], `${f}: one audit event`);
  }
  const r0 = (await flagEvents(a, key, 'r0')).filter((e) => e.scheduleId !== undefined);
  t.same(r0.map((e) => `${e.action} ${e.scheduleId}`).sort(), [`config.upsert ${ids.get('r0')}`, `config.disable ${off.body.id}`].sort(), 'r0: one event for each of its two schedules');
  t.equal((await settled(b, key, 'r0', off.body.id)).status, 'applied');

  // Propagated like any write: both nodes evaluate the new configurations.
  for (const n of [a, b]) {
    for (const f of flags.slice(1)) {
      const r = await until(() => evaluate(n, ek, f, { userId: 'u', stage: 'production' }), (x) => x.body?.key === 'on', 3000);
      t.equal(r.body.key, 'on', `${f} on ${n === a ? 'A' : 'B'}`);
    }
  }
  // Exactly once in the database too: one applied row each, and the organization's version moved once per change.
  const rows = await a.node.db.query<{ status: string; n: number }>(`select status, count(*)::int as n from schedules group by status`);
  t.same(rows, [{ status: 'applied', n: 7 }], 'seven schedules, each applied once');
  const said = (msg: string) => lines.filter((l) => JSON.parse(l).msg === msg).length;
  t.equal(said('schedule applied'), 7, 'the two nodes applied seven changes between them');
  t.notOk(lines.some((l) => l.includes(key) || l.includes(ek)), 'no key value in either node\'s log');
  t.comment(`${said('schedule taken by another node')} times a node found a schedule the other had taken`);
});

t.test('a schedule whose time passes while its only node is down is applied when it starts', { skip }, async (t) => {
  const db = await freshPostgresDatabase();
  t.teardown(db.drop);
  const adminKey = randomKey();
  const env = { DATABASE_URL: db.url, VEXIL_BOOTSTRAP_ADMIN_KEY: adminKey, VEXIL_RATE_LIMIT_MGMT: '100000' };
  const first = await spawnNode(t, { env });
  const client = (url: string): Client => ({ req: (m, p, o) => request(url, m, p, o) });
  const c1 = client(first.url);
  t.equal((await c1.req('POST', '/api/flags', { key: adminKey, body: { name: 'late', project: 'default', type: 'boolean', variants: [{ key: 'on', value: true, valueType: 'boolean' }, { key: 'off', value: false, valueType: 'boolean' }] } })).status, 201);
  t.equal((await c1.req('POST', '/api/flags/late/configs', { key: adminKey, body: { stage: 'production', enabled: true, defaultVariantKey: 'off', rolloutPercentage: 100 } })).status, 200);
  const at = inMs(3000);
  const s = await postSchedule(c1, adminKey, 'late', { at, stage: 'production', enabled: false });
  t.equal(s.status, 201);
  await first.kill('SIGTERM');
  t.ok(Date.now() < Date.parse(at), 'stopped before at');
  await sleep(Math.max(0, Date.parse(at) - Date.now()) + 1000);

  const startedAt = Date.now();
  const second = await spawnNode(t, { env });
  // Measured from the node's "listening" line, not from the process's spawn: how long a process
  // takes to load is the machine's (CI ran it at 6.2 s once, on a loaded machine).
  const listeningAt = Date.now();
  const c2 = client(second.url);
  const done = await settled(c2, adminKey, 'late', s.body.id, 3000);
  t.equal(done.status, 'applied', 'applied after the restart');
  t.ok(Date.parse(done.appliedAt) >= startedAt, 'by the restarted node');
  const late = Date.parse(done.appliedAt) - listeningAt;
  t.ok(late < 5000, `within ${late} ms of its listening (${listeningAt - startedAt} ms after its spawn)`);
  const flag = await c2.req('GET', '/api/flags/late', { key: adminKey });
  t.equal(flag.body.configs[0].enabled, false, 'the change was made');
  t.equal((await flagEvents(c2, adminKey, 'late')).filter((e) => e.scheduleId === s.body.id).length, 1, 'one audit event');
  t.equal((await listSchedules(c2, adminKey, 'late')).body.length, 1);
  await second.kill('SIGTERM');
});
