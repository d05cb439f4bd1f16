/**
 * KeyCache.remember (docs/cluster.md, "Management never starves"): a key this node's actor
 * created or rotated is held with the hash of its value, so its first lookup asks nothing; an
 * invalidation still drops it at once.
 */
import t from 'tap';
import { KeyCache } from '../../../src/auth/key-cache.js';
import type { ManagementKey } from '../../../src/domain/types.js';

const key = { id: 'k1', orgId: 'o1', name: 'fresh', permissions: ['CanEvaluate'], application: null, environment: null, disabled: false } as unknown as ManagementKey;

t.test('a remembered key is found without a load, and an invalidation drops it', async (t) => {
  let loads = 0;
  let now = 0;
  const cache = new KeyCache(async () => (loads++, null), { ttlMs: 60_000, now: () => now });
  cache.remember('h1', key);
  t.equal(await cache.lookup('h1'), key, 'found');
  t.equal(loads, 0, 'without asking the source of truth');
  t.same(cache.peekById('k1'), { key, hash: 'h1' }, 'by id too');
  cache.invalidateKey('k1');
  t.equal(await cache.lookup('h1'), null, 'after an invalidation it is looked up again');
  t.equal(loads, 1);
});

t.test('a remembered key lives as long as any cached key, then is checked again', async (t) => {
  let loads = 0;
  let now = 0;
  const cache = new KeyCache(async () => (loads++, key), { ttlMs: 1000, now: () => now });
  cache.remember('h1', key);
  now = 749;
  await cache.lookup('h1');
  t.equal(loads, 0, 'before its re-read window (the last quarter of a 1 s lifetime): no load');
  now = 750;
  await cache.lookup('h1');
  t.equal(loads, 1, 'in it: checked again, as any cached key');
});

t.test('with a lifetime of 0 nothing is held', async (t) => {
  let loads = 0;
  const cache = new KeyCache(async () => (loads++, key), { ttlMs: 0 });
  cache.remember('h1', key);
  await cache.lookup('h1');
  t.equal(loads, 1);
});
