/**
 * The nesting depth of a JSON text, up to a bound, without parsing it: V8's JSON.parse takes
 * ~100 ms on a 100,000-deep body (deep object graphs are slow to build), so bodies are scanned
 * first and refused when they nest deeper than anything acceptable (docs/limits.md, "Evaluation
 * contexts"). One pass over the bytes, stopping at the first level past `max`; strings (and their
 * escapes) are skipped, a quote at a time. Pure.
 */
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJ = 0x7b;
const OPEN_ARR = 0x5b;
const CLOSE_OBJ = 0x7d;
const CLOSE_ARR = 0x5d;

/**
 * The same scan fed chunk by chunk, as a body arrives (src/http/exchange.ts BodyReader): a front
 * can stop keeping a body as soon as it nests too deep, instead of buffering all of it first.
 */
export class JsonDepthScanner {
  private depth = 0;
  private inString = false;
  private escaped = false;
  /** Sticky: once the text has gone past `max`, it stays too deep. */
  tooDeep = false;

  constructor(private readonly max: number) {}

  /** Scans the next bytes; true once the text so far nests deeper than `max`. */
  feed(bytes: Uint8Array): boolean {
    if (this.tooDeep) return true;
    let depth = this.depth;
    let inString = this.inString;
    let escaped = this.escaped;
    const max = this.max;
    const n = bytes.length;
    let i = 0;
    while (i < n) {
      if (inString) {
        // Inside a string only the closing quote matters: jump to the next quote (memchr) and
        // count the backslashes just before it, instead of looking at every byte. Most of a large
        // body is strings (a GraphQL document is one), so this is most of the scan's time saved.
        if (escaped) {
          escaped = false;
          i++;
          continue;
        }
        const q = nextQuote(bytes, i);
        if (q < 0) {
          // The string goes on in the next chunk: it starts escaped after an odd run of backslashes.
          escaped = backslashesBefore(bytes, n, i) % 2 === 1;
          i = n;
          break;
        }
        inString = backslashesBefore(bytes, q, i) % 2 === 1;
        i = q + 1;
        continue;
      }
      const c = bytes[i++];
      if (c === QUOTE) {
        inString = true;
      } else if (c === OPEN_OBJ || c === OPEN_ARR) {
        if (++depth > max) {
          this.tooDeep = true;
          return true;
        }
      } else if (c === CLOSE_OBJ || c === CLOSE_ARR) {
        depth--;
      }
    }
    this.depth = depth;
    this.inString = inString;
    this.escaped = escaped;
    return false;
  }
}

/** The run of backslashes that ends just before `end`, not looking before `from`. */
function backslashesBefore(bytes: Uint8Array, end: number, from: number): number {
  let k = end;
  while (k > from && bytes[k - 1] === BACKSLASH) k--;
  return end - k;
}

/**
 * The next quote at or after `from`, or -1: a plain loop over the first bytes (most strings are
 * short), then Buffer's memchr (a typed array's own indexOf is ~30× slower).
 */
function nextQuote(bytes: Uint8Array, from: number): number {
  const n = bytes.length;
  const end = Math.min(n, from + 64);
  for (let k = from; k < end; k++) if (bytes[k] === QUOTE) return k;
  if (end === n) return -1;
  const b = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return b.indexOf(QUOTE, end);
}

/** Whether the JSON text in `bytes` nests objects and arrays more than `max` levels deep. */
export function jsonDeeperThan(bytes: Uint8Array, max: number): boolean {
  return new JsonDepthScanner(max).feed(bytes);
}
