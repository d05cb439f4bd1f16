/**
 * Where a request's evaluations run, the front thread or the worker pool: decided here once for
 * every transport (REST, OFREP single and bulk, GraphQL). With no pool (VEXIL_EVAL_WORKERS=0) the
 * front runs everything; otherwise the pool's hand-off policy decides per request (pool/handoff.ts),
 * and what runs on the front instead is timed for it (`EvalPool.inlineStart`), so that the policy
 * follows this machine's costs.
 */
import type { EvalPool } from './pool/eval-pool.js';
import type { Transport } from './pool/handoff.js';

/**
 * `front()` on this thread, or `pool(p)` in the workers, for a request of `evaluations`
 * evaluations. A `front` that answers a promise is timed until it settles.
 */
export function placed<T>(
  pool: EvalPool | null,
  transport: Transport,
  evaluations: number,
  front: () => T | Promise<T>,
  inPool: (pool: EvalPool) => Promise<T>,
): T | Promise<T> {
  if (pool === null) return front();
  if (pool.wants(transport, evaluations)) return inPool(pool);
  const started = pool.inlineStart(transport);
  const out = front();
  if (out instanceof Promise) {
    return out.then((v) => {
      pool.inlineEnd(transport, started, evaluations);
      return v;
    });
  }
  pool.inlineEnd(transport, started, evaluations);
  return out;
}
