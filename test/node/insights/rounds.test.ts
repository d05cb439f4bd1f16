/**
 * What a status round looks at (docs/insights.md, "Where statuses are computed"): the real
 * tracker on PGlite, with the real snapshot registry reading the real database and writes made
 * through `writeOrg`, as the management actor has them. A round looks at the flags that changed
 * and at no other (`tracker.stats.examined`), and the counts (`vexil_flags{status}`, as `onCounts`
 * hears them) stay exact across adds, deletes, status turns and a status running out. The clock is
 * the runtime's (`rt.now`), moved by the test in seconds; nothing is timed.
 */
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { seedFlags } from '../../../bench/seed.js';
import { LocalBus } from '../../../src/cluster/bus.js';
import { loadConfig } from '../../../src/config.js';
import type { FlagStatus } from '../../../src/domain/types.js';
import { flagChange } from '../../../src/features/audit/events.js';
import * as flags from '../../../src/features/flags/store.js';
import { writeSettings } from '../../../src/features/insights/store.js';
import { FULL_READ_ROUNDS, LifecycleTracker, type StatusCounts } from '../../../src/features/insights/tracker.js';
import { bootstrap } from '../../../src/features/organizations/bootstrap.js';
import { snapshotSource } from '../../../src/features/snapshot-source.js';
import { writeOrg } from '../../../src/features/write.js';
import { EvalCounts } from '../../../src/ops/eval-counts.js';
import type { ActorRuntime } from '../../../src/runtime.js';
import { SnapshotRegistry } from '../../../src/snapshots/registry.js';
import { openPGlite } from '../../../src/storage/pglite.js';
import { outsideWrite } from '../../../src/storage/poll-gate.js';
import { createLogger } from '../../../src/util/log.js';
import { pgliteCopy } from '../../helpers/node.js';

t.setTimeout(300_000);

const N = 20_000;
/** Above the 2,000 statuses a round records: the rest are recorded by the next round. */
const K = 2_100;
const SETTLE_PER_ROUND = 2_000;

t.test('a round looks at what changed, and the counts stay exact', async (t) => {
  const dir = await pgliteCopy();
  const db = await openPGlite(dir);
  t.teardown(async () => {
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  });
  await bootstrap(db, randomBytes(32).toString('hex'));
  const { orgId } = await seedFlags(db, N, 'f-');
  let clock = Date.now();
  const snapshots = new SnapshotRegistry(snapshotSource(db));
  const config = loadConfig({ VEXIL_LOG_LEVEL: 'silent' });
  const rt: ActorRuntime = { config, db, snapshots, bus: new LocalBus(), log: createLogger('silent'), pool: null, evalCounts: new EvalCounts(), now: () => clock };
  let told: StatusCounts[] = [];
  // Rounds only when the test asks (an hour between timed ones; the full read never comes).
  const tracker = new LifecycleTracker(rt, (c) => (told = c), 3_600_000);
  t.teardown(() => tracker.stop());
  await snapshots.get(orgId);
  await tracker.start();

  const round = async (): Promise<number> => {
    await tracker.round();
    return tracker.stats.examined;
  };
  const want: Record<FlagStatus, number> = { new: N, unused: 0, stale: 0, active: 0 };
  /** What onCounts last heard is `want`, and so is every flag's status counted one by one. */
  const exact = (what: string): void => {
    t.same(told, [{ orgName: 'default', counts: want }], `${what}: counts told`);
    const byOne: Record<FlagStatus, number> = { new: 0, unused: 0, stale: 0, active: 0 };
    for (const c of snapshots.peek(orgId)!.flags.values()) byOne[tracker.statusOf(orgId, c.flag, clock).status]++;
    t.same(byOne, want, `${what}: every flag's status, counted one by one`);
  };
  const recorded = async (): Promise<Record<string, number>> => {
    const rows = await db.query<{ status: string; n: number }>('select status, count(*)::int as n from flag_lifecycle where org_id = $1 group by status', [orgId]);
    return Object.fromEntries(rows.map((r) => [r.status, Number(r.n)]));
  };
  const staleEvents = async (): Promise<number> =>
    Number((await db.query<{ n: number }>("select count(*)::int as n from audit_events where org_id = $1 and action = 'flag.stale'", [orgId]))[0].n);
  /** Flags `f-from` … `f-to` evaluated now: variant `on` (and `off` unless `onOnly`), first evaluated a second ago. */
  // Usage and settings are written here by SQL, not by this node's flush or service: outside
  // writes, which the tracker is told of (storage/poll-gate.ts), as the actor does for `VexilNode.db`.
  const evaluate = async (from: number, to: number, onOnly = false) => {
    await db.query(
      `insert into flag_variant_usage (org_id, flag_name, stage, variant, first_at, last_at)
       select $1, 'f-' || i, 'production', v, $2, $3 from generate_series($4::int, $5::int) as i, unnest($6::text[]) as v
       on conflict (org_id, flag_name, stage, variant) do update set last_at = excluded.last_at`,
      [orgId, new Date(clock - 1000), new Date(clock), from, to, onOnly ? ['on'] : ['on', 'off']],
    );
    outsideWrite(db);
  };

  // The first round walks every flag; then idle rounds look at none.
  t.equal(tracker.stats.examined, N, 'the first round walks every flag');
  exact('first round');
  t.equal(await round(), 0, 'an idle round looks at no flag');
  t.equal(await round(), 0, 'nor does the next');

  // K flags evaluated: the round looks at those K (the usage rows it reads again for the next
  // 30 s have not moved: nothing more), records SETTLE_PER_ROUND of them, the next round the rest.
  clock += 1000;
  await evaluate(0, K - 1);
  t.equal(await round(), K, 'K flags evaluated: the round looks at K');
  want.new -= K;
  want.active += K;
  exact('K evaluated');
  t.same(await recorded(), { active: SETTLE_PER_ROUND }, 'a round records at most SETTLE_PER_ROUND');
  t.equal(await round(), K - SETTLE_PER_ROUND, 'the next round looks at the flags left over');
  t.same(await recorded(), { active: K }, 'and records them');
  t.equal(await round(), 0, 'then idle again');

  clock += 1000;
  await evaluate(0, 9, true);
  await evaluate(K, K + 4);
  t.equal(await round(), 15, '10 evaluated again and 5 for the first time: 15 looked at');
  want.new -= 5;
  want.active += 5;
  exact('15 evaluated');
  t.equal(await round(), 0, 'idle');

  // Writes: the flag each touches, and only it.
  const write = (touch: string, fn: Parameters<typeof writeOrg>[4]) => writeOrg(rt, { system: true }, orgId, { flag: touch }, fn);
  await write('extra', async (tx) => {
    const flag = await flags.insertFlag(tx, orgId, { name: 'extra', project: 'default', type: 'boolean', description: null, tags: [], isArchived: false, variants: [{ key: 'on', value: true, valueType: 'boolean' }, { key: 'off', value: false, valueType: 'boolean' }], environments: ['production'], dependencies: [], purpose: 'release' });
    return { result: flag, audit: flagChange('flag.create', null, flag) };
  });
  t.equal(await round(), 1, 'a flag created: 1 looked at');
  want.new += 1;
  exact('a flag created');
  await write('f-0', async (tx) => {
    const before = (await flags.getFlag(tx, orgId, 'f-0'))!;
    const after = (await flags.saveFlag(tx, orgId, { ...before, purpose: 'killSwitch' }))!;
    return { result: after, audit: flagChange('flag.update', before, after) };
  });
  t.equal(await round(), 1, 'a flag updated: 1 looked at');
  exact('a flag updated');
  await write('f-1', async (tx) => {
    const before = (await flags.getFlag(tx, orgId, 'f-1'))!;
    await flags.deleteFlag(tx, orgId, 'f-1');
    return { result: undefined, audit: flagChange('flag.delete', before, null) };
  });
  t.equal(await round(), 1, 'a flag deleted: 1 looked at');
  want.active -= 1;
  exact('an active flag deleted');
  t.equal(await round(), 0, 'idle');

  // A settings change walks every flag: unused after 10 s from now on.
  await writeSettings(db, orgId, { lifetimes: { release: null, experiment: null, operational: null, killSwitch: null, permission: null }, unusedAfter: 'PT10S' });
  outsideWrite(db);
  t.equal(await round(), N, 'a settings change: every flag looked at');
  exact('settings changed');
  t.equal(await round(), 0, 'idle');

  // 11 s on, every evaluated flag's status has run out: unused. The round walks every flag,
  // counts every turn at once and records SETTLE_PER_ROUND of them; the next round the rest.
  clock += 11_000;
  t.equal(await round(), N, 'a status ran out: every flag looked at');
  want.unused = want.active;
  want.active = 0;
  exact('every evaluated flag unused');
  t.equal(await staleEvents(), SETTLE_PER_ROUND, 'SETTLE_PER_ROUND turns recorded');
  t.equal(await round(), want.unused - SETTLE_PER_ROUND, 'the rest next round');
  t.equal(await staleEvents(), want.unused, 'one flag.stale per turn');
  t.same(await recorded(), { unused: want.unused }, 'every turn recorded');
  t.equal(await round(), 0, 'idle');

  // Evaluated again: active (a turn, not an event).
  clock += 1000;
  await evaluate(2, 2);
  t.equal(await round(), 1, 'one flag evaluated again: 1 looked at');
  want.unused -= 1;
  want.active += 1;
  exact('one flag active again');
  t.equal(await staleEvents(), want.unused + 1, 'turning active is no flag.stale');

  // The organization reloaded whole: every flag looked at, the counts unchanged.
  await snapshots.reload(orgId);
  t.equal(await round(), N, 'a whole reload: every flag looked at');
  exact('reloaded');
  t.equal(await round(), 0, 'idle');

  // The full read (once in FULL_READ_ROUNDS rounds: 60 hours at this interval) looks at the flags
  // whose usage or recorded status differ from what the tracker held, and only those. First f-2
  // turns unused again (its status runs out: every flag looked at), so that no status runs out
  // in the 60 hours.
  clock += 11_000;
  t.equal(await round(), N, 'f-2 ran out: every flag looked at');
  want.active -= 1;
  want.unused += 1;
  exact('f-2 unused');
  t.equal(await round(), 0, 'idle');
  clock += FULL_READ_ROUNDS * 3_600_000;
  t.equal(await round(), 0, 'a full read that finds nothing new looks at no flag');
  exact('full read');
  // A late report for f-3 (stamped before the window a round reads) and f-4's usage removed.
  await db.query(
    `insert into flag_variant_usage (org_id, flag_name, stage, variant, first_at, last_at) values ($1, 'f-3', 'development', 'on', $2, $2)`,
    [orgId, new Date(clock - 3_600_000)],
  );
  await db.query("delete from flag_variant_usage where org_id = $1 and flag_name = 'f-4'", [orgId]);
  outsideWrite(db);
  clock += 1000;
  t.equal(await round(), 0, 'neither is in what a round reads');
  clock += FULL_READ_ROUNDS * 3_600_000;
  t.equal(await round(), 2, 'the full read finds both: 2 looked at');
  want.unused -= 1;
  want.new += 1;
  exact('f-4 has no usage any more: new');
  t.equal(await round(), 0, 'idle');
});
