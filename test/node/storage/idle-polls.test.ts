/**
 * The background polls of an idle node (storage/poll-gate.ts; docs/cluster.md, "Management never
 * starves"): on the embedded PGlite, which no other process writes, the flag status tracker and the
 * webhook dispatcher run no statement while nothing on the node could have changed what they read;
 * on PostgreSQL (a database of kind `postgres`, where other nodes write) they read at every poll.
 * The real tracker and dispatcher on a real PGlite database, each statement counted.
 */
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { LocalBus } from '../../../src/cluster/bus.js';
import { loadConfig } from '../../../src/config.js';
import { writeSettings } from '../../../src/features/insights/store.js';
import { LifecycleTracker } from '../../../src/features/insights/tracker.js';
import { bootstrap } from '../../../src/features/organizations/bootstrap.js';
import { snapshotSource } from '../../../src/features/snapshot-source.js';
import { WebhookDispatcher } from '../../../src/features/webhooks/dispatcher.js';
import { wake } from '../../../src/features/webhooks/outbox.js';
import { EvalCounts } from '../../../src/ops/eval-counts.js';
import type { ActorRuntime } from '../../../src/runtime.js';
import { SnapshotRegistry } from '../../../src/snapshots/registry.js';
import type { Database } from '../../../src/storage/database.js';
import { openPGlite } from '../../../src/storage/pglite.js';
import { outsideWrite } from '../../../src/storage/poll-gate.js';
import { createLogger } from '../../../src/util/log.js';
import { pgliteCopy } from '../../helpers/node.js';

t.setTimeout(120_000);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** `db` seen as a database of `kind`, its statements counted (transactions' included). */
function counted(db: Database, kind: 'pglite' | 'postgres'): { db: Database; statements: () => number } {
  let n = 0;
  const wrap = <Q extends Pick<Database, 'query' | 'exec'>>(q: Q) => ({
    query: <T>(text: string, params?: unknown[]) => {
      n++;
      return q.query<T>(text, params);
    },
    exec: (script: string) => {
      n++;
      return q.exec(script);
    },
  });
  return {
    db: { kind, ...wrap(db), transaction: (fn) => db.transaction((tx) => fn(wrap(tx))), close: () => db.close() },
    statements: () => n,
  };
}

async function setup(t: Tap.Test, kind: 'pglite' | 'postgres', env: Record<string, string> = {}) {
  const dir = await pgliteCopy();
  const raw = await openPGlite(dir);
  t.teardown(async () => {
    await raw.close();
    rmSync(dir, { recursive: true, force: true });
  });
  await bootstrap(raw, randomBytes(32).toString('hex'));
  const orgId = (await raw.query<{ id: string }>("select id from organizations where name = 'default'"))[0].id;
  const c = counted(raw, kind);
  const config = loadConfig({ VEXIL_LOG_LEVEL: 'silent', ...env });
  const rt: ActorRuntime = { config, db: c.db, snapshots: new SnapshotRegistry(snapshotSource(c.db)), bus: new LocalBus(), log: createLogger('silent'), pool: null, evalCounts: new EvalCounts(), now: Date.now };
  return { rt, raw, orgId, statements: c.statements };
}

t.test('the status tracker: idle rounds on PGlite read nothing; a flush, a settings write or an outside write makes the next one read', async (t) => {
  const { rt, raw, orgId, statements } = await setup(t, 'pglite');
  // Rounds only when the test asks (an hour between timed ones).
  const tracker = new LifecycleTracker(rt, () => {}, 3_600_000);
  t.teardown(() => tracker.stop());
  await rt.snapshots.get(orgId);
  await tracker.start();
  await tracker.round();
  const idle = statements();
  for (let i = 0; i < 5; i++) await tracker.round();
  t.equal(statements() - idle, 0, 'five idle rounds: no statement');

  let before = statements();
  tracker.usageFlushed();
  await tracker.round();
  t.ok(statements() - before >= 2, `after a flush on this node the round reads (${statements() - before} statements)`);
  before = statements();
  await tracker.round();
  t.equal(statements() - before, 0, 'and the one after does not');

  // Settings written by SQL outside the services: seen once the tracker is told of it.
  await writeSettings(raw, orgId, { lifetimes: { release: null, experiment: null, operational: null, killSwitch: null, permission: null }, unusedAfter: 'PT10S' });
  outsideWrite(rt.db);
  before = statements();
  await tracker.round();
  t.ok(statements() - before >= 2, 'after an outside write the round reads');
  before = statements();
  tracker.settingsChanged();
  await tracker.round();
  t.ok(statements() - before >= 2, 'after a settings write on this node the round reads');
});

t.test('the status tracker on PostgreSQL: every round reads (other nodes write)', async (t) => {
  const { rt, orgId, statements } = await setup(t, 'postgres');
  const tracker = new LifecycleTracker(rt, () => {}, 3_600_000);
  t.teardown(() => tracker.stop());
  await rt.snapshots.get(orgId);
  await tracker.start();
  const before = statements();
  for (let i = 0; i < 5; i++) await tracker.round();
  t.ok(statements() - before >= 10, `five rounds, two reads each at least (${statements() - before} statements)`);
});

const POLL = { VEXIL_WEBHOOK_POLL_MS: '20' };

t.test('the webhook dispatcher: with nothing pending on PGlite its polls run no statement until something is queued', async (t) => {
  const { rt, statements } = await setup(t, 'pglite', POLL);
  const d = new WebhookDispatcher(rt);
  d.start();
  t.teardown(() => d.stop());
  await sleep(200);
  let before = statements();
  await sleep(400);
  t.equal(statements() - before, 0, 'about 20 polls in 400 ms: no statement');
  // A message queued by a commit on this node wakes it (outbox.ts): it looks.
  before = statements();
  wake();
  await sleep(100);
  t.ok(statements() - before >= 1, 'a wake: it looks again');
  await sleep(100);
  before = statements();
  await sleep(200);
  t.equal(statements() - before, 0, 'nothing found: idle again');
  // SQL from outside: the next poll looks.
  outsideWrite(rt.db);
  before = statements();
  await sleep(100);
  t.ok(statements() - before >= 1, 'an outside write: the next poll looks');
});

t.test('the webhook dispatcher on PostgreSQL: every poll looks', async (t) => {
  const { rt, statements } = await setup(t, 'postgres', POLL);
  const d = new WebhookDispatcher(rt);
  d.start();
  t.teardown(() => d.stop());
  await sleep(200);
  const before = statements();
  await sleep(400);
  t.ok(statements() - before >= 5, `polls every 20 ms: ${statements() - before} statements in 400 ms`);
});
