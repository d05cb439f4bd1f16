/**
 * Content coding (RFC 9110 8.4): which coding a client accepts, and large answers compressed in
 * it. The admin UI's assets are compressed once at build time; the management actor compresses
 * an answer of `COMPRESS_MIN_BYTES` or more as it makes it, off the front thread, so that the
 * front writes a few MB where it would write tens (every flag of a 100,000-flag organization is
 * about 37 MB of JSON and about 2 MB compressed; docs/benchmarks.md, "Large organizations").
 */
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';

export type Encoding = 'br' | 'gzip' | 'identity';

/**
 * Whether the client accepts `coding`: named with a q above 0, or not named and `*` is, with a
 * q above 0 (RFC 9110 12.5.3: `*` stands for the codings not named; q=0 refuses). `*` stands
 * for gzip only here: brotli is sent to a client that names it.
 */
export function acceptsCoding(acceptEncoding: string, coding: 'br' | 'gzip'): boolean {
  let named: boolean | null = null;
  let star = false;
  for (const part of acceptEncoding.toLowerCase().split(',')) {
    const [token, ...params] = part.trim().split(';');
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    const ok = q === undefined || Number(q.slice(2)) > 0;
    if (token.trim() === coding) named = named === true || ok;
    else if (token.trim() === '*') star = ok;
  }
  return named ?? (coding === 'gzip' && star);
}

/** `br`, `gzip` or `identity`: the best the client accepts (q=0 refuses). */
export function chooseEncoding(acceptEncoding: string): Encoding {
  return acceptsCoding(acceptEncoding, 'br') ? 'br' : acceptsCoding(acceptEncoding, 'gzip') ? 'gzip' : 'identity';
}

/** Answers smaller than this go as they are: compressing them saves the front little. */
export const COMPRESS_MIN_BYTES = 64 * 1024;

/**
 * The fastest settings of each coding: the answer is made per request (or kept, list-cache.ts),
 * so speed matters more than the last percent of size. Brotli at quality 1 is both faster and
 * smaller than gzip at level 1 on flag JSON.
 */
const BROTLI_OPTIONS = { params: { [constants.BROTLI_PARAM_QUALITY]: 1, [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT } };
const GZIP_OPTIONS = { level: 1 };

/** Compressed copies of bodies that are kept and sent again (the same Buffer), per coding. */
const copies = new WeakMap<Buffer, Partial<Record<'br' | 'gzip', Buffer>>>();

/** `body` compressed in `encoding`; a body sent again as the same Buffer is compressed once. */
export function compress(body: Buffer, encoding: 'br' | 'gzip'): Buffer {
  let kept = copies.get(body);
  const known = kept?.[encoding];
  if (known !== undefined) return known;
  const out = encoding === 'br' ? brotliCompressSync(body, BROTLI_OPTIONS) : gzipSync(body, GZIP_OPTIONS);
  if (kept === undefined) copies.set(body, (kept = {}));
  kept[encoding] = out;
  return out;
}

/** `vary` with `name` added (a comma-separated list; case-insensitive, no duplicates). */
export function addVary(vary: string | undefined, name: string): string {
  if (vary === undefined || vary === '') return name;
  return vary.split(',').some((v) => v.trim().toLowerCase() === name.toLowerCase()) ? vary : `${vary}, ${name}`;
}

/**
 * A serialised answer as it should be sent to a client that sent `acceptEncoding`: at
 * `COMPRESS_MIN_BYTES` or more it says `Vary: Accept-Encoding` and, when the client accepts br
 * or gzip, is compressed in it. Smaller answers, and answers that already carry a coding, are
 * returned as they are.
 */
export function encodeAnswer(
  headers: Record<string, string> | undefined,
  body: string | Buffer,
  acceptEncoding: string,
): { headers: Record<string, string> | undefined; body: string | Buffer } {
  const length = typeof body === 'string' ? body.length : body.byteLength;
  if (length < COMPRESS_MIN_BYTES || headers?.['content-encoding'] !== undefined) return { headers, body };
  const out: Record<string, string> = { ...headers, vary: addVary(headers?.vary, 'Accept-Encoding') };
  const encoding = chooseEncoding(acceptEncoding);
  if (encoding === 'identity') return { headers: out, body };
  out['content-encoding'] = encoding;
  return { headers: out, body: compress(typeof body === 'string' ? Buffer.from(body) : body, encoding) };
}
