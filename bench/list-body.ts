/**
 * What the unpaged `GET /api/flags` costs the management actor after a one-flag write, step by
 * step, with no HTTP (docs/benchmarks.md, "Large organizations": the list after a write):
 *
 * - `boundedJson`: the whole list serialised (the route before src/features/flags/list-body.ts);
 * - `flagListBody`: the body assembled from the kept per-flag JSON, one flag changed since the last
 *   list (the route now);
 * - `copy`: one more copy of the body (what a kept list costs per repeat, into the piece slots);
 * - `brotli q1`: `compress(body, 'br')` (src/http/content-encoding.ts) of the new body, what a
 *   client that accepts br and not gzip gets, and what every client that accepts br got before
 *   the gzip list;
 * - `gzip 1`: `compress(body, 'gzip')` of the new body (the whole list gzip-coded in one go);
 * - `flagListGzip`: the gzip body from kept chunks (what a client that accepts gzip gets now),
 *   with the chunks and bytes it compressed again.
 *
 * Each round first replaces one flag with a new object (as a write does in the snapshot), then
 * times the steps, the two serialisers in alternating order; per step the median and the
 * range over the rounds, and the per-round ratio flagListBody / boundedJson. Wall time and the
 * process's CPU time (process.cpuUsage: V8's garbage collection helpers included). Also the
 * memory the kept fragments hold (run with --expose-gc for steadier figures).
 *
 *   npm run build && node --expose-gc dist/bench/list-body.js [--flags 100000] [--rounds 9]
 */
import type { Flag } from '../src/domain/types.js';
import { flagListBody, flagListGzip, lastGzipWork } from '../src/features/flags/list-body.js';
import { compress } from '../src/http/content-encoding.js';
import { boundedJson } from '../src/util/bounded-json.js';
import { numberArg } from './argv.js';
import { median } from './harness.js';

const flagCount = numberArg('flags', 100_000);
const rounds = numberArg('rounds', 9);
const BOUND = 256 * 1024 * 1024;
const gc = (globalThis as { gc?: () => void }).gc ?? (() => {});

const base = Date.parse('2026-11-28T00:00:00Z');
/**
 * A flag as bench/seed.ts seeds it (the large-org and isolation scenarios' flags), with times of
 * its own (spread over days), so that brotli does not meet 100,000 copies of one text.
 */
const flag = (i: number, description = 'benchmark flag'): Flag => {
  const created = new Date(base + ((i * 2_654_435_761) % 86_400_000) * 3).toISOString();
  const updated = new Date(Date.parse(created) + ((i * 40_503) % 3_600_000)).toISOString();
  return {
    name: `bench-flag-${i}`, project: 'default', type: 'boolean', description, tags: ['bench'], isArchived: false,
    variants: [{ key: 'on', value: true, valueType: 'boolean' }, { key: 'off', value: false, valueType: 'boolean' }],
    environments: ['development', 'staging', 'production'], dependencies: [], purpose: 'release', createdAt: created, updatedAt: updated,
  };
};
const list = Array.from({ length: flagCount }, (_, i) => flag(i));

interface Step { wall: number[]; cpu: number[] }
const steps = new Map<string, Step>();
function time<T>(name: string, fn: () => T): T {
  const c0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  const out = fn();
  const wall = Number(process.hrtime.bigint() - t0) / 1e6;
  const c = process.cpuUsage(c0);
  let s = steps.get(name);
  if (s === undefined) steps.set(name, (s = { wall: [], cpu: [] }));
  s.wall.push(wall);
  s.cpu.push((c.user + c.system) / 1000);
  return out;
}
const BEFORE = 'boundedJson (before)';
const NOW = 'flagListBody (one flag changed)';
const lastWall = (name: string): number => steps.get(name)!.wall.at(-1)!;
const range = (a: number[]) => `${Math.min(...a).toFixed(1)}–${Math.max(...a).toFixed(1)}`;
const mb = (n: number) => `${(n / 1e6).toFixed(1)} MB`;

gc();
const m0 = process.memoryUsage();
const first = time('first list (every flag serialised and kept)', () => flagListBody(list, BOUND));
gc();
const m1 = process.memoryUsage();
console.log(`${flagCount} flags, body ${mb(first.length)}; kept fragments: heap +${mb(m1.heapUsed - m0.heapUsed)}, ` +
  `array buffers +${mb(m1.arrayBuffers - m0.arrayBuffers)} (the body itself ${mb(first.length)} of that, still referenced)`);
const firstGzip = time('first gzip list (every chunk compressed and kept)', () => flagListGzip(list, BOUND)!);
const ratios: number[] = [];
let brotliBytes = 0;
let gzipBytes = 0;
const gzipWork: string[] = [];
for (let r = 0; r < rounds; r++) {
  const i = (r * 7919) % flagCount;
  list[i] = flag(i, `changed in round ${r}`); // a write: the flag's new object
  let body!: Buffer;
  const old = () => void time(BEFORE, () => boundedJson(list, BOUND));
  const now = () => void (body = time(NOW, () => flagListBody(list, BOUND)));
  gc();
  for (const step of r % 2 === 0 ? [old, now] : [now, old]) {
    step();
    gc();
  }
  ratios.push(lastWall(NOW) / lastWall(BEFORE));
  const target = Buffer.allocUnsafe(body.length);
  time('copy of the body', () => body.copy(target));
  gc();
  brotliBytes = time('brotli q1 of the new body', () => compress(body, 'br')).length;
  gc();
  gzipBytes = time('gzip 1 of the new body', () => compress(body, 'gzip')).length;
  gc();
  time('flagListGzip (one flag changed)', () => flagListGzip(list, BOUND));
  const w = lastGzipWork();
  gzipWork.push(`${w.made}/${w.chunks} chunks, ${(w.bytesCompressed / 1e3).toFixed(0)} KB`);
}
console.log(`brotli q1: ${mb(first.length)} to ${mb(brotliBytes)} (the seeded 100,000-flag organization: about 37 MB to 2 MB)`);
console.log(`gzip 1: ${mb(gzipBytes)}; flagListGzip: ${mb(firstGzip.length)}; compressed again per round: ${gzipWork.join('; ')}`);
console.log(`${rounds} rounds; per step: median ms (range), wall and process CPU`);
for (const [name, s] of steps) console.log(`  ${name.padEnd(46)} wall ${median(s.wall).toFixed(1)} (${range(s.wall)})  cpu ${median(s.cpu).toFixed(1)} (${range(s.cpu)})`);
console.log(`  flagListBody / boundedJson per round: median ${median(ratios).toFixed(3)} (${range(ratios.map((x) => x * 1000))} ‰)`);
