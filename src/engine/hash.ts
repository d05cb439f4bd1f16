/**
 * Bucketing hash: MurmurHash3 x86 32-bit over the UTF-8 bytes of a string.
 *
 *   rolloutBucket(flag, user)    = murmur3(`${flag}:${user}`, 0)          % 10000
 *   allocationBucket(flag, user) = murmur3(`${flag}:${user}`, 0x5bd1e995) % 10000
 *
 * The result is identical on every node and across versions (docs/evaluation.md pins the formula;
 * test/unit/engine/golden/buckets.json pins 200 concrete values). Pure: no I/O, no Buffer; the only
 * state is a scratch buffer and the hash state of the last flag name per seed (single-threaded).
 * Lone UTF-16 surrogates are encoded as U+FFFD (EF BF BD), like TextEncoder and Buffer do.
 */

export const BUCKETS = 10000;
/** Seed of the rollout bucket. */
export const ROLLOUT_SEED = 0;
/** Seed of the allocation bucket (independent of the rollout bucket). */
export const ALLOCATION_SEED = 0x5bd1e995;

const C1 = 0xcc9e2d51;
const C2 = 0x1b873593;

/** Reusable scratch buffer for UTF-8 bytes; grows, never shrinks. Single-threaded, no re-entrancy. */
let scratch = new Uint8Array(512);

function ensureScratch(bytes: number): void {
  if (scratch.length < bytes) {
    let n = scratch.length * 2;
    while (n < bytes) n *= 2;
    scratch = new Uint8Array(n);
  }
}

/** Writes the UTF-8 encoding of `s` into scratch at `pos` (capacity already ensured). Returns the end. */
function writeUtf8(s: string, pos: number): number {
  const buf = scratch;
  const n = s.length;
  for (let i = 0; i < n; i++) {
    let c = s.charCodeAt(i);
    if (c < 0x80) {
      buf[pos++] = c;
    } else if (c < 0x800) {
      buf[pos++] = 0xc0 | (c >> 6);
      buf[pos++] = 0x80 | (c & 0x3f);
    } else if (c >= 0xd800 && c <= 0xdfff) {
      // Surrogate: a valid pair becomes one 4-byte sequence, a lone one U+FFFD.
      if (c <= 0xdbff && i + 1 < n) {
        const d = s.charCodeAt(i + 1);
        if (d >= 0xdc00 && d <= 0xdfff) {
          i++;
          c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
          buf[pos++] = 0xf0 | (c >> 18);
          buf[pos++] = 0x80 | ((c >> 12) & 0x3f);
          buf[pos++] = 0x80 | ((c >> 6) & 0x3f);
          buf[pos++] = 0x80 | (c & 0x3f);
          continue;
        }
      }
      buf[pos++] = 0xef;
      buf[pos++] = 0xbf;
      buf[pos++] = 0xbd;
    } else {
      buf[pos++] = 0xe0 | (c >> 12);
      buf[pos++] = 0x80 | ((c >> 6) & 0x3f);
      buf[pos++] = 0x80 | (c & 0x3f);
    }
  }
  return pos;
}

/** murmur3 x86_32 over scratch[0..len). */
function hashScratch(len: number, seed: number): number {
  const buf = scratch;
  let h = seed | 0;
  const blocks = len & ~3;
  let i = 0;
  for (; i < blocks; i += 4) {
    h = mixBlock(h, buf[i] | (buf[i + 1] << 8) | (buf[i + 2] << 16) | (buf[i + 3] << 24));
  }
  const rem = len & 3;
  if (rem !== 0) {
    let k = buf[i];
    if (rem > 1) k |= buf[i + 1] << 8;
    if (rem > 2) k |= buf[i + 2] << 16;
    h ^= scramble(k);
  }
  return fmix(h, len);
}

function fmix(h: number, len: number): number {
  h ^= len;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

function murmur3Utf8(input: string, seed: number): number {
  ensureScratch(input.length * 3);
  return hashScratch(writeUtf8(input, 0), seed);
}

/**
 * MurmurHash3 x86 32-bit of the UTF-8 bytes of `input`, unsigned. ASCII strings are hashed straight
 * from their char codes (no buffer); the first non-ASCII char switches to the UTF-8 path.
 */
export function murmur3(input: string, seed: number): number {
  const len = input.length;
  let h = seed | 0;
  const blocks = len & ~3;
  let i = 0;
  for (; i < blocks; i += 4) {
    const c0 = input.charCodeAt(i);
    const c1 = input.charCodeAt(i + 1);
    const c2 = input.charCodeAt(i + 2);
    const c3 = input.charCodeAt(i + 3);
    if ((c0 | c1 | c2 | c3) >= 0x80) return murmur3Utf8(input, seed);
    h = mixBlock(h, c0 | (c1 << 8) | (c2 << 16) | (c3 << 24));
  }
  const rem = len & 3;
  if (rem !== 0) {
    const t0 = input.charCodeAt(i);
    const t1 = rem > 1 ? input.charCodeAt(i + 1) : 0;
    const t2 = rem > 2 ? input.charCodeAt(i + 2) : 0;
    if ((t0 | t1 | t2) >= 0x80) return murmur3Utf8(input, seed);
    h ^= scramble(t0 | (t1 << 8) | (t2 << 16));
  }
  return fmix(h, len);
}

/** MurmurHash3's scramble of one (possibly partial) 4-byte block. Small enough for V8 to inline. */
function scramble(k: number): number {
  k = Math.imul(k, C1);
  k = (k << 15) | (k >>> 17);
  return Math.imul(k, C2);
}

/** One full 4-byte block into the running hash. */
function mixBlock(h: number, k: number): number {
  h ^= scramble(k);
  h = (h << 13) | (h >>> 19);
  return (Math.imul(h, 5) + 0xe6546b64) | 0;
}

/**
 * The murmur3 state after the bytes of `${name}:` for one seed: the running hash, the bytes of the
 * unfinished block and their count. One per seed, remembered for the last flag name hashed, so that
 * evaluations of one flag for many users hash only the userId.
 */
interface Prefix {
  readonly seed: number;
  name: string | null;
  h: number;
  k: number;
  n: number;
}

const rolloutPrefix: Prefix = { seed: ROLLOUT_SEED, name: null, h: 0, k: 0, n: 0 };
const allocationPrefix: Prefix = { seed: ALLOCATION_SEED, name: null, h: 0, k: 0, n: 0 };

/** Sets `p` to the state after `${flagName}:`; false (and `p` unchanged) when the name is not ASCII. */
function setPrefix(p: Prefix, flagName: string): boolean {
  let h = p.seed | 0;
  let k = 0;
  let n = 0; // bytes in k
  const la = flagName.length;
  for (let i = 0; i < la; i++) {
    const c = flagName.charCodeAt(i);
    if (c >= 0x80) return false;
    k |= c << (n << 3);
    if (++n === 4) {
      h = mixBlock(h, k);
      k = 0;
      n = 0;
    }
  }
  k |= 0x3a << (n << 3); // ':'
  if (++n === 4) {
    h = mixBlock(h, k);
    k = 0;
    n = 0;
  }
  p.name = flagName;
  p.h = h;
  p.k = k;
  p.n = n;
  return true;
}

/**
 * murmur3 of `${flagName}:${userId}` without building the concatenated string: the flag name's
 * part comes from `p` (computed again only when the name changes), the userId's ASCII chars are
 * streamed straight from their char codes, four at a time once the pending block is full; anything
 * else goes through the UTF-8 scratch buffer.
 */
function keyHash(flagName: string, userId: string, p: Prefix): number {
  if (p.name !== flagName && !setPrefix(p, flagName)) return keyHashUtf8(flagName, userId, p.seed);
  let h = p.h;
  let k = p.k;
  let n = p.n;
  const lb = userId.length;
  let i = 0;
  // Complete the block the flag name left unfinished.
  for (; n !== 0 && i < lb; i++) {
    const c = userId.charCodeAt(i);
    if (c >= 0x80) return keyHashUtf8(flagName, userId, p.seed);
    k |= c << (n << 3);
    if (++n === 4) {
      h = mixBlock(h, k);
      k = 0;
      n = 0;
    }
  }
  const blocks = i + ((lb - i) & ~3);
  for (; i < blocks; i += 4) {
    const c0 = userId.charCodeAt(i);
    const c1 = userId.charCodeAt(i + 1);
    const c2 = userId.charCodeAt(i + 2);
    const c3 = userId.charCodeAt(i + 3);
    if ((c0 | c1 | c2 | c3) >= 0x80) return keyHashUtf8(flagName, userId, p.seed);
    h = mixBlock(h, c0 | (c1 << 8) | (c2 << 16) | (c3 << 24));
  }
  for (; i < lb; i++) {
    const c = userId.charCodeAt(i);
    if (c >= 0x80) return keyHashUtf8(flagName, userId, p.seed);
    k |= c << (n << 3);
    n++;
  }
  if (n !== 0) h ^= scramble(k);
  return fmix(h, flagName.length + 1 + lb);
}

function keyHashUtf8(flagName: string, userId: string, seed: number): number {
  ensureScratch((flagName.length + userId.length) * 3 + 1);
  let pos = writeUtf8(flagName, 0);
  scratch[pos++] = 0x3a; // ':'
  pos = writeUtf8(userId, pos);
  return hashScratch(pos, seed);
}

/** Rollout bucket 0..9999: murmur3(`${flagName}:${userId}`, 0) % 10000. */
export function rolloutBucket(flagName: string, userId: string): number {
  return keyHash(flagName, userId, rolloutPrefix) % BUCKETS;
}

/** Allocation bucket 0..9999, independent of the rollout bucket: murmur3(`${flagName}:${userId}`, 0x5bd1e995) % 10000. */
export function allocationBucket(flagName: string, userId: string): number {
  return keyHash(flagName, userId, allocationPrefix) % BUCKETS;
}
