import t from 'tap';
import { createFlag, createKey, evaluate, startTestNode, upsertConfig } from '../helpers/node.js';

t.test('a flag created over REST evaluates for a user', async (t) => {
  const n = await startTestNode(t);
  t.equal((await createFlag(n, 'checkout')).status, 201);
  t.equal((await upsertConfig(n, 'checkout', { rules: [{ priority: 1, conditions: [{ field: 'country', operator: '==', value: 'NL' }], allocations: [{ variantKey: 'on', percentage: 100 }] }] })).status, 200);
  const ek = await createKey(n, { permissions: ['CanEvaluate'], application: 'default' });
  const r = await evaluate(n, ek, 'checkout', { userId: 'u1', stage: 'production', context: { country: 'NL' } }, true);
  t.equal(r.status, 200);
  t.same(r.body, { variant: true, key: 'on', reason: { code: 'rule_matched', message: r.body.reason.message, ruleId: r.body.reason.ruleId } });
  t.match(r.body.reason.message, /priority 1/);
});
