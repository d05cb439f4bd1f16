/**
 * The browser side of the web SDK suite, bundled with esbuild: the published @openfeature/web-sdk
 * with @openfeature/ofrep-web-provider, driven from the test through `window.vexilTest`.
 */
import { OpenFeature, ProviderEvents } from '@openfeature/web-sdk';
import { OFREPWebProvider } from '@openfeature/ofrep-web-provider';

interface Setup {
  baseUrl: string;
  key: string;
  context: Record<string, string>;
  changeDetection: 'sse' | 'polling';
  pollInterval?: number;
}

const changes: string[][] = [];

(window as unknown as { vexilTest: unknown }).vexilTest = {
  async init(s: Setup): Promise<void> {
    await OpenFeature.setContext(s.context);
    const provider = new OFREPWebProvider({
      baseUrl: s.baseUrl,
      headers: [['X-API-Key', s.key]],
      changeDetection: s.changeDetection,
      pollInterval: s.pollInterval ?? 0,
      cacheMode: 'disabled',
    });
    OpenFeature.addHandler(ProviderEvents.ConfigurationChanged, (e) => {
      changes.push(e?.flagsChanged ?? []);
    });
    await OpenFeature.setProviderAndWait(provider);
  },
  details(flag: string, fallback: boolean | string) {
    const c = OpenFeature.getClient();
    const d = typeof fallback === 'boolean' ? c.getBooleanDetails(flag, fallback) : c.getStringDetails(flag, fallback);
    return { value: d.value, variant: d.variant ?? null, reason: d.reason ?? null, errorCode: d.errorCode ?? null, reasonCode: d.flagMetadata.reasonCode ?? null };
  },
  changes: () => changes,
};
