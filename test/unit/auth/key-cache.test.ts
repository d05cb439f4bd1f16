/** The 60-second key cache (docs/api.md, "Keys") with an injected clock and a counting fake database. */
import t from 'tap';
import { KeyCache, REFRESH_AHEAD_MS } from '../../../src/auth/key-cache.js';
import { VexilError } from '../../../src/domain/errors.js';
import { findKeyByHash } from '../../../src/features/keys/store.js';
import type { Queryable } from '../../../src/storage/database.js';

interface Row {
  id: string;
  org_id: string;
  name: string;
  permissions: string[];
  application: string | null;
  environment: string | null;
  disabled: boolean;
  created_at: string;
  rotated_at: string | null;
}

function fakeDb() {
  const rows = new Map<string, Row>();
  let queries = 0;
  let gate: Promise<void> | null = null;
  let down = false;
  const db: Queryable = {
    async query<T>(text: string, params?: unknown[]): Promise<T[]> {
      queries++;
      if (down) throw new VexilError('UNAVAILABLE', 'The database is unavailable');
      if (!/from management_keys where key_hash = \$1/.test(text)) throw new Error('unexpected query ' + text);
      const hash = params![0] as string;
      const snapshot = rows.get(hash); // read at query time, like a database would
      const copy = snapshot ? { ...snapshot } : undefined;
      if (gate) await gate;
      return (copy ? [copy] : []) as T[];
    },
    async exec() {},
  };
  const row = (id: string, extra: Partial<Row> = {}): Row => ({
    id, org_id: 'org', name: id, permissions: ['CanRead'], application: null, environment: null, disabled: false,
    created_at: '2026-01-01T00:00:00.000Z', rotated_at: null, ...extra,
  });
  return {
    db,
    rows,
    row,
    count: () => queries,
    /** The database stops (or starts) answering: every query fails with UNAVAILABLE. */
    setDown(d: boolean) {
      down = d;
    },
    hold() {
      let release!: () => void;
      gate = new Promise((r) => (release = r));
      return () => { gate = null; release(); };
    },
  };
}

/** Lets a re-read started in the background answer (the fake database answers within a turn). */
const settle = () => new Promise((r) => setImmediate(r));

function cache(ttlMs = 60_000, maxEntries?: number, staleMaxMs?: number) {
  const f = fakeDb();
  const clock = { ms: 0 };
  const c = new KeyCache((hash) => findKeyByHash(f.db, hash), { ttlMs, now: () => clock.ms, maxEntries, staleMaxMs });
  return { f, c, clock };
}

t.test('a looked-up key is served from memory for the TTL; one in use is re-read in its last REFRESH_AHEAD_MS', async (t) => {
  const { f, c, clock } = cache();
  f.rows.set('h1', f.row('k1'));
  t.equal(c.peek('h1'), undefined, 'nothing cached yet');
  const k = await c.lookup('h1');
  t.match(k, { id: 'k1', orgId: 'org', permissions: ['CanRead'], disabled: false, rotatedAt: null });
  t.equal(f.count(), 1);
  // The stored key changes behind the cache's back (another node disabled it, bus down).
  f.rows.set('h1', f.row('k1', { disabled: true }));
  const windowAt = 60_000 - REFRESH_AHEAD_MS;
  clock.ms = windowAt - 1;
  t.equal(c.peek('h1'), k, 'cached before the re-read window');
  t.same(c.fresh('h1'), { key: k, untilMs: windowAt }, 'fresh() answers it with the window\'s start (what a front thread may serve it until)');
  t.equal((await c.lookup('h1'))?.disabled, false, 'the stored change is not seen yet');
  t.equal(f.count(), 1, 'no database query before the window');
  clock.ms = windowAt;
  t.equal(c.fresh('h1'), undefined, 'in the window fresh() answers nothing: no thread is taught it now');
  t.equal(c.peek('h1'), k, 'the first request in the window is served the cached record…');
  t.equal(f.count(), 2, '…and starts the re-read');
  t.equal((await c.lookup('h1'))?.disabled, false, 'served (without waiting) while the re-read runs');
  t.equal(f.count(), 2, 'one re-read, not one per request');
  await settle();
  t.equal(c.peek('h1')?.disabled, true, 'from the re-read\'s answer on, what it found');
  t.equal(f.count(), 2);
  // The answer started a new lifetime: no query until its own window.
  clock.ms = windowAt + 60_000 - REFRESH_AHEAD_MS - 1;
  t.equal(c.peek('h1')?.disabled, true);
  t.equal(f.count(), 2, 'the re-read renewed the lifetime');
});

t.test('never served past its lifetime without a re-read (CONTRACT 4: at the latest after the cache lifetime)', async (t) => {
  const { f, c, clock } = cache();
  f.rows.set('h1', f.row('k1'));
  await c.lookup('h1');
  // Deleted behind the cache's back (bus down): the window's re-read finds nothing and the record goes.
  f.rows.delete('h1');
  clock.ms = 60_000 - 1;
  t.equal(c.peek('h1')?.id, 'k1', 'served in the window while the re-read runs');
  await settle();
  t.equal(c.peek('h1'), null, 'the re-read found no key: unknown from then on');
  t.notOk(c.known('h1'), 'and no record of it is held');

  // A re-read held back (the actor busy, a slow database): served until the lifetime ends…
  const other = cache();
  other.f.rows.set('h2', other.f.row('k2'));
  await other.c.lookup('h2');
  other.f.rows.set('h2', other.f.row('k2', { disabled: true }));
  const release = other.f.hold();
  other.clock.ms = 60_000 - REFRESH_AHEAD_MS;
  t.equal(other.c.peek('h2')?.disabled, false, 'served while the held re-read runs');
  other.clock.ms = 60_000 - 1;
  t.equal(other.c.peek('h2')?.disabled, false, 'up to the end of its lifetime');
  // …and not a millisecond past it: then requests wait for the re-read.
  other.clock.ms = 60_000;
  t.equal(other.c.peek('h2'), undefined, 'past its lifetime, peek answers nothing');
  const waiting = other.c.lookup('h2');
  release();
  t.equal((await waiting)?.disabled, true, 'and the lookup waits for the re-read');
  t.equal(other.f.count(), 2, 'the re-read in flight was joined, not repeated');
});

t.test('an entry not used in its window is not re-read: the next request waits for the database', async (t) => {
  const { f, c, clock } = cache();
  f.rows.set('h1', f.row('k1'));
  await c.lookup('h1');
  clock.ms = 60_000;
  t.equal(c.peek('h1'), undefined);
  t.equal(f.count(), 1, 'peek past the lifetime starts nothing');
  t.equal((await c.lookup('h1'))?.id, 'k1');
  t.equal(f.count(), 2);
});

t.test('a short lifetime: the window is its last quarter', async (t) => {
  const { f, c, clock } = cache(400);
  f.rows.set('h1', f.row('k1'));
  await c.lookup('h1');
  clock.ms = 299;
  c.peek('h1');
  t.equal(f.count(), 1, 'before the last quarter, no re-read');
  clock.ms = 300;
  c.peek('h1');
  t.equal(f.count(), 2, 'in it, the re-read');
});

t.test('unknown hashes are cached as null, for the TTL', async (t) => {
  const { f, c, clock } = cache();
  t.equal(await c.lookup('nope'), null);
  t.equal(c.peek('nope'), null, 'negative entry');
  await c.lookup('nope');
  t.equal(f.count(), 1, 'a flood of the same bad key reaches the database once');
  clock.ms = 60_000;
  t.equal(c.peek('nope'), undefined, 'negative entries expire too');
});

t.test('invalidateKey forgets a key at once; unknown ids are ignored', async (t) => {
  const { f, c } = cache();
  f.rows.set('h1', f.row('k1'));
  f.rows.set('h2', f.row('k2'));
  await c.lookup('h1');
  await c.lookup('h2');
  f.rows.set('h1', f.row('k1', { disabled: true }));
  c.invalidateKey('k1');
  t.equal(c.peek('h1'), undefined, 'k1 dropped');
  t.equal((await c.lookup('h1'))?.disabled, true, 'the next lookup sees the database');
  t.equal(c.peek('h2')?.id, 'k2', 'k2 untouched');
  c.invalidateKey('no-such-id');
  t.equal(c.peek('h2')?.id, 'k2');
  // Rotation: the old hash disappears from the database; after invalidation it is unknown.
  f.rows.delete('h2');
  f.rows.set('h2new', f.row('k2'));
  c.invalidateKey('k2');
  t.equal(await c.lookup('h2'), null, 'old value unknown after rotation');
  t.equal((await c.lookup('h2new'))?.id, 'k2', 'new value resolves to the same key');
  c.clear();
  t.equal(c.peek('h2new'), undefined, 'clear empties the cache');
});

t.test('concurrent lookups of one hash share one query', async (t) => {
  const { f, c } = cache();
  f.rows.set('h1', f.row('k1'));
  const release = f.hold();
  const p = Promise.all([c.lookup('h1'), c.lookup('h1'), c.lookup('h1')]);
  release();
  const [a, b, d] = await p;
  t.equal(f.count(), 1);
  t.equal(a, b);
  t.equal(b, d);
});

t.test('an invalidation during a lookup in flight is not undone by its late answer', async (t) => {
  const { f, c } = cache();
  f.rows.set('h1', f.row('k1'));
  const release = f.hold();
  const inflight = c.lookup('h1'); // reads the enabled row, answer delayed
  await new Promise((r) => setImmediate(r));
  // Meanwhile the key is disabled and invalidated (the disable request commits and answers).
  f.rows.set('h1', f.row('k1', { disabled: true }));
  c.invalidateKey('k1');
  release();
  t.equal((await inflight)?.disabled, false, 'the in-flight request itself may still see the old state');
  t.equal(c.peek('h1'), undefined, 'but the stale record is not cached for 60 s');
  t.equal((await c.lookup('h1'))?.disabled, true, 'the next request sees the disabled key');
});

t.test('TTL 0 disables caching; the entry count is bounded', async (t) => {
  const off = cache(0);
  off.f.rows.set('h1', off.f.row('k1'));
  await off.c.lookup('h1');
  await off.c.lookup('h1');
  t.equal(off.f.count(), 2, 'every lookup asks the database');
  t.equal(off.c.peek('h1'), undefined);

  const small = cache(60_000, 2);
  for (const h of ['a', 'b', 'c']) {
    small.f.rows.set(h, small.f.row('id-' + h));
    await small.c.lookup(h);
  }
  t.equal(small.c.peek('a'), undefined, 'the oldest entry was evicted');
  t.equal(small.c.peek('b')?.id, 'id-b');
  t.equal(small.c.peek('c')?.id, 'id-c');
  small.f.rows.set('a', small.f.row('id-a', { disabled: true }));
  small.c.invalidateKey('id-a'); // harmless for an evicted entry
  t.equal((await small.c.lookup('a'))?.disabled, true);
});

t.test('known keys and unknown hashes are bounded separately: a flood of bad keys evicts no real key', async (t) => {
  const { f, c } = cache(60_000, 2);
  for (const h of ['good1', 'good2']) {
    f.rows.set(h, f.row('id-' + h));
    await c.lookup(h);
  }
  for (let i = 0; i < 50; i++) t.equal(await c.lookup(`bad${i}`), null);
  t.same(c.sizes, { known: 2, unknown: 2 }, 'each side holds at most its bound');
  const before = f.count();
  t.equal(c.peek('good1')?.id, 'id-good1', 'the first real key is still cached');
  t.equal((await c.lookup('good2'))?.id, 'id-good2');
  t.equal(f.count(), before, 'no database query for them');
  t.equal(c.peek('bad49'), null, 'the newest unknown hash is cached');
  t.equal(c.peek('bad0'), undefined, 'the oldest unknown hash was evicted');
  t.ok(c.known('good1') && !c.known('bad49'), 'known() is for authenticated keys only');
  c.invalidateOrg('org');
  t.same(c.sizes.known, 0, "invalidateOrg drops the organization's keys");
});

t.test('a key the database cannot re-check is served VEXIL_KEY_STALE_MAX_MS past its lifetime, then 503', async (t) => {
  const { f, c, clock } = cache(60_000, undefined, 300_000);
  f.rows.set('h1', f.row('k1'));
  await c.lookup('h1');
  t.equal(await c.lookup('unknown-hash'), null, 'an unknown hash, cached');
  f.setDown(true);
  clock.ms = 60_000 + 299_999;
  t.equal((await c.lookup('h1'))?.id, 'k1', 'just before lifetime + stale bound: the known key still serves');
  t.equal(await c.lookup('unknown-hash'), null, 'and the unknown hash stays unknown');
  clock.ms = 60_000 + 300_001;
  await t.rejects(c.lookup('h1'), { code: 'UNAVAILABLE' }, 'past it: the database\'s 503');
  await t.rejects(c.lookup('unknown-hash'), { code: 'UNAVAILABLE' }, 'for the unknown hash too');
  await t.rejects(c.lookup('never-seen'), { code: 'UNAVAILABLE' }, 'a hash never seen: 503 at once');
  f.setDown(false);
  t.equal((await c.lookup('h1'))?.id, 'k1', 'served again once the database answers');
  t.equal(c.peek('h1')?.id, 'k1', 'and cached afresh');
});

t.test('VEXIL_KEY_STALE_MAX_MS=0: an expired key is never served without a re-check', async (t) => {
  const { f, c, clock } = cache(60_000, undefined, 0);
  f.rows.set('h1', f.row('k1'));
  await c.lookup('h1');
  f.setDown(true);
  clock.ms = 60_001;
  await t.rejects(c.lookup('h1'), { code: 'UNAVAILABLE' });
});
