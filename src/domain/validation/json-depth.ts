/**
 * The nesting depth of a JSON text, up to a bound, without parsing it: V8's JSON.parse takes
 * ~100 ms on a 100,000-deep body (deep object graphs are slow to build), so bodies are scanned
 * first and refused when they nest deeper than anything acceptable (CONTRACT.md 8). One pass over
 * the bytes, stopping at the first level past `max`; strings (and their escapes) are skipped. Pure.
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
    for (let i = 0; i < n; i++) {
      const c = bytes[i];
      if (inString) {
        if (escaped) escaped = false;
        else if (c === BACKSLASH) escaped = true;
        else if (c === QUOTE) inString = false;
      } else if (c === QUOTE) {
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

/** Whether the JSON text in `bytes` nests objects and arrays more than `max` levels deep. */
export function jsonDeeperThan(bytes: Uint8Array, max: number): boolean {
  return new JsonDepthScanner(max).feed(bytes);
}
