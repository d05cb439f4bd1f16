/**
 * A gzip stream (RFC 1952) assembled from pieces compressed apart, so that a large body whose
 * pieces are kept compressed costs, when one piece changes, that piece's compression and a copy of
 * the compressed bytes, not the compression of the whole (features/flags/list-body.ts
 * `flagListGzip`: the unpaged flag list after a one-flag write).
 *
 * A piece is a raw deflate stream (RFC 1951) of its own, ended with a sync flush: its last block
 * is not final and ends on a byte boundary (the empty stored block 00 00 ff ff), so the next
 * piece's blocks can follow it directly. Separate deflate streams never refer back across their
 * border (each starts with an empty window), so a full flush, which also resets the window, would
 * add nothing. The body's last piece is compressed with Z_FINISH: its last block is final. The
 * member's header (10 bytes: no name, no time) comes first and its trailer (CRC-32 of the whole
 * and its length mod 2^32, little-endian) last; the CRC of the whole is combined from the pieces'
 * CRCs and lengths (`crc32Combine`), so no byte is read twice.
 *
 * No I/O: compression is zlib's, in the calling thread.
 */
import { constants, crc32, deflateRawSync } from 'node:zlib';

/** A piece of a body: its raw deflate bytes, the CRC-32 of its bytes and their number. */
export interface GzipSegment {
  readonly deflated: Buffer;
  readonly crc: number;
  readonly length: number;
}

/** The fastest level: the pieces are made per request (and kept), speed matters more than size. */
const LEVEL = 1;

/** `bytes` as an exact-size copy: zlib's answer is a view of its 16 KiB output buffer. */
function exact(b: Buffer): Buffer {
  const out = Buffer.allocUnsafeSlow(b.length);
  b.copy(out);
  return out;
}

/** `bytes` compressed as a piece, ended with `flush` (Z_SYNC_FLUSH or Z_FINISH). */
function segment(bytes: Uint8Array, flush: number): GzipSegment {
  const deflated = deflateRawSync(bytes, { level: LEVEL, finishFlush: flush });
  return { deflated: exact(deflated), crc: crc32(bytes), length: bytes.length };
}

/** `bytes` as a piece that other pieces may follow (sync flush; see the file's comment). */
export const deflateSegment = (bytes: Uint8Array): GzipSegment => segment(bytes, constants.Z_SYNC_FLUSH);

/** `bytes` as a body's last piece (final block). */
export const finalSegment = (bytes: Uint8Array): GzipSegment => segment(bytes, constants.Z_FINISH);

/** ID1 ID2, CM = deflate, FLG = 0, MTIME = 0, XFL = 4 (fastest), OS = 255 (unknown). */
const HEADER = Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 4, 0xff]);

/**
 * The gzip member of the concatenation of `segments`' bytes and then `last`'s: `last` must be a
 * `finalSegment`, the others `deflateSegment`s. One allocation, of the compressed size.
 */
export function gzipFromSegments(segments: readonly GzipSegment[], last: GzipSegment): Buffer {
  let size = HEADER.length + last.deflated.length + 8;
  for (const s of segments) size += s.deflated.length;
  const out = Buffer.allocUnsafe(size);
  HEADER.copy(out, 0);
  let at = HEADER.length;
  let crc = 0;
  let length = 0; // mod 2^32 (ISIZE), kept exact below 2^53
  for (const s of [...segments, last]) {
    s.deflated.copy(out, at);
    at += s.deflated.length;
    crc = crc32Combine(crc, s.crc, s.length);
    length += s.length;
  }
  out.writeUInt32LE(crc, at);
  out.writeUInt32LE(length % 2 ** 32, at + 4);
  return out;
}

// CRC-32 combination, as zlib's crc32_combine (crc32.c): the CRC of A then B is the CRC of A
// multiplied by x^(8·|B|) modulo the CRC polynomial, plus the CRC of B. Polynomials are 32-bit
// words, reflected: the top bit is x^0.

const POLY = 0xedb88320;

/** a·b modulo the CRC polynomial. */
function multmodp(a: number, b: number): number {
  let m = 0x80000000;
  let p = 0;
  for (;;) {
    if ((a & m) !== 0) {
      p ^= b;
      if ((a & (m - 1)) === 0) break;
    }
    m >>>= 1;
    b = (b & 1) !== 0 ? (b >>> 1) ^ POLY : b >>> 1;
  }
  return p >>> 0;
}

/** X2N[k] = x^(2^k) modulo the CRC polynomial. */
const X2N: number[] = (() => {
  const t = [0x40000000]; // x^1
  for (let k = 1; k < 32; k++) t.push(multmodp(t[k - 1], t[k - 1]));
  return t;
})();

/** x^(n·2^k) modulo the CRC polynomial, for an integer n >= 0 (below 2^53). */
function x2nmodp(n: number, k: number): number {
  let p = 0x80000000; // x^0
  while (n > 0) {
    if (n % 2 === 1) p = multmodp(X2N[k & 31], p);
    n = Math.floor(n / 2);
    k++;
  }
  return p;
}

/** The CRC-32 of A then B, from A's CRC, B's CRC and B's length in bytes. */
export function crc32Combine(crc1: number, crc2: number, len2: number): number {
  if (!Number.isSafeInteger(len2) || len2 < 0) throw new RangeError(`crc32Combine: length ${len2}`);
  return (multmodp(x2nmodp(len2, 3), crc1 >>> 0) ^ (crc2 >>> 0)) >>> 0;
}
