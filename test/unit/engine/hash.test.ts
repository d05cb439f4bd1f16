import t from 'tap';
import {
  murmur3,
  rolloutBucket,
  allocationBucket,
  BUCKETS,
  evaluateFlag,
} from '../../../src/engine/index.js';
import { flag, config, rule, org, req, snap, NOW } from '../../helpers/engine-fixtures.js';

/** Independent byte-oriented reference (TextEncoder for UTF-8), straight from the algorithm. */
function reference(input: string, seed: number): number {
  const b = new TextEncoder().encode(input);
  let h = seed >>> 0;
  const rotl = (x: number, r: number) => ((x << r) | (x >>> (32 - r))) >>> 0;
  const mul = (a: number, c: number) => Math.imul(a, c) >>> 0;
  const nb = Math.floor(b.length / 4);
  for (let i = 0; i < nb; i++) {
    let k = (b[4 * i] | (b[4 * i + 1] << 8) | (b[4 * i + 2] << 16) | (b[4 * i + 3] << 24)) >>> 0;
    k = mul(rotl(mul(k, 0xcc9e2d51), 15), 0x1b873593);
    h = (mul(rotl((h ^ k) >>> 0, 13), 5) + 0xe6546b64) >>> 0;
  }
  let k = 0;
  const tail = nb * 4;
  for (let j = b.length - tail - 1; j >= 0; j--) k = ((k << 8) | b[tail + j]) >>> 0;
  if (b.length & 3) h = (h ^ mul(rotl(mul(k, 0xcc9e2d51), 15), 0x1b873593)) >>> 0;
  h = (h ^ b.length) >>> 0;
  h = mul(h ^ (h >>> 16), 0x85ebca6b);
  h = mul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

t.test('murmur3 matches published MurmurHash3_x86_32 vectors', async (t) => {
  const vectors: [string, number, number][] = [
    ['', 0, 0],
    ['', 1, 0x514e28b7],
    ['', 0xffffffff, 0x81f16f39],
    ['\0\0\0\0', 0, 0x2362f9de],
    ['a', 0x9747b28c, 0x7fa09ea6],
    ['ab', 0x9747b28c, 0x74875592],
    ['abc', 0x9747b28c, 0xc84a62dd],
    ['abcd', 0x9747b28c, 0xf0478627],
    ['aaaa', 0x9747b28c, 0x5a97808a],
    ['abc', 0, 0xb3dd93fa],
    ['hello', 0, 0x248bfa47],
    ['Hello, world!', 1234, 0xfaf6cdb3],
    ['Hello, world!', 0x9747b28c, 0x24884cba],
    ['a'.repeat(256), 0x9747b28c, 0x37405bdc],
    ['abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq', 0, 0xee925b90],
    ['The quick brown fox jumps over the lazy dog', 0, 0x2e4ff723],
    ['The quick brown fox jumps over the lazy dog', 0x9747b28c, 0x2fa826cd],
    // Non-ASCII: the hash is over UTF-8 bytes (16 bytes here), not UTF-16 code units.
    ['ππππππππ', 0x9747b28c, 0xd58063c1],
  ];
  for (const [s, seed, want] of vectors) {
    t.equal(murmur3(s, seed), want, `murmur3(${JSON.stringify(s.slice(0, 20))}, 0x${seed.toString(16)})`);
  }
});

t.test('murmur3 is unsigned 32-bit and equals the byte reference on mixed strings', async (t) => {
  const samples = [
    'é', 'ascii then é', 'ééé', '日本語', '😀', 'x😀', 'xy😀', 'xyz😀z', '\u{10FFFF}',
    'lone \ud800 surrogate', 'tail \udc00', '\u0080', '\u07ff', '\u0800', '\uffff', 'abc\u00ffd',
  ];
  let seed = 7;
  for (let i = 0; i < 500; i++) {
    let s = '';
    const len = i % 23;
    for (let j = 0; j < len; j++) {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      const pick = seed % 10;
      s += pick < 6 ? String.fromCharCode(32 + (seed >>> 8) % 95) : pick < 8 ? String.fromCharCode(0x80 + (seed >>> 8) % 0x700) : pick < 9 ? '日' : '😀';
    }
    samples.push(s);
  }
  for (const s of samples) {
    for (const sd of [0, 0x5bd1e995, 0xffffffff]) {
      const h = murmur3(s, sd);
      if (h !== reference(s, sd)) {
        t.fail(`mismatch for ${JSON.stringify(s)} seed ${sd}`);
        return;
      }
      if (!(Number.isInteger(h) && h >= 0 && h <= 0xffffffff)) {
        t.fail(`not unsigned 32-bit: ${h}`);
        return;
      }
    }
  }
  t.pass(`${samples.length * 3} hashes equal the reference`);
  t.not(murmur3('é', 0), murmur3('\u00e9'.normalize('NFD'), 0), 'different UTF-8 bytes, different hash');
});

t.test('bucket formulas are pinned', async (t) => {
  t.equal(BUCKETS, 10000);
  for (const [f, u] of [['golden-flag', 'user-1'], ['checkout', 'ü-ser'], ['a', ''], ['flag.v2', 'x'.repeat(1000)]]) {
    t.equal(rolloutBucket(f, u), murmur3(`${f}:${u}`, 0) % 10000, `rollout ${f}/${u.slice(0, 10)}`);
    t.equal(allocationBucket(f, u), murmur3(`${f}:${u}`, 0x5bd1e995) % 10000, `allocation ${f}/${u.slice(0, 10)}`);
  }
  // The separator matters: ("ab", "c") and ("a", "bc") are different keys.
  t.not(rolloutBucket('ab', 'c'), rolloutBucket('a', 'bc'));
});

t.test('buckets equal murmur3 of the joined key whatever the names before (the remembered prefix)', async (t) => {
  // Names of every length modulo 4 (the flag name's unfinished block), non-ASCII names and users,
  // the two seeds interleaved, the same name again after others.
  const names = ['', 'a', 'ab', 'abc', 'abcd', 'bench-split', 'flag.v2', 'é', 'ab日', 'x😀', 'golden-flag', 'a'];
  const users = ['', 'u', 'us', 'use', 'user', 'user-12', 'user-123', 'José', 'ab日c', '😀x', 'x'.repeat(37), 'lone \ud800'];
  let n = 0;
  for (let round = 0; round < 2; round++) {
    for (const f of names) {
      for (const u of users) {
        const key = `${f}:${u}`;
        const r = rolloutBucket(f, u);
        const a = allocationBucket(f, u);
        if (r !== murmur3(key, 0) % 10000 || r !== reference(key, 0) % 10000) t.fail(`rollout ${JSON.stringify(key)}`);
        if (a !== murmur3(key, 0x5bd1e995) % 10000 || a !== reference(key, 0x5bd1e995) % 10000) t.fail(`allocation ${JSON.stringify(key)}`);
        // Another name in between, for one seed only.
        rolloutBucket(`${f}-other`, u);
        n++;
      }
    }
  }
  t.pass(`${n} keys, both buckets equal the reference`);
});

t.test('buckets cover 0..9999 and the two hashes are independent', async (t) => {
  let min = Infinity;
  let max = -Infinity;
  let same = 0;
  let lowBoth = 0;
  for (let i = 0; i < 10000; i++) {
    const r = rolloutBucket('dist-flag', `user-${i}`);
    const a = allocationBucket('dist-flag', `user-${i}`);
    min = Math.min(min, r, a);
    max = Math.max(max, r, a);
    if (r === a) same++;
    if (r < 5000 && a < 5000) lowBoth++;
  }
  t.ok(min >= 0 && min < 10, `min ${min}`);
  t.ok(max <= 9999 && max > 9989, `max ${max}`);
  t.ok(same < 20, `rollout and allocation bucket equal for ${same} users`);
  // Independent: P(both in lower half) = 25%.
  t.ok(Math.abs(lowBoth / 10000 - 0.25) < 0.015, `both in lower half: ${lowBoth}`);
});

t.test('10,000 users split within 1 point of a 25% rollout and 50/30/20 allocations', async (t) => {
  const f = flag({
    name: 'split-flag',
    variants: [
      { key: 'a', value: 'A', valueType: 'string' },
      { key: 'b', value: 'B', valueType: 'string' },
      { key: 'c', value: 'C', valueType: 'string' },
    ],
  });
  const allocs = [
    { variantKey: 'a', percentage: 50 },
    { variantKey: 'b', percentage: 30 },
    { variantKey: 'c', percentage: 20 },
  ];
  const rolled = snap(org(), [f], { 'split-flag': [config({ defaultVariantKey: 'a', rolloutPercentage: 25, rules: [rule('r', 1, { allocations: allocs })] })] });
  const full = snap(org(), [f], { 'split-flag': [config({ defaultVariantKey: 'a', rolloutPercentage: 100, rules: [rule('r', 1, { allocations: allocs })] })] });
  const cfR = rolled.flags.get('split-flag')!;
  const cfF = full.flags.get('split-flag')!;
  let inRollout = 0;
  let excluded = 0;
  const counts: Record<string, number> = { a: 0, b: 0, c: 0 };
  const inRolloutCounts: Record<string, number> = { a: 0, b: 0, c: 0 };
  for (let i = 0; i < 10000; i++) {
    const r = req({ userId: `user-${i}` });
    const e1 = evaluateFlag(rolled, cfR, r, NOW);
    if (e1.reason.code === 'rule_matched') {
      inRollout++;
      inRolloutCounts[e1.key as string]++;
    } else if (e1.reason.code === 'rollout_excluded') {
      excluded++;
    }
    const e2 = evaluateFlag(full, cfF, r, NOW);
    counts[e2.key as string]++;
  }
  t.equal(inRollout + excluded, 10000, 'every user is either rolled in or rollout_excluded');
  t.ok(Math.abs(inRollout / 100 - 25) <= 1, `rollout 25% -> ${inRollout / 100}%`);
  t.ok(Math.abs(counts.a / 100 - 50) <= 1, `a 50% -> ${counts.a / 100}%`);
  t.ok(Math.abs(counts.b / 100 - 30) <= 1, `b 30% -> ${counts.b / 100}%`);
  t.ok(Math.abs(counts.c / 100 - 20) <= 1, `c 20% -> ${counts.c / 100}%`);
  // Allocation uses its own hash: inside a 25% rollout the split is still about 50/30/20
  // (with the rollout hash every rolled-in user would land in 'a').
  t.ok(Math.abs((inRolloutCounts.a / inRollout) * 100 - 50) <= 3, `a within rollout ${inRolloutCounts.a}/${inRollout}`);
  t.ok(Math.abs((inRolloutCounts.c / inRollout) * 100 - 20) <= 3, `c within rollout ${inRolloutCounts.c}/${inRollout}`);
});
