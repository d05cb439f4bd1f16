/**
 * The provider's context mapping stays right as the data changes (docs/feed.md; docs/ofrep.md,
 * "Requests"): the provider hands the engine the OpenFeature context as it is for flags whose
 * conditions read no reserved property (`targetingKey`, `stage`, `clientId`) and remembers that per
 * flag of the held data. A change that makes a flag read one (a rule of its own, or a segment it
 * names) must be seen at once: a rule on `clientId` never matches, before and after the change, as
 * on the node.
 */
import t from 'tap';
import { ProviderEvents } from '@openfeature/server-sdk';
import { createOrg, evalKey, must, postConfig, postFlag, startNode } from '../../helpers/flags.js';
import { nextEvent, providerClient } from '../../helpers/provider.js';

t.test('a change that makes a flag read a reserved property is applied at the next evaluation', async (t) => {
  const n = await startNode(t);
  const org = await createOrg(n);
  const admin = org.adminKey;
  const on = [{ variantKey: 'on', percentage: 100 }];
  must(t, await n.req('POST', '/api/segments', { key: admin, body: { name: 'pros', conditions: [{ field: 'plan', operator: '==', value: 'pro' }] } }), 201, 'segment');
  must(t, await postFlag(n, admin, 'direct'), 201, 'flag direct');
  must(t, await postConfig(n, admin, 'direct', { rules: [{ priority: 1, conditions: [{ field: 'plan', operator: '==', value: 'pro' }], allocations: on }] }), 200, 'direct config');
  must(t, await postFlag(n, admin, 'via-segment'), 201, 'flag via-segment');
  must(t, await postConfig(n, admin, 'via-segment', { rules: [{ priority: 1, conditions: [], segments: ['pros'], allocations: on }] }), 200, 'via-segment config');
  const key = await evalKey(n, admin, 'web', 'production');
  const { provider, client } = await providerClient(t, { url: n.url, key, stage: 'production' });

  const ctx = { targetingKey: 'u1', plan: 'pro', clientId: 'ios', stage: 'production' };
  const answer = async (flag: string) => (await client.getBooleanDetails(flag, false, ctx)).flagMetadata.reasonCode;
  const node = async (flag: string) => (await n.req('POST', `/ofrep/v1/evaluate/flags/${flag}`, { key, body: { context: ctx } })).body.metadata.reasonCode;
  t.equal(await answer('direct'), 'rule_matched', 'plan == pro matches');
  t.equal(await answer('via-segment'), 'rule_matched', 'the segment matches');

  // The rule now asks for clientId == ios as well: clientId is no evaluation context, so it never matches.
  let changed = nextEvent(provider, ProviderEvents.ConfigurationChanged, 5000);
  must(t, await postConfig(n, admin, 'direct', { rules: [{ priority: 1, conditions: [{ field: 'plan', operator: '==', value: 'pro' }, { field: 'clientId', operator: '==', value: 'ios' }], allocations: on }] }), 200, 'direct reads clientId');
  t.ok(await changed, 'the change arrived');
  t.equal(await node('direct'), 'default', 'the node: a rule on clientId does not match');
  t.equal(await answer('direct'), 'default', 'the provider answers the same at once');

  changed = nextEvent(provider, ProviderEvents.ConfigurationChanged, 5000);
  must(t, await n.req('PUT', '/api/segments/pros', { key: admin, body: { conditions: [{ field: 'plan', operator: '==', value: 'pro' }, { field: 'stage', operator: '==', value: 'production' }] } }), 200, 'the segment reads stage');
  t.ok(await changed, 'the segment change arrived');
  t.equal(await node('via-segment'), 'default', 'the node: a segment on stage does not match');
  t.equal(await answer('via-segment'), 'default', 'the provider answers the same at once');
  t.equal(provider.resolve('via-segment', false, ctx, 'boolean').flagMetadata?.reasonCode, 'default', 'provider.resolve too');
});
