/**
 * Segments and scheduled changes together (docs/api.md, "Segments" and "Scheduled changes"): a
 * scheduled configuration keeps the segments its rules name, as scheduled (REST and GraphQL) and
 * as applied; evaluation follows.
 */
import t from 'tap';
import { createFlag, createKey, evaluate, startTestNode, upsertConfig } from '../../helpers/node.js';
import { inMs, listSchedules, postSchedule, settled } from '../../helpers/schedules.js';

t.test('a scheduled configuration keeps its rules\' segments', async (t) => {
  const n = await startTestNode(t);
  const admin = { key: n.adminKey };
  t.equal((await n.req('POST', '/api/segments', { ...admin, body: { name: 'beta', conditions: [{ field: 'plan', operator: '==', value: 'beta' }] } })).status, 201);
  t.equal((await createFlag(n, 'f')).status, 201);
  t.equal((await upsertConfig(n, 'f', { defaultVariantKey: 'off' })).status, 200);
  const ek = await createKey(n, { name: 'eval', permissions: ['CanEvaluate'], application: 'default' });
  const variant = async (plan: string) => (await evaluate(n, ek, 'f', { userId: 'u', stage: 'production', context: { plan } })).body.variant;
  t.equal(await variant('beta'), false, 'before: off');

  const rules = [{ priority: 1, conditions: [], segments: ['beta'], allocations: [{ variantKey: 'on', percentage: 100 }] }];
  const config = { stage: 'production', enabled: true, defaultVariantKey: 'off', rolloutPercentage: 100, rules };
  const r = await postSchedule(n, n.adminKey, 'f', { at: inMs(1500), stage: 'production', config });
  t.equal(r.status, 201, r.status === 201 ? 'scheduled' : r.text);
  t.same(r.body.config.rules[0].segments, ['beta'], 'the schedule shows the segments (REST)');
  t.same((await listSchedules(n, n.adminKey, 'f')).body[0].config.rules[0].segments, ['beta'], 'listed with them');
  const gql = await n.req('POST', '/api/graphql', { ...admin, body: { query: '{ flag(name: "f") { schedules { config { rules { segments } } } } }' } });
  t.same(gql.body, { data: { flag: { schedules: [{ config: { rules: [{ segments: ['beta'] }] } }] } } }, 'and over GraphQL (Rule.segments is non-null)');

  const s = await settled(n, n.adminKey, 'f', r.body.id, 6000);
  t.equal(s.status, 'applied', s.error ?? 'applied');
  const cfg = (await n.req('GET', '/api/flags/f', admin)).body.configs[0];
  t.same(cfg.rules[0].segments, ['beta'], 'the applied configuration keeps the segments');
  t.equal(await variant('beta'), true, 'in the segment: on');
  t.equal(await variant('free'), false, 'outside it: off (the rule did not lose its segment)');
});
