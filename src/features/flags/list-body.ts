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
 */
import type { Flag } from '../../domain/types.js';
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
