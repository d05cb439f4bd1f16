/**
 * JSON serialisation with an output bound (docs/limits.md, "Large answers": no answer is assembled
 * in a way that can fail for its size).
 *
 * `JSON.stringify` builds the whole text as one string before anyone can look at its size: an
 * answer of a few hundred MiB costs that much memory first and then a `RangeError` ("Invalid
 * string length", a 500) past V8's string limit (~512 Mi characters). `boundedJson` writes the
 * same text, but in UTF-8 chunks of about 64 KiB, and stops with `AnswerTooLargeError` as soon as
 * the bytes written pass `maxBytes`, so a refused answer never costs more than the bound.
 *
 * The output is byte for byte what `JSON.stringify(value)` gives (UTF-8 encoded): `toJSON`
 * (with the property key as its argument), boxed primitives unwrapped, `undefined`, functions and
 * symbols left out of objects and written `null` in arrays (holes too), non-finite numbers
 * `null`, a BigInt or a cycle a `TypeError`, own enumerable string keys in `Object.keys` order.
 * Strings and keys are escaped by `JSON.stringify` itself (well-formed: lone surrogates as
 * `\udXXX`). test/unit/http/bounded-json.test.ts checks all of that against `JSON.stringify` with
 * fast-check. A small answer comes back as the string itself, a larger one as one Buffer.
 */

/** An answer over its byte bound; `limit` is the bound. */
export class AnswerTooLargeError extends Error {
  constructor(readonly limit: number) {
    super(`The answer would be larger than ${limit} bytes`);
    this.name = 'AnswerTooLargeError';
  }
}

/** Characters gathered in a string before they are encoded into a chunk. */
const CHUNK_CHARS = 1 << 16;

/** Quoted property keys, reused across answers (a bounded cache: keys come from data too). */
const quotedKeys = new Map<string, string>();
const MAX_QUOTED_KEYS = 4096;

function quotedKey(k: string): string {
  let q = quotedKeys.get(k);
  if (q === undefined) {
    q = JSON.stringify(k) + ':';
    if (quotedKeys.size < MAX_QUOTED_KEYS && k.length <= 64) quotedKeys.set(k, q);
  }
  return q;
}

class Writer {
  /** Text not yet encoded. */
  text = '';
  readonly chunks: Buffer[] = [];
  /** Bytes in `chunks`. */
  bytes = 0;
  readonly stack: object[] = [];

  constructor(readonly maxBytes: number) {}

  /** Encodes what was gathered once it is a chunk's worth; every character is at least one byte. */
  mark(): void {
    if (this.text.length >= CHUNK_CHARS) this.flush();
  }

  flush(): void {
    if (this.bytes + this.text.length > this.maxBytes) throw new AnswerTooLargeError(this.maxBytes);
    const b = Buffer.from(this.text, 'utf8');
    this.text = '';
    this.bytes += b.length;
    if (this.bytes > this.maxBytes) throw new AnswerTooLargeError(this.maxBytes);
    this.chunks.push(b);
  }
}

/**
 * The value JSON.stringify writes for `value` under `key` (SerializeJSONProperty steps 1-4):
 * after `toJSON` and unwrapping boxed primitives.
 */
function prepared(value: unknown, key: string | number): unknown {
  if (typeof value === 'object' && value !== null) {
    const toJSON = (value as { toJSON?: unknown }).toJSON;
    if (typeof toJSON === 'function') value = toJSON.call(value, String(key));
  } else if (typeof value === 'bigint') {
    const toJSON = (value as unknown as { toJSON?: unknown }).toJSON;
    if (typeof toJSON === 'function') value = toJSON.call(value, String(key));
  }
  if (typeof value === 'object' && value !== null) {
    if (value instanceof Number) return Number(value);
    if (value instanceof String) return String(value);
    if (value instanceof Boolean) return value.valueOf();
    if (value instanceof BigInt) return value.valueOf();
  }
  return value;
}

/** Whether a prepared value is left out of an object (and written `null` in an array). */
const omitted = (v: unknown): boolean => v === undefined || typeof v === 'function' || typeof v === 'symbol';

/** Characters a JSON string must escape, and lone-surrogate candidates (JSON.stringify decides). */
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;

const quoted = (s: string): string => (s.length < 256 && !NEEDS_ESCAPE.test(s) ? '"' + s + '"' : JSON.stringify(s));

function writeValue(w: Writer, v: unknown): void {
  switch (typeof v) {
    case 'string':
      w.text += quoted(v);
      if (v.length >= CHUNK_CHARS) w.mark();
      return;
    case 'number':
      w.text += Number.isFinite(v) ? String(v) : 'null';
      return;
    case 'boolean':
      w.text += v ? 'true' : 'false';
      return;
    case 'bigint':
      throw new TypeError('Do not know how to serialize a BigInt');
    case 'object':
      if (v === null) w.text += 'null';
      else if (Array.isArray(v)) writeArray(w, v);
      else writeObject(w, v as Record<string, unknown>);
      return;
    default:
      w.text += 'null'; // only reached for array items: objects skip omitted values first
  }
}

function enter(w: Writer, o: object): void {
  if (w.stack.includes(o)) throw new TypeError('Converting circular structure to JSON');
  w.stack.push(o);
}

/** An object or BigInt that needs SerializeJSONProperty's steps 1-4 (toJSON, a boxed primitive). */
const special = (v: object): boolean =>
  typeof (v as { toJSON?: unknown }).toJSON === 'function' || v instanceof Number || v instanceof String || v instanceof Boolean || v instanceof BigInt;

function writeArray(w: Writer, a: unknown[]): void {
  enter(w, a);
  w.text += '[';
  const n = a.length;
  for (let i = 0; i < n; i++) {
    if (i > 0) w.text += ',';
    let v = a[i];
    if ((typeof v === 'object' && v !== null && special(v)) || typeof v === 'bigint') v = prepared(v, i);
    if (omitted(v)) w.text += 'null';
    else writeValue(w, v);
    if (w.text.length >= CHUNK_CHARS) w.flush();
  }
  w.text += ']';
  w.stack.pop();
}

function writeObject(w: Writer, o: Record<string, unknown>): void {
  enter(w, o);
  let sep = '{';
  const keys = Object.keys(o);
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i];
    let v = o[k];
    switch (typeof v) {
      case 'string':
        w.text += sep + quotedKey(k) + quoted(v);
        if (v.length >= CHUNK_CHARS) w.mark();
        break;
      case 'number':
        w.text += sep + quotedKey(k) + (Number.isFinite(v) ? String(v) : 'null');
        break;
      case 'boolean':
        w.text += sep + quotedKey(k) + (v ? 'true' : 'false');
        break;
      case 'undefined':
      case 'function':
      case 'symbol':
        continue;
      default:
        if (v !== null && special(v as object)) {
          v = prepared(v, k);
          if (omitted(v)) continue;
        }
        w.text += sep + quotedKey(k);
        writeValue(w, v);
        if (w.text.length >= CHUNK_CHARS) w.flush();
    }
    sep = ',';
  }
  w.text += sep === '{' ? '{}' : '}';
  w.stack.pop();
}

/**
 * `JSON.stringify(value)` as UTF-8 text (a string while it is short, else a Buffer), or
 * undefined where JSON.stringify answers undefined. Throws AnswerTooLargeError once the text
 * passes `maxBytes` bytes (it stops there), and JSON.stringify's own TypeErrors.
 */
export function boundedJson(value: unknown, maxBytes: number): string | Buffer | undefined {
  const w = new Writer(maxBytes);
  try {
    const v = prepared(value, '');
    if (omitted(v)) return undefined;
    writeValue(w, v);
  } catch (err) {
    // A single string or array too long for V8 to hold as text: over any bound we can honour.
    if (err instanceof RangeError && /string length|Array buffer allocation/i.test(err.message)) throw new AnswerTooLargeError(maxBytes);
    throw err;
  }
  if (w.chunks.length === 0) {
    // At most 3 bytes per UTF-16 unit: only a text near the bound needs counting.
    if (w.text.length * 3 > maxBytes && Buffer.byteLength(w.text, 'utf8') > maxBytes) throw new AnswerTooLargeError(maxBytes);
    return w.text;
  }
  if (w.text.length > 0) w.flush();
  return w.chunks.length === 1 ? w.chunks[0] : Buffer.concat(w.chunks, w.bytes);
}

/** Byte length of a serialised answer. */
export const answerBytes = (s: string | Buffer): number => (typeof s === 'string' ? Buffer.byteLength(s, 'utf8') : s.length);
