/**
 * Micro-bench of the rate limiter's hot path (docs/limits.md, "Rate limits"): `take` of an allowed
 * request on one of 10,000 keys (UUIDs, as key ids are), for the SharedRateLimiter the front uses
 * (a bucket table in a SharedArrayBuffer, one lookup and one Atomics lock per take, shared by every
 * front thread) against the per-thread Map of buckets it replaced (rebuilt here from the same
 * refill/secondsUntilToken, as the baseline). One thread, default clocks, CPU time (steadier than
 * wall time on a shared machine); interleaved rounds, the median of the per-round ratios with its spread.
 *
 *   npm run build && node dist/bench/rate-limiter.js [--iterations 2000000] [--rounds 5]
 */
import { randomUUID } from 'node:crypto';
import { SharedRateLimiter } from '../src/ratelimit/shared-limiter.js';
import { burst, refill, secondsUntilToken, type Bucket, type BucketKind } from '../src/ratelimit/token-bucket.js';
import { numberArg } from './argv.js';
import { median } from './harness.js';

const iterations = numberArg('iterations', 2_000_000);
const rounds = numberArg('rounds', 5);
const KEYS = 10_000;
const RATE = 1e9; // every take is admitted: the common path

/** The Map limiter before shared memory (its take, without eviction), as the baseline. */
class MapLimiter {
  private readonly buckets: Record<BucketKind, Map<string, Bucket>> = { eval: new Map(), mgmt: new Map() };
  take(kind: BucketKind, keyId: string): number {
    const nowMs = performance.now();
    const map = this.buckets[kind];
    let b = map.get(keyId);
    if (b === undefined) {
      b = { tokens: burst(RATE), updatedMs: nowMs };
      map.set(keyId, b);
    } else refill(b, nowMs, RATE, burst(RATE));
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return 0;
    }
    return secondsUntilToken(b.tokens, RATE);
  }
}

function main(): void {
  // Flat strings, as ids read from the database are (randomUUID builds a rope, slow to index).
  const ids = JSON.parse(JSON.stringify(Array.from({ length: KEYS }, () => randomUUID()))) as string[];
  const order = Array.from({ length: 4096 }, (_, i) => ids[(i * 7919) % KEYS]);
  const shared = SharedRateLimiter.create({ eval: RATE, mgmt: RATE });
  const map = new MapLimiter();
  for (const id of ids) {
    shared.take('eval', id);
    map.take('eval', id);
  }
  const time = (label: string, take: (kind: BucketKind, id: string) => number): number => {
    let refused = 0;
    for (let i = 0; i < 200_000; i++) refused += take('eval', order[i & 4095]); // warm-up
    const c0 = process.cpuUsage();
    for (let i = 0; i < iterations; i++) refused += take('eval', order[i & 4095]);
    const c = process.cpuUsage(c0);
    const ns = ((c.user + c.system) * 1000) / iterations;
    process.stdout.write(`${label.padEnd(24)} ${ns.toFixed(1)} ns CPU/take${refused ? ` (${refused} refused?)` : ''}\n`);
    return ns;
  };
  console.log(`rate-limiter micro-bench: ${KEYS} keys, ${iterations} takes a round, ${rounds} rounds, node ${process.version}`);
  const ratios: number[] = [];
  for (let r = 0; r < rounds; r++) {
    // Alternate which goes first, so neither always follows the other.
    const first = r % 2 === 0;
    const a = first ? time('Map (before)', (k, id) => map.take(k, id)) : NaN;
    const b = time('SharedRateLimiter', (k, id) => shared.take(k, id));
    const a2 = first ? a : time('Map (before)', (k, id) => map.take(k, id));
    ratios.push(b / a2);
  }
  const fmt = (x: number) => x.toFixed(2);
  console.log(`\nSharedRateLimiter / Map: median ×${fmt(median(ratios))} the CPU per take (rounds ${ratios.map(fmt).join(', ')}; min ${fmt(Math.min(...ratios))}, max ${fmt(Math.max(...ratios))})`);
}

main();
