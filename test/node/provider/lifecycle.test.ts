/**
 * The in-process provider's life (docs/feed.md, "The stream"; packages/openfeature-provider/README.md)
 * with the real `@openfeature/server-sdk` against real nodes: `ConfigurationChanged` (with
 * `flagsChanged`) within 1 s of a flag, segment or kill-switch change; after the node restarts on
 * the same data directory the provider reconnects by itself, with jittered backoff that grows and
 * stays under its cap, and is READY again; with `cacheFile` and the node down it starts from the
 * cache (STALE, same answers), then goes READY when the node comes back; with neither node nor
 * cache it answers code defaults and never throws, then goes READY once the node is up.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { OpenFeature, ProviderEvents } from '@openfeature/server-sdk';
import { freePort } from '../../helpers/cluster.js';
import { pgliteCopy, type TestNode } from '../../helpers/node.js';
import { createOrg, evalKey, must, postConfig, postFlag, setKillSwitch, startNode, type TapTest } from '../../helpers/flags.js';
import { eventually, nextEvent, providerClient } from '../../helpers/provider.js';

t.teardown(() => OpenFeature.close());

/** A node on a fixed port and data directory, so that it can be stopped and started again. */
async function restartable(t: TapTest) {
  const dataDir = await pgliteCopy();
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const port = await freePort();
  let adminKey: string | undefined;
  const start = async (): Promise<TestNode> => {
    const n = await startNode(t, { dataDir, adminKey, env: { PORT: String(port) } });
    adminKey = n.adminKey;
    return n;
  };
  return { start, url: `http://127.0.0.1:${port}` };
}

const betaRule = [{ id: 'beta', priority: 1, conditions: [], segments: ['beta'], allocations: [{ variantKey: 'on', percentage: 100 }] }];

/** An organization with flag `live` (boolean, default off in production) and a CanEvaluate key. */
async function setUp(t: TapTest, n: TestNode) {
  const org = await createOrg(n, ['development', 'production'], ['web', 'other']);
  must(t, await n.req('POST', '/api/segments', { key: org.adminKey, body: { name: 'beta', conditions: [{ field: 'plan', operator: '==', value: 'beta' }] } }), 201, 'segment');
  must(t, await postFlag(n, org.adminKey, 'live'), 201, 'flag live');
  must(t, await postConfig(n, org.adminKey, 'live', { rules: betaRule }), 200, 'live config');
  must(t, await postFlag(n, org.adminKey, 'other-flag'), 201, 'flag other-flag');
  must(t, await postConfig(n, org.adminKey, 'other-flag'), 200, 'other-flag config');
  return { admin: org.adminKey, key: await evalKey(n, org.adminKey, 'web') };
}

t.test('ConfigurationChanged within 1 s of a change', async (t) => {
  const n = await startNode(t);
  const { admin, key } = await setUp(t, n);
  const { provider, client } = await providerClient(t, { url: n.url, key, stage: 'production' });
  const ctx = { targetingKey: 'u1', plan: 'beta' };
  t.equal(await client.getBooleanValue('live', true, ctx), true, 'beta is in: on');
  t.equal(await client.getBooleanValue('live', true, { targetingKey: 'u1' }), false, 'default off');

  const expectChange = async (what: string, write: () => Promise<unknown>, flags: string[]) => {
    const started = Date.now();
    const event = nextEvent(provider, ProviderEvents.ConfigurationChanged, 1000);
    await write();
    const got = await event;
    t.ok(got !== null, `${what}: ConfigurationChanged after ${got === null ? 'more than 1000' : got.at - started} ms`);
    t.same([...(got?.details?.flagsChanged ?? [])].sort(), flags, `${what}: flagsChanged ${flags.join(', ')} `);
  };
  await expectChange('a configuration change', () => postConfig(n, admin, 'live', { defaultVariantKey: 'on', rules: betaRule }), ['live']);
  t.equal(await client.getBooleanValue('live', false, { targetingKey: 'u1' }), true, 'the new default answers at once');
  await expectChange(
    'a segment change',
    async () => must(t, await n.req('PUT', '/api/segments/beta', { key: admin, body: { conditions: [{ field: 'plan', operator: '==', value: 'pro' }] } }), 200, 'segment'),
    ['live', 'other-flag'],
  );
  t.match(await client.getBooleanDetails('live', false, ctx), { value: true, flagMetadata: { reasonCode: 'default' } }, 'beta no longer matches: the default, on');
  await expectChange('a kill switch', () => setKillSwitch(n, admin, [{ flag: 'live' }]), ['live', 'other-flag']);
  const killed = await client.getBooleanDetails('live', true, ctx);
  t.match(killed, { value: true, reason: 'DISABLED', flagMetadata: { reasonCode: 'killswitch' } }, 'killed: DISABLED, no variant, the code default');
  await expectChange('a new flag', () => postFlag(n, admin, 'brand-new'), ['brand-new']);
  await expectChange('a deleted flag', () => n.req('DELETE', '/api/flags/brand-new', { key: admin }), ['brand-new']);
  t.equal((await client.getBooleanDetails('brand-new', false, ctx)).errorCode, 'FLAG_NOT_FOUND', 'the deleted flag is gone');

  // After changes applied in place (flags, segments) and a rebuild (the kill switch), the answers are still the node's.
  await expectChange('the kill switch lifted', () => setKillSwitch(n, admin, []), ['live', 'other-flag']);
  await expectChange('a segment change again', () => n.req('PUT', '/api/segments/beta', { key: admin, body: { conditions: [{ field: 'plan', operator: 'in', value: ['beta', 'pro'] }] } }), ['live', 'other-flag']);
  await expectChange('a rule change', () => postConfig(n, admin, 'other-flag', { rules: [{ priority: 1, conditions: [{ field: 'age', operator: '>', value: 30 }], allocations: [{ variantKey: 'on', percentage: 50 }, { variantKey: 'off', percentage: 50 }] }] }), ['other-flag']);
  let compared = 0;
  for (const flag of ['live', 'other-flag']) {
    for (const context of [{ targetingKey: 'u1' }, { targetingKey: 'u2', plan: 'pro' }, { targetingKey: 'u3', plan: 'beta', age: 40 }, { targetingKey: 'u4', age: 41 }, { targetingKey: 'u5', age: 42 }]) {
      const d = await client.getBooleanDetails(flag, false, context);
      const o = (await n.req('POST', `/ofrep/v1/evaluate/flags/${flag}`, { key, body: { context: { ...context, stage: 'production' } } })).body;
      t.same({ value: d.value, variant: d.variant, reason: d.reason, reasonCode: d.flagMetadata.reasonCode }, { value: o.value, variant: o.variant, reason: o.reason, reasonCode: o.metadata.reasonCode }, `${flag} ${JSON.stringify(context)}: the node's answer`);
      compared++;
    }
  }
  t.equal(compared, 10);
});

t.test('reconnects by itself after the node restarts, with backoff', async (t) => {
  const node = await restartable(t);
  const first = await node.start();
  const { admin, key } = await setUp(t, first);
  // Count the provider's stream connections (it calls the global fetch).
  const realFetch = globalThis.fetch;
  const attempts: number[] = [];
  globalThis.fetch = ((input: any, init?: any) => {
    if (String(input).startsWith(`${node.url}/sdk/v1/stream`)) attempts.push(Date.now());
    return realFetch(input, init);
  }) as typeof fetch;
  t.teardown(() => void (globalThis.fetch = realFetch));
  const { provider, client } = await providerClient(t, { url: node.url, key, stage: 'production', minReconnectDelayMs: 50, maxReconnectDelayMs: 800 });
  t.ok(await eventually(() => attempts.length === 1, 1000), 'following the stream');

  const stale = nextEvent(provider, ProviderEvents.Stale, 3000);
  await first.close();
  t.ok(await stale, 'STALE when the stream is lost');
  t.equal(client.providerStatus, 'STALE');
  const during = await client.getBooleanDetails('live', true, { targetingKey: 'u1', plan: 'beta' });
  t.match(during, { value: true, reason: 'TARGETING_MATCH', flagMetadata: { reasonCode: 'rule_matched' } }, 'node down: answers from the held data');
  t.notOk(during.errorCode, 'no error');

  await new Promise((r) => setTimeout(r, 3000));
  const down = attempts.slice(1);
  const gaps = down.slice(1).map((x, i) => x - down[i]);
  t.ok(down.length >= 4 && down.length <= 12, `${down.length} reconnection attempts in 3 s (gaps ${gaps.join(', ')} ms)`);
  t.ok(gaps.slice(3).every((g) => g >= 200), 'the delay grows (from 50 ms, doubling, jittered)');
  t.ok(gaps.every((g) => g <= 800 + 400), 'and stays under its cap (800 ms, with room for a busy machine)');

  // READY within 3 s of the node being up again (its reconnection delay is capped at 800 ms). The
  // event is awaited from before the start, which takes seconds of its own on a busy machine.
  const ready = nextEvent(provider, ProviderEvents.Ready, 60_000);
  const second = await node.start();
  const up = Date.now();
  const back = await ready;
  t.ok(back !== null && back.at - up <= 3000, `READY again ${back === null ? '(not within 60 s)' : `${back.at - up} ms after the node was up`}`);
  t.equal(client.providerStatus, 'READY');
  const changed = nextEvent(provider, ProviderEvents.ConfigurationChanged, 1000);
  must(t, await postConfig(second, admin, 'live', { defaultVariantKey: 'on' }), 200, 'a change on the restarted node');
  t.ok(await changed, 'ConfigurationChanged from the restarted node');
  t.equal(await client.getBooleanValue('live', false, { targetingKey: 'u1' }), true, 'the change answers');
});

t.test('cacheFile: starts STALE from the cache when the node is down, READY when it is back', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'vexil-provider-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const cacheFile = join(dir, 'flags.json');
  const node = await restartable(t);
  const first = await node.start();
  const { admin, key } = await setUp(t, first);
  must(t, await postConfig(first, admin, 'live', { defaultVariantKey: 'on' }), 200, 'live on');
  const one = await providerClient(t, { url: node.url, key, stage: 'production', cacheFile });
  t.ok(await eventually(() => existsSync(cacheFile), 1000), 'the cache file is written');
  const expected = await one.client.getBooleanDetails('live', false, { targetingKey: 'u1' });
  await OpenFeature.clearProviders(one.domain);
  await first.close();

  const { provider, client } = await providerClient(t, { url: node.url, key, stage: 'production', cacheFile, minReconnectDelayMs: 50, maxReconnectDelayMs: 300, requestTimeoutMs: 1000 });
  t.ok(await eventually(() => client.providerStatus === 'STALE', 1000), `node down: ${client.providerStatus}`);
  const cached = await client.getBooleanDetails('live', false, { targetingKey: 'u1' });
  t.same(cached, expected, 'the same answer from the cache');
  t.equal(await client.getBooleanValue('live', false, { targetingKey: 'u2', plan: 'beta' }), true);

  const ready = nextEvent(provider, ProviderEvents.Ready, 60_000);
  const second = await node.start();
  const up = Date.now();
  const back = await ready;
  t.ok(back !== null && back.at - up <= 3000, `READY when the node is back (${back === null ? 'not within 60 s' : `${back.at - up} ms after it was up`})`);
  t.equal(client.providerStatus, 'READY');
  const changed = nextEvent(provider, ProviderEvents.ConfigurationChanged, 1000);
  must(t, await postConfig(second, admin, 'live', { defaultVariantKey: 'off' }), 200, 'a change');
  t.ok(await changed, 'then follows the stream');
  t.equal(await client.getBooleanValue('live', true, { targetingKey: 'u1' }), false);
});

t.test('no node and no cache: code defaults, never throws; READY once the node is up', async (t) => {
  const node = await restartable(t);
  const { provider, client } = await providerClient(t, { url: node.url, key: 'not-yet', stage: 'production', minReconnectDelayMs: 50, maxReconnectDelayMs: 300, requestTimeoutMs: 500 });
  t.equal(client.providerStatus, 'ERROR', 'initialize failed: ERROR');
  const d = await client.getBooleanDetails('live', true, { targetingKey: 'u1' });
  t.match(d, { value: true, reason: 'ERROR' }, `the code default (${d.errorCode})`);
  t.equal(provider.resolve('live', 'x', { targetingKey: 'u1' }, 'string').errorCode, 'PROVIDER_NOT_READY', 'the provider itself: PROVIDER_NOT_READY');

  const n = await node.start();
  const { key } = await setUp(t, n);
  const two = await providerClient(t, { url: node.url, key, stage: 'production' });
  t.equal(two.client.providerStatus, 'READY', 'a provider with a valid key is READY');
  t.equal(await two.client.getBooleanValue('live', true, { targetingKey: 'u1' }), false);
  await n.close();
  const gone = await two.client.getBooleanDetails('live', true, { targetingKey: 'u1', plan: 'beta' });
  t.match(gone, { value: true, reason: 'TARGETING_MATCH' }, 'server gone: still answers');
});
