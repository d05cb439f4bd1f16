/**
 * Helpers of the in-process provider's tests (docs/feed.md; packages/openfeature-provider): the
 * provider as the build bundles it, set on its own OpenFeature domain of the real server SDK.
 */
import { OpenFeature, ProviderEvents, type Client } from '@openfeature/server-sdk';
import { VexilProvider, type VexilProviderOptions } from '../../packages/openfeature-provider/dist/index.js';
import { requireFreshDist } from './dist.js';

requireFreshDist(); // the bundle above is built from the provider's and the server's sources

export { VexilProvider };

let domains = 0;

/**
 * A provider on a fresh domain, closed at `t`'s end; `wait` waits for its initialization (which
 * may fail: then no throw).
 */
export async function providerClient(t: { teardown(fn: () => unknown): void }, options: VexilProviderOptions, wait = true): Promise<{ provider: VexilProvider; client: Client; domain: string }> {
  const domain = `vexil-${process.pid}-${++domains}`;
  const provider = new VexilProvider(options);
  t.teardown(() => OpenFeature.clearProviders(domain));
  if (wait) await OpenFeature.setProviderAndWait(domain, provider).catch(() => undefined);
  else OpenFeature.setProvider(domain, provider);
  return { provider, client: OpenFeature.getClient(domain), domain };
}

/** Resolves with the event's details when `provider` emits `event` within `ms`, else null. */
export function nextEvent(provider: VexilProvider, event: ProviderEvents, ms: number): Promise<{ details: any; at: number } | null> {
  return new Promise((resolve) => {
    const handler = (details: unknown) => {
      clearTimeout(timer);
      provider.events.removeHandler(event, handler);
      resolve({ details, at: Date.now() });
    };
    const timer = setTimeout(() => {
      provider.events.removeHandler(event, handler);
      resolve(null);
    }, ms);
    provider.events.addHandler(event, handler);
  });
}

/** Polls `check` every 20 ms until it is true or `ms` pass. */
export async function eventually(check: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (check()) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return check();
}
