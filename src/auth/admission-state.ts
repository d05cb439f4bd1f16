/**
 * What a node's FrontRuntime holds for admission (docs/api.md#order-of-checks): the key cache, the
 * per-key rate limiter and the per-address failed-authentication budget, built from the settings.
 * Only the front builds it: the management actor admits nothing.
 */
import type { Config } from '../config.js';
import { findKeyByHash, findKeyWithHash } from '../features/keys/store.js';
import { RateLimiter } from '../ratelimit/token-bucket.js';
import type { FrontRuntime } from '../runtime.js';
import type { Queryable } from '../storage/database.js';
import { AuthFailureBudget } from './auth-failures.js';
import { KeyCache } from './key-cache.js';

export function admissionState(config: Config, db: Queryable): Pick<FrontRuntime, 'keys' | 'limiter' | 'authFailures'> {
  return {
    keys: new KeyCache((hash) => findKeyByHash(db, hash), {
      ttlMs: config.keyCacheTtlMs,
      staleMaxMs: config.keyStaleMaxMs,
      loadById: (keyId) => findKeyWithHash(db, keyId),
    }),
    limiter: new RateLimiter({ eval: config.rateLimitEval, mgmt: config.rateLimitMgmt }),
    authFailures: new AuthFailureBudget(config.rateLimitAuthFailures),
  };
}
