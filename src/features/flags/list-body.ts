/**
 * The JSON body of a flag list (`GET /api/flags`, list-route.ts), assembled from each flag's JSON
 * kept per Flag object, so that the list after a one-flag write serialises that one flag, not the
 * organization (docs/benchmarks.md, "Large organizations": the first unpaged list after each write
 * cost the management actor about 1.3 s of CPU at 100,000 flags, serialisation and compression).
 *
 * A flag's JSON is a function of its Flag object: the snapshot registry never changes a Flag in
 * place; a write gives the flag a new object (snapshots/registry.ts `applyDelta` compiles the
 * flag read at the new version; a whole reload builds every flag anew), and an unchanged flag keeps
 * its object. So the fragments are kept in a WeakMap keyed by the object: an entry goes when its
 * flag does, and a changed flag is never answered with its old JSON.
 *
 * The body is byte for byte `boundedJson(flags, maxBytes)` (util/bounded-json.ts), i.e.
 * `JSON.stringify(flags)` in UTF-8, for flags as the snapshot holds them (plain data: no `toJSON`,
 * whose answer could depend on the item's index). The bound is the same: AnswerTooLargeError as
 * soon as the bytes counted pass `maxBytes`, before the body is allocated.
 *
 * Memory: each flag that some list has shown has its JSON as UTF-8 bytes outside the V8 heap
 * (about the unpaged list's size: 41 MB at 100,000 bench flags), plus a Buffer view and a WeakMap
 * entry on the heap (about 150 bytes a flag). The bytes of one list's new flags share one block,
 * freed when all of them are gone: at worst (every flag but one rewritten since the first unpaged
 * list) about twice the list's size. Measured by bench/list-body.ts (docs/benchmarks.md).
 *
 * The gzip body (`flagListGzip`, for a client that accepts gzip) is assembled the same way one
 * level up: the list is cut into chunks at points its flags choose (a chunk ends after a flag whose
 * name hashes to 0 mod 256, or at 1,024 flags or 256 KiB), each chunk is compressed apart and kept
 * with the exact run of Flag objects it was made from, and the body is those pieces joined into
 * one gzip member (http/gzip-members.ts). A one-flag write changes the chunk that holds the flag
 * (an insert or a delete that moves a cut: two), so the list after it compresses about 100 KB,
 * not the whole list (37 MB at 100,000 flags), and allocates about the compressed size (2 MB),
 * not the uncompressed one. The cuts depend on the flags only, not on where the list starts, so
 * a page or a filtered list shares the unpaged list's chunks after its first cut.
 *
 * Memory of the chunks: a chunk is kept in a WeakMap under its first Flag object (one map for a
 * list's first chunk, whose leading byte is `[`, one for the others, led by `,`), holding its
 * compressed bytes (an exact-size block; about 2.6 MB for the whole 100,000-flag list) and an array
 * of its Flag objects (8 bytes a flag). A list's last chunk, which ends where the list does rather
 * than at a cut, is kept apart and used only to end a list (pages end anywhere). When a list makes
 * a chunk, the entries under the flags inside it are dropped, since they are not chunk starts any
 * more; so the maps hold about one entry per chunk of the lists shown, and at most two (a cut
 * chunk and a last one) per live Flag object in each. An entry whose run no longer matches (a flag in it
 * was replaced) holds the old Flag objects until its first flag is listed again (the entry is then
 * replaced) or goes: at most one chunk (1,024 flags) per live Flag object, in practice the chunks
 * changed since the last list.
 */
import type { Flag } from '../../domain/types.js';
import { deflateSegment, finalSegment, gzipFromSegments, type GzipSegment } from '../../http/gzip-members.js';
import { AnswerTooLargeError } from '../../util/bounded-json.js';

const fragments = new WeakMap<Flag, Buffer>();

/**
 * Keeps the JSON of `made[i]` (`texts[i]`, `lengths[i]` UTF-8 bytes, `total` in all) in one
 * memory block of exactly `total` bytes, one view per flag, and returns the views. One block per
 * list for the flags it serialised (the first unpaged list: every flag; after a one-flag write: that
 * flag), not Node's shared 8 KiB buffer pool, where a fragment made between other small buffers
 * would keep a whole 8 KiB pool alive for a few hundred bytes.
 */
function keep(made: readonly Flag[], texts: readonly string[], lengths: readonly number[], total: number): Buffer[] {
  const block = Buffer.allocUnsafeSlow(total);
  const views: Buffer[] = new Array(made.length);
  let at = 0;
  for (let i = 0; i < made.length; i++) {
    block.write(texts[i], at, lengths[i], 'utf8');
    const view = block.subarray(at, at + lengths[i]);
    fragments.set(made[i], view);
    views[i] = view;
    at += lengths[i];
  }
  return views;
}

/** The JSON kept for this Flag object (made by a list that showed it), if any; makes none. */
export function keptJson(flag: Flag): Buffer | undefined {
  return fragments.get(flag);
}

const OPEN = 0x5b; // [
const COMMA = 0x2c;
const CLOSE = 0x5d; // ]

/**
 * `JSON.stringify(flags)` as UTF-8 bytes, from the flags' kept JSON (made and kept for the flags
 * that have none). Throws AnswerTooLargeError once the bytes counted (brackets, commas and the
 * flags so far) pass `maxBytes`; nothing is kept then.
 */
export function flagListBody(flags: readonly Flag[], maxBytes: number): Buffer {
  const n = flags.length;
  let bytes = n === 0 ? 2 : n + 1; // the brackets and the commas
  if (bytes > maxBytes) throw new AnswerTooLargeError(maxBytes);
  const parts: (Buffer | undefined)[] = new Array(n);
  // The flags without kept JSON: their places in `flags`, their text and its length.
  const at: number[] = [];
  const texts: string[] = [];
  const lengths: number[] = [];
  let made = 0;
  for (let i = 0; i < n; i++) {
    const kept = fragments.get(flags[i]);
    let length: number;
    if (kept !== undefined) {
      parts[i] = kept;
      length = kept.length;
    } else {
      const text = JSON.stringify(flags[i]);
      length = Buffer.byteLength(text, 'utf8');
      at.push(i);
      texts.push(text);
      lengths.push(length);
      made += length;
    }
    bytes += length;
    if (bytes > maxBytes) throw new AnswerTooLargeError(maxBytes);
  }
  if (at.length > 0) {
    const views = keep(at.map((i) => flags[i]), texts, lengths, made);
    for (let k = 0; k < at.length; k++) parts[at[k]] = views[k];
  }
  const out = Buffer.allocUnsafe(bytes);
  out[0] = OPEN;
  let w = 1;
  for (let i = 0; i < n; i++) {
    if (i > 0) out[w++] = COMMA;
    const part = parts[i]!;
    out.set(part, w);
    w += part.length;
  }
  out[w] = CLOSE;
  return out;
}

/** A run of flags of a list, compressed as one piece of its gzip body (`flagListGzip`). */
interface Chunk {
  /** The Flag objects it was made from, in order: it stands for exactly these. */
  readonly flags: readonly Flag[];
  /** Its bytes (`[` or `,`, then the flags' JSON joined by `,`), compressed. */
  readonly segment: GzipSegment;
}

/**
 * Kept chunks under their first flag: a list's first chunk (led by `[`) and the others (led by
 * `,`); in each, the chunks that end at a cut, and those the list ended (a list's last chunk,
 * used again only as a list's last chunk: a longer list would cut it elsewhere).
 */
const openingChunks = { cut: new WeakMap<Flag, Chunk>(), end: new WeakMap<Flag, Chunk>() };
const innerChunks = { cut: new WeakMap<Flag, Chunk>(), end: new WeakMap<Flag, Chunk>() };

/** A chunk ends after a flag whose name's hash is 0 mod this (256 flags, ~95 KB, on average)... */
const CUT_MASK = 0xff;
/** ... or once it has this many flags or bytes (a long run with no such name, large flags). */
const MAX_CHUNK_FLAGS = 1024;
const MAX_CHUNK_BYTES = 256 * 1024;

/** Whether a chunk ends after this flag by its name (FNV-1a over UTF-16 units, then mixed). */
function cutAfter(flag: Flag): boolean {
  const name = flag.name;
  let h = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 0x01000193);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  return (h & CUT_MASK) === 0;
}

/** Whether `run` is exactly `flags` from `at` on (the same objects). */
function sameRun(run: readonly Flag[], flags: readonly Flag[], at: number): boolean {
  if (at + run.length > flags.length) return false;
  for (let k = 0; k < run.length; k++) if (run[k] !== flags[at + k]) return false;
  return true;
}

/** Where a chunk's bytes are written to be compressed: one block reused, made on first use. */
let scratch: Buffer | null = null;

/** The chunk's bytes (every flag has kept JSON by now), `size` of them, in scratch memory. */
function chunkBytes(run: readonly Flag[], lead: number, size: number): Buffer {
  scratch ??= Buffer.allocUnsafeSlow(MAX_CHUNK_BYTES * 2);
  // A chunk is cut once past MAX_CHUNK_BYTES, so only one with a flag that large is larger.
  const out = size <= scratch.length ? scratch : Buffer.allocUnsafeSlow(size);
  let w = 0;
  for (let k = 0; k < run.length; k++) {
    out[w++] = k === 0 ? lead : COMMA;
    const json = fragments.get(run[k])!;
    out.set(json, w);
    w += json.length;
  }
  return out.subarray(0, size);
}

/** A chunk to make: flags [start, end) of the list, `bytes` long; `cut` when it ends at a cut. */
interface NewChunk {
  start: number;
  end: number;
  bytes: number;
  cut: boolean;
}

const CLOSING = finalSegment(Buffer.from(']'));
const EMPTY_LIST = finalSegment(Buffer.from('[]'));

/** What the last `flagListGzip` did: chunks in the body, chunks compressed, bytes compressed. */
const work = { chunks: 0, made: 0, bytesCompressed: 0 };
export const lastGzipWork = (): Readonly<typeof work> => ({ ...work });

/**
 * `JSON.stringify(flags)` as UTF-8, gzip-coded (one gzip member; gunzipped, byte for byte
 * `flagListBody(flags, maxBytes)`), from kept compressed chunks and the flags' kept JSON (both made
 * and kept where missing). Throws AnswerTooLargeError once the uncompressed bytes counted pass
 * `maxBytes`, as flagListBody; nothing is kept then. Null, with nothing kept, when the uncompressed
 * body would be shorter than `minBytes` (not worth compressing).
 */
export function flagListGzip(flags: readonly Flag[], maxBytes: number, minBytes = 0): Buffer | null {
  const n = flags.length;
  work.chunks = work.made = work.bytesCompressed = 0;
  if (n === 0) {
    if (2 > maxBytes) throw new AnswerTooLargeError(maxBytes);
    return 2 < minBytes ? null : gzipFromSegments([], EMPTY_LIST);
  }
  // First the plan: kept chunks where the list has their exact run, new chunks between, every
  // byte counted before anything is made.
  let bytes = 1; // the closing bracket; each flag adds its leading `[` or `,` and its JSON
  if (n + 1 > maxBytes) throw new AnswerTooLargeError(maxBytes);
  const plan: (Chunk | NewChunk)[] = [];
  const madeFlags: Flag[] = [];
  const texts: string[] = [];
  const lengths: number[] = [];
  let made = 0;
  let i = 0;
  while (i < n) {
    const maps = i === 0 ? openingChunks : innerChunks;
    let kept = maps.cut.get(flags[i]);
    if (kept !== undefined && !sameRun(kept.flags, flags, i)) kept = undefined;
    if (kept === undefined) {
      const last = maps.end.get(flags[i]);
      if (last !== undefined && i + last.flags.length === n && sameRun(last.flags, flags, i)) kept = last;
    }
    if (kept !== undefined) {
      bytes += kept.segment.length;
      if (bytes > maxBytes) throw new AnswerTooLargeError(maxBytes);
      plan.push(kept);
      i += kept.flags.length;
      continue;
    }
    const start = i;
    let chunk = 0;
    let cut = false;
    while (i < n && !cut) {
      const flag = flags[i++];
      let length: number;
      const json = fragments.get(flag);
      if (json !== undefined) {
        length = json.length;
      } else {
        const text = JSON.stringify(flag);
        length = Buffer.byteLength(text, 'utf8');
        madeFlags.push(flag);
        texts.push(text);
        lengths.push(length);
        made += length;
      }
      chunk += 1 + length;
      bytes += 1 + length;
      if (bytes > maxBytes) throw new AnswerTooLargeError(maxBytes);
      cut = cutAfter(flag) || i - start >= MAX_CHUNK_FLAGS || chunk >= MAX_CHUNK_BYTES;
    }
    plan.push({ start, end: i, bytes: chunk, cut });
  }
  if (bytes < minBytes) return null;
  if (madeFlags.length > 0) keep(madeFlags, texts, lengths, made);
  const segments: GzipSegment[] = new Array(plan.length);
  for (let k = 0; k < plan.length; k++) {
    const p = plan[k];
    if ('segment' in p) {
      segments[k] = p.segment;
      continue;
    }
    const run = flags.slice(p.start, p.end);
    const segment = deflateSegment(chunkBytes(run, p.start === 0 ? OPEN : COMMA, p.bytes));
    segments[k] = segment;
    work.made++;
    work.bytesCompressed += p.bytes;
    const maps = p.start === 0 ? openingChunks : innerChunks;
    (p.cut ? maps.cut : maps.end).set(run[0], { flags: run, segment });
    // The flags inside this chunk start none in this list: their entries (made by an older list) go.
    for (let j = 1; j < run.length; j++) {
      innerChunks.cut.delete(run[j]);
      innerChunks.end.delete(run[j]);
    }
  }
  work.chunks = plan.length;
  return gzipFromSegments(segments, CLOSING);
}
