/**
 * OFREP's event stream, the admission side (docs/ofrep.md, "The event stream"): the `eventStreams`
 * a bulk answer advertises (a signed token for the calling key) and the admission of a stream
 * connection through the one admission path (auth/authenticate.ts). streams.ts runs the streams.
 */
import { authenticateKeyId, type AddressSource, type Authenticated } from '../auth/authenticate.js';
import { requireEvaluator, type Principal } from '../auth/permissions.js';
import type { FrontRuntime } from '../runtime.js';
import { issueStreamToken, readStreamToken, tokenExpiry, verifyStreamToken } from './stream-token.js';

/** The SSE endpoint, advertised in bulk answers' `eventStreams` (docs/ofrep.md, 'The event stream'). */
export const EVENTS_PATH = '/ofrep/v1/events';

const tokens = new WeakMap<Principal, { expiry: number; token: string }>();

/**
 * The bulk answer's `eventStreams`: the SSE URL with a signed token for the calling key (whose
 * stored hash `keyHash` gives). Absolute: VEXIL_PUBLIC_URL, else http://<Host>; without either, the
 * OFREP `endpoint` form, which the provider resolves against its own base URL.
 */
export function eventStreams(rt: FrontRuntime, auth: Authenticated, keyHash: () => string, host: string): OfrepEventStream[] {
  const p = auth.principal;
  const now = rt.now();
  let t = tokens.get(p);
  if (t === undefined || t.expiry !== tokenExpiry(now)) {
    t = { expiry: tokenExpiry(now), token: issueStreamToken(p.keyId, keyHash(), now) };
    tokens.set(p, t);
  }
  const requestUri = `${EVENTS_PATH}?token=${t.token}`;
  const base = rt.config.publicUrl ?? (host !== '' ? `http://${host}` : null);
  return [base === null ? { type: 'sse', endpoint: { requestUri } } : { type: 'sse', url: base + requestUri }];
}

export type OfrepEventStream = { type: 'sse'; url: string } | { type: 'sse'; endpoint: { requestUri: string } };

/** Who an open stream belongs to. */
export interface StreamGrant {
  orgId: string;
  keyId: string;
  application: string;
  /** The key's stored hash the token was checked against. */
  hash: string;
}

const BAD_TOKEN = 'Missing, invalid or expired stream token';
const evalBucket = () => 'eval' as const;

/**
 * Admits a stream connection through the one admission path (auth/authenticate.ts,
 * `authenticateKeyId`): the token names its key by id and must be well-formed, unexpired and
 * signed with the key's current hash (401 otherwise, also for a disabled or deleted key; charged to
 * the address's failed-authentication budget like a bad key), then an active subscription (402)
 * and the rate limit (429, one evaluation token); then CanEvaluate with an application scope (403).
 * One key lookup per connection (none when the key is cached), nothing per event.
 */
export async function authorizeStream(rt: FrontRuntime, token: string | undefined, source: AddressSource = null): Promise<StreamGrant> {
  const claims = token === undefined ? null : readStreamToken(token);
  const credential = claims === null ? null : { keyId: claims.keyId, verify: (storedHash: string) => verifyStreamToken(token!, storedHash, rt.now()) };
  const { principal: p, keyHash } = await authenticateKeyId(rt, credential, evalBucket, source, BAD_TOKEN);
  requireEvaluator(p);
  return { orgId: p.orgId, keyId: p.keyId, application: p.application!, hash: keyHash };
}
