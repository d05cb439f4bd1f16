/**
 * The provider against a scripted feed server (docs/feed.md, "Order and gaps"): a `change` that
 * does not follow the version held is not applied; the provider reloads at once through a new
 * stream (no backoff) and takes the new `snapshot`, with `ConfigurationChanged`; the key goes in
 * `X-API-Key`; a stream answered 401 emits an error event and is retried.
 */
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { OpenFeature, ProviderEvents } from '@openfeature/server-sdk';
import type { Flag, FlagConfig, Organization } from '../../../src/domain/types.js';
import { buildSnapshot } from '../../../src/engine/index.js';
import { feedBody, feedParts } from '../../../src/feed/feed.js';
import { nextEvent, providerClient } from '../../helpers/provider.js';

t.teardown(() => OpenFeature.close());

/** The feed body of one boolean flag `f` whose production default is `variant`, at `version`. */
function body(version: number, variant: 'on' | 'off'): string {
  const org: Organization = { id: 'o1', name: 'acme', subscriptionActive: true, environments: ['production'], applications: ['web'], killSwitch: [], version };
  const flag: Flag = {
    name: 'f',
    project: 'web',
    type: 'boolean',
    description: null,
    tags: [],
    isArchived: false,
    variants: [
      { key: 'on', value: true, valueType: 'boolean' },
      { key: 'off', value: false, valueType: 'boolean' },
    ],
    environments: ['production'],
    dependencies: [],
    createdAt: '2026-01-01T00:00:00.000Z',
    updatedAt: '2026-01-01T00:00:00.000Z',
  };
  const config: FlagConfig = { stage: 'production', clientId: null, enabled: true, defaultVariantKey: variant, rolloutPercentage: 100, rules: [], activeFrom: null, activeUntil: null, enrollmentCutoff: null };
  return feedBody(feedParts(buildSnapshot(org, [flag], new Map([['f', [config]]])), 'web', 'production'));
}

t.test('a gap reloads at once through a new stream', async (t) => {
  const streams: { at: number; key: string | undefined }[] = [];
  let refuse = false;
  const open = new Set<ServerResponse>();
  const server = createServer((req, res) => {
    if (req.url === '/sdk/v1/snapshot?stage=production') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(body(1, 'off'));
      return;
    }
    streams.push({ at: Date.now(), key: req.headers['x-api-key'] as string | undefined });
    if (refuse) {
      res.writeHead(401, { 'content-type': 'application/problem+json' }).end('{}');
      return;
    }
    open.add(res);
    res.on('close', () => open.delete(res));
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(': connected\nretry: 2000\n\n');
    if (streams.length === 1) {
      res.write(`event: snapshot\ndata: ${body(1, 'off')}\n\n`);
      // A change that follows version 3 while the provider holds 1: a gap.
      setTimeout(() => res.write(`event: change\ndata: {"format":1,"version":5,"follows":3,"flags":[]}\n\n`), 100);
    } else {
      res.write(`event: snapshot\ndata: ${body(6, 'on')}\n\n`);
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => {
    for (const res of open) res.destroy();
    server.close();
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const { provider, client } = await providerClient(t, { url, key: 'the-key', stage: 'production', minReconnectDelayMs: 5000, maxReconnectDelayMs: 5000 });
  t.equal(await client.getBooleanValue('f', true, { targetingKey: 'u' }), false, 'version 1: off');
  const changed = await nextEvent(provider, ProviderEvents.ConfigurationChanged, 2000);
  t.ok(changed, 'ConfigurationChanged after the reload');
  t.same(changed?.details?.flagsChanged, ['f'], 'flagsChanged: f');
  t.equal(streams.length, 2, 'a second stream');
  t.ok(streams[1].at - streams[0].at < 1000, `at once, not after the 5 s backoff (${streams[1].at - streams[0].at} ms)`);
  t.same(streams.map((s) => s.key), ['the-key', 'the-key'], 'the key in X-API-Key');
  t.equal(provider.version, 6, 'holds version 6');
  t.equal(await client.getBooleanValue('f', false, { targetingKey: 'u' }), true, 'version 6: on');

  // The stream ends; reconnecting gets 401: an error event, and the provider keeps its data.
  refuse = true;
  const error = nextEvent(provider, ProviderEvents.Error, 7000);
  for (const res of open) res.end();
  t.ok(await error, 'an error event on 401');
  t.equal(await client.getBooleanValue('f', false, { targetingKey: 'u' }), true, 'still answers from the data held');
});
