/**
 * Management Key values: 64 lowercase hex characters (KEY_RE in src/domain/input-formats.ts) from a
 * CSPRNG. Only their SHA-256 is ever stored or held in memory; comparisons are constant-time.
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
