/**
 * Management Key values: 64 lowercase hex characters (KEY_RE in src/domain/input-formats.ts) from a
 * CSPRNG. Only their SHA-256 is ever stored, logged or sent anywhere; comparisons are constant-time.
 *
 * One exception in memory: `KeyHashMemo`, the per-process memo of value → hash for values that
 * authenticated (docs/limits.md, "The key-hash memo"). The SHA-256 of a presented key is paid on
 * every request (issue 28 profiled it at 4× the rule engine; docs/benchmarks.md "REST against the
 * bare endpoint"); a Map lookup by the value is about a third of it.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import * as nodeCrypto from 'node:crypto';

export const generateKeyValue = (): string => randomBytes(32).toString('hex');

type OneShotHash = (algorithm: string, data: string, encoding: 'hex') => string;
/** Node ≥ 20.12 has a one-shot `crypto.hash`, about twice as fast as a Hash object per call. */
const oneShot = (nodeCrypto as unknown as { hash?: OneShotHash }).hash;

export const hashKey: (value: string) => string = oneShot
  ? (value) => oneShot('sha256', value, 'hex')
  : (value) => createHash('sha256').update(value).digest('hex');

/** Constant-time equality of two hex digests (or any two equal-length strings). */
export function digestsEqual(a: string, b: string): boolean {
  const ba = Buffer.from(a, 'utf8');
  const bb = Buffer.from(b, 'utf8');
  return ba.length === bb.length && timingSafeEqual(ba, bb);
}

/** Constant-time comparison of a presented secret with the configured one (lengths may differ). */
export function secretMatches(presented: string, expected: string): boolean {
  return digestsEqual(hashKey(presented), hashKey(expected));
}

/**
 * Value → SHA-256 hex of key values that authenticated, held only in this process's memory (never
 * logged, stored or sent), bounded at `max` entries (oldest first). It answers the same as
 * `hashKey`, so it never needs invalidating: a key disabled, rotated or deleted is refused by hash,
 * in the key cache, like any other. Only the caller's "this value authenticated" puts entries in,
 * so random guesses cannot fill it or push real keys out. It holds values the process already
 * holds while each request is handled (the header string), for as long as the key keeps coming.
 */
export class KeyHashMemo {
  private readonly map = new Map<string, string>();

  constructor(private readonly max = 10_000) {}

  /** The hash of `value` when it authenticated before, else undefined (hash it with `hashKey`). */
  get(value: string): string | undefined {
    return this.map.get(value);
  }

  /** Remembers the hash of a value that just authenticated. */
  remember(value: string, hash: string): void {
    if (this.map.size >= this.max) this.map.delete(this.map.keys().next().value as string);
    this.map.set(value, hash);
  }

  get size(): number {
    return this.map.size;
  }
}
