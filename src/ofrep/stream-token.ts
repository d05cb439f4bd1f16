/**
 * The token in an OFREP event-stream URL (docs/ofrep.md, "The event stream": the URL holds no key
 * value).
 *
 *   token = <keyId> "." <expiry, unix seconds> "." base64url(HMAC-SHA256(storedHash, "ofrep-sse:" keyId ":" expiry))[0..32]
 *
 * The HMAC is keyed by the key's stored SHA-256 (what the database already holds), so no new
 * shared secret is needed, every node can check a token, and rotating the key (a new hash)
 * invalidates every token issued for it at once. A token is valid until its expiry, which falls on
 * a fixed grid (TOKEN_GRID_S) so that bulk answers within one grid step carry the same URL and the
 * provider keeps its connection. Pure: no I/O.
 */
import { createHmac } from 'node:crypto';
import { digestsEqual } from '../auth/key-material.js';

/** Token lifetime: at least this long ... */
export const TOKEN_MIN_LIFETIME_S = 600;
/** ... rounded up to this grid (so at most MIN + GRID). */
export const TOKEN_GRID_S = 300;

const sign = (storedHash: string, keyId: string, expiry: number): string =>
  createHmac('sha256', storedHash).update(`ofrep-sse:${keyId}:${expiry}`).digest('base64url').slice(0, 32);

/** The expiry a token issued at `nowMs` gets. */
export const tokenExpiry = (nowMs: number): number =>
  Math.ceil((Math.floor(nowMs / 1000) + TOKEN_MIN_LIFETIME_S) / TOKEN_GRID_S) * TOKEN_GRID_S;

export function issueStreamToken(keyId: string, storedHash: string, nowMs: number): string {
  const expiry = tokenExpiry(nowMs);
  return `${keyId}.${expiry}.${sign(storedHash, keyId, expiry)}`;
}

export interface TokenClaims {
  keyId: string;
  expiry: number;
}

/** Reads a token's claims (not yet verified); null when it is not shaped like one. */
export function readStreamToken(token: string): TokenClaims | null {
  const m = /^([A-Za-z0-9_-]{1,64})\.(\d{1,12})\.[A-Za-z0-9_-]{32}$/.exec(token);
  return m === null ? null : { keyId: m[1], expiry: Number(m[2]) };
}

/** Whether `token` was issued for the key whose stored hash is `storedHash` and is unexpired at `nowMs`. */
export function verifyStreamToken(token: string, storedHash: string, nowMs: number): boolean {
  const claims = readStreamToken(token);
  if (claims === null || claims.expiry * 1000 <= nowMs) return false;
  return digestsEqual(token.slice(token.lastIndexOf('.') + 1), sign(storedHash, claims.keyId, claims.expiry));
}
