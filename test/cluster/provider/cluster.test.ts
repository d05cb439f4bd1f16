/**
 * The in-process provider on two nodes sharing one PostgreSQL and one NATS (docs/feed.md, "The
 * stream": within 1 s, on every node): a change written on node A reaches a provider connected to
 * node B as `ConfigurationChanged` within 1 s, and its answers follow. Runs when DATABASE_URL and
 * NATS_URL are set.
 */
import t from 'tap';
import { OpenFeature, ProviderEvents } from '@openfeature/server-sdk';
import { twoNodesWithSharedFlag, until } from '../../helpers/cluster.js';
import { evaluate, upsertConfig } from '../../helpers/node.js';
import { nextEvent, providerClient } from '../../helpers/provider.js';

const skip = !process.env.DATABASE_URL || !process.env.NATS_URL ? 'DATABASE_URL and NATS_URL are needed: cluster suite skipped' : false;

t.teardown(() => OpenFeature.close());

t.test('a change on node A reaches a provider on node B', { skip }, async (t) => {
  const { a, b, ek } = await twoNodesWithSharedFlag(t);
  // The flag was written on A: B has it once the bus brought it (test/cluster/propagation.test.ts
  // times that). Only then is B's first feed the state this test starts from.
  const onB = await until(() => evaluate(b, ek, 'shared', { userId: 'u1', stage: 'production' }), (r) => r.status === 200 && r.body.key === 'on');
  t.equal(onB.body.key, 'on', 'node B has the flag written on node A');
  const { provider, client } = await providerClient(t, { url: b.url, key: ek, stage: 'production' });
  t.equal(client.providerStatus, 'READY', 'connected to node B');
  t.equal(await client.getBooleanValue('shared', false, { targetingKey: 'u1' }), true, 'shared: on');
  for (let i = 0; i < 3; i++) {
    const variant = i % 2 === 0 ? 'off' : 'on';
    const changed = nextEvent(provider, ProviderEvents.ConfigurationChanged, 1000);
    const started = Date.now();
    t.equal((await upsertConfig(a, 'shared', { defaultVariantKey: variant })).status, 200, `change ${i + 1} on node A`);
    const ev = await changed;
    t.ok(ev, `ConfigurationChanged on B's provider after ${ev === null ? 'more than 1000' : ev.at - started} ms`);
    t.same(ev?.details?.flagsChanged, ['shared'], 'flagsChanged: shared');
    const d = await client.getBooleanDetails('shared', variant === 'off', { targetingKey: 'u1' });
    t.match(d, { value: variant === 'on', variant, flagMetadata: { reasonCode: 'default' } }, `answers ${variant}`);
  }
});
