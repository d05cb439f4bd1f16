/**
 * What a node's FrontRuntime holds for admission (docs/api.md#order-of-checks): the key cache, the
 * per-key rate limiter (in shared memory, so front threads can attach to it) and the per-address failed-authentication budget, built from the settings.
 * Only the front builds it: the management actor admits nothing.
 */
import type { Config } from '../config.js';
import { SharedRateLimiter } from '../ratelimit/shared-limiter.js';
import type { FrontRuntime } from '../runtime.js';
import type { FrontAsks } from '../management/mailbox.js';
import { AuthFailureBudget } from './auth-failures.js';
import { KeyCache } from './key-cache.js';

export function admissionState(
  config: Config,
  asks: Pick<FrontAsks, 'keyByHash' | 'keyById'>,
): Pick<FrontRuntime, 'keys' | 'authFailures'> & { limiter: SharedRateLimiter } {
  return {
    keys: new KeyCache((hash) => asks.keyByHash(hash), {
      ttlMs: config.keyCacheTtlMs,
      staleMaxMs: config.keyStaleMaxMs,
      loadById: (keyId) => asks.keyById(keyId),
    }),
    limiter: SharedRateLimiter.create({ eval: config.rateLimitEval, mgmt: config.rateLimitMgmt }),
    authFailures: new AuthFailureBudget(config.rateLimitAuthFailures),
  };
}
