/** A front thread's keys (src/auth/key-mirror.ts): how long a key taught by the main thread is served. */
import t from 'tap';
import { KeyMirror } from '../../../src/auth/key-mirror.js';
import type { ManagementKey } from '../../../src/domain/types.js';

const key: ManagementKey = {
  id: 'k1', orgId: 'org', name: 'k1', permissions: ['CanEvaluate'], application: null, environment: null, disabled: false, createdAt: '2026-01-01T00:00:00.000Z', rotatedAt: null,
};

function mirror(ttlMs: number) {
  const clock = { ms: 1_000 };
  const m = new KeyMirror(new Int32Array(new SharedArrayBuffer(4)), () => {}, ttlMs, () => clock.ms);
  return { m, clock };
}

t.test('a taught key is served until the end of its lifetime in the main thread\'s cache, not a lifetime of its own', async (t) => {
  const { m, clock } = mirror(60_000);
  m.learn('h1', key, 1_000 + 5_000); // the main thread's entry has 5 s left
  clock.ms = 1_000 + 4_999;
  t.equal(m.peek('h1'), key, 'served while the main thread\'s entry lives');
  clock.ms = 1_000 + 5_000;
  t.equal(m.peek('h1'), undefined, 'not past it: the main thread is asked again');
});

t.test('never longer than its own lifetime from when it was taught', async (t) => {
  const { m, clock } = mirror(1_000);
  m.learn('h1', key, Number.MAX_SAFE_INTEGER);
  clock.ms = 1_999;
  t.equal(m.peek('h1'), key);
  clock.ms = 2_000;
  t.equal(m.peek('h1'), undefined);
});

t.test('VEXIL_KEY_CACHE_TTL_MS=0: nothing is taught', async (t) => {
  const { m } = mirror(0);
  m.learn('h1', key, Number.MAX_SAFE_INTEGER);
  t.equal(m.peek('h1'), undefined);
});
