/**
 * Micro-bench of the key cache's hot path (docs/limits.md, "Failed authentications"): `peek` of a
 * cached valid key, for Vexil's KeyCache (insertion-ordered Maps, known keys and unknown hashes
 * bounded apart) versus lru-cache (LRUCache with a TTL and max, as a drop-in), with 10 000 valid
 * keys held and 100 000 unknown hashes flooding in. Ratios only; the faster one is what
 * src/auth/key-cache.ts uses.
 *
 *   npm run build && node dist/bench/key-cache.js [--iterations 2000000]
 */
import { LRUCache } from 'lru-cache';
import { KeyCache } from '../src/auth/key-cache.js';
import { findKeyByHash } from '../src/features/keys/store.js';
import type { ManagementKey } from '../src/domain/types.js';
import type { Queryable } from '../src/storage/database.js';
import { numberArg } from './argv.js';

const iterations = numberArg('iterations', 2_000_000);
const VALID = 10_000;

const record = (i: number): ManagementKey => ({
  id: `id-${i}`, orgId: 'o1', name: `k${i}`, permissions: ['CanEvaluate'], application: 'default', environment: null,
  disabled: false, createdAt: '2026-01-01T00:00:00.000Z', rotatedAt: null,
} as unknown as ManagementKey);

// A database that knows the valid hashes (the cache fills through its real lookup path).
const rows = new Map<string, Record<string, unknown>>();
for (let i = 0; i < VALID; i++) {
  rows.set(`valid-${i}`, { id: `id-${i}`, org_id: 'o1', name: `k${i}`, permissions: ['CanEvaluate'], application: 'default', environment: null, disabled: false, created_at: '2026-01-01T00:00:00.000Z', rotated_at: null });
}
const db: Queryable = {
  async query<T>(_text: string, params?: unknown[]): Promise<T[]> {
    const r = rows.get(params![0] as string);
    return (r ? [r] : []) as T[];
  },
  async exec() {},
};

async function main(): Promise<void> {
  const vexil = new KeyCache((hash) => findKeyByHash(db, hash), { ttlMs: 60_000 });
  const lru = new LRUCache<string, ManagementKey | false>({ max: 100_000, ttl: 60_000 });
  for (let i = 0; i < VALID; i++) {
    await vexil.lookup(`valid-${i}`);
    lru.set(`valid-${i}`, record(i));
  }
  // The flood: unknown hashes, which in lru-cache share the one bound with the valid keys.
  for (let i = 0; i < 100_000; i++) {
    await vexil.lookup(`bad-${i}`);
    lru.set(`bad-${i}`, false);
  }
  const survivors = { vexil: 0, lru: 0 };
  for (let i = 0; i < VALID; i++) {
    if (vexil.peek(`valid-${i}`)) survivors.vexil++;
    if (lru.get(`valid-${i}`)) survivors.lru++;
  }
  for (let i = 0; i < VALID; i++) lru.set(`valid-${i}`, record(i)); // give lru-cache its keys back for the timing
  const hashes = Array.from({ length: 1024 }, (_, i) => `valid-${(i * 7919) % VALID}`);
  const time = (label: string, fn: (h: string) => unknown): number => {
    let hits = 0;
    for (let i = 0; i < 200_000; i++) if (fn(hashes[i & 1023])) hits++; // warm-up
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < iterations; i++) if (fn(hashes[i & 1023])) hits++;
    const ns = Number(process.hrtime.bigint() - t0) / iterations;
    process.stdout.write(`${label.padEnd(28)} ${ns.toFixed(1)} ns/peek (${hits} hits)\n`);
    return ns;
  };
  const rounds: { vexil: number; lru: number }[] = [];
  for (let r = 0; r < 3; r++) rounds.push({ vexil: time('KeyCache.peek', (h) => vexil.peek(h)), lru: time('LRUCache.get (ttl)', (h) => lru.get(h)) });
  const best = (k: 'vexil' | 'lru') => Math.min(...rounds.map((x) => x[k]));
  process.stdout.write(`\nvalid keys still cached after 100 000 unknown hashes: KeyCache ${survivors.vexil}/${VALID}, lru-cache (one bound of 100 000) ${survivors.lru}/${VALID}\n`);
  process.stdout.write(`best of 3: lru-cache / KeyCache = ${(best('lru') / best('vexil')).toFixed(2)}× the time per peek\n`);
}

void main();
