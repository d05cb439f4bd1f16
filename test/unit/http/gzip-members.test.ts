/**
 * A gzip member assembled from pieces compressed apart (src/http/gzip-members.ts): any split of any
 * bytes gunzips to exactly their concatenation (property-tested with fast-check, empty pieces
 * included), and crc32Combine is zlib's CRC-32 of the concatenation, lengths past 2^32 included.
 */
import { constants, crc32, deflateRawSync, gunzipSync } from 'node:zlib';
import fc from 'fast-check';
import t from 'tap';
import { crc32Combine, deflateSegment, finalSegment, gzipFromSegments } from '../../../src/http/gzip-members.js';

/** Bytes cut at sorted points into pieces (empty ones when points repeat). */
const split = (bytes: Uint8Array, cuts: number[]): Buffer[] => {
  const at = [0, ...cuts.map((c) => c % (bytes.length + 1)).sort((a, b) => a - b), bytes.length];
  return at.slice(1).map((end, i) => Buffer.from(bytes.subarray(at[i], end)));
};

/** Bytes that compress (repeats) as well as bytes that do not. */
const bytes = fc.oneof(
  fc.uint8Array({ maxLength: 3000 }),
  fc.array(fc.string({ unit: 'grapheme', maxLength: 30 }), { maxLength: 200 }).map((a) => new Uint8Array(Buffer.from(a.join(','), 'utf8'))),
);

t.test('any split gunzips to the concatenation', async (t) => {
  fc.assert(
    fc.property(bytes, fc.array(fc.nat(), { maxLength: 8 }), (b, cuts) => {
      const pieces = split(b, cuts);
      const last = pieces.pop()!;
      const gz = gzipFromSegments(pieces.map(deflateSegment), finalSegment(last));
      return gunzipSync(gz).equals(Buffer.from(b));
    }),
    { numRuns: 1000 },
  );
  t.equal(gunzipSync(gzipFromSegments([], finalSegment(new Uint8Array(0)))).length, 0, 'nothing at all');
  const empties = [deflateSegment(new Uint8Array(0)), deflateSegment(Buffer.from('[')), deflateSegment(new Uint8Array(0))];
  t.equal(gunzipSync(gzipFromSegments(empties, finalSegment(Buffer.from(']')))).toString(), '[]', 'empty pieces between');
  // A piece larger than zlib's output buffer (several blocks) and a window's worth of back-references.
  const big = Buffer.from('abcdefghij'.repeat(20_000) + Array.from({ length: 5000 }, (_, i) => i).join(','));
  const parts = [big.subarray(0, 150_000), big.subarray(150_000, 150_001), big.subarray(150_001)];
  t.ok(gunzipSync(gzipFromSegments(parts.slice(0, 2).map(deflateSegment), finalSegment(parts[2]))).equals(big), 'large pieces');
});

t.test('a piece ends byte-aligned on a non-final block; the last on a final one', async (t) => {
  const piece = deflateSegment(Buffer.from('hello, world'));
  t.same([...piece.deflated.subarray(-4)], [0, 0, 0xff, 0xff], 'the sync flush marker');
  t.equal(piece.crc, crc32('hello, world'));
  t.equal(piece.length, 12);
  t.ok(piece.deflated.buffer.byteLength === piece.deflated.length, 'an exact-size copy, not a view of zlib\'s output buffer');
  // Z_FULL_FLUSH gives the same bytes for a stream of its own (nothing to reset).
  const full = deflateRawSync(Buffer.from('hello, world'), { level: 1, finishFlush: constants.Z_FULL_FLUSH });
  t.ok(full.equals(piece.deflated), 'a full flush would be the same');
});

t.test('crc32Combine is the CRC of the concatenation', async (t) => {
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 500 }), fc.uint8Array({ maxLength: 500 }), (a, b) => {
      return crc32Combine(crc32(a), crc32(b), b.length) === crc32(Buffer.concat([a, b]));
    }),
    { numRuns: 2000 },
  );
  t.equal(crc32Combine(0, 0, 0), 0, 'two empty');
  t.equal(crc32Combine(crc32('abc'), crc32(''), 0), crc32('abc'), 'an empty second');
  t.equal(crc32Combine(crc32(''), crc32('abc'), 3), crc32('abc'), 'an empty first');
  // Past 2^32 bytes: B = 2^32 + 5 zero bytes, its CRC and that of A then B from zlib in 64 MiB steps.
  const block = Buffer.alloc(1 << 26);
  const zerosAfter = (crc: number): number => {
    crc = crc32(Buffer.alloc(5), crc);
    for (let i = 0; i < 64; i++) crc = crc32(block, crc);
    return crc;
  };
  t.equal(crc32Combine(crc32('abc'), zerosAfter(0), 2 ** 32 + 5), zerosAfter(crc32('abc')), 'a second part of 2^32 + 5 bytes');
  t.throws(() => crc32Combine(1, 2, -1), RangeError);
});

t.test('ISIZE is the length mod 2^32', async (t) => {
  // Pieces that claim more than 2^32 bytes (the trailer is arithmetic only; gunzip would not check them).
  const claimed = { deflated: Buffer.alloc(0), crc: 0, length: 2 ** 32 - 3 };
  const gz = gzipFromSegments([claimed, claimed], finalSegment(Buffer.from('x')));
  t.equal(gz.readUInt32LE(gz.length - 4), (2 * (2 ** 32 - 3) + 1) % 2 ** 32);
});
