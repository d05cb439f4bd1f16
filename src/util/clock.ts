/**
 * A coarse wall clock for hot paths: `Date.now()` is a system call on some virtual machines
 * (≈0.4-0.9 µs here, bench/key-cache.ts), so the value is read once and reused until a timer of
 * `resolutionMs` clears it (the approach of lru-cache's TTL clock). Never behind by more than the
 * resolution plus however long the event loop is busy: meant for expiry checks of seconds.
 */
export function coarseClock(resolutionMs = 1): () => number {
  let cached = 0;
  const clear = () => {
    cached = 0;
  };
  return () => {
    if (cached !== 0) return cached;
    cached = Date.now();
    setTimeout(clear, resolutionMs).unref();
    return cached;
  };
}
