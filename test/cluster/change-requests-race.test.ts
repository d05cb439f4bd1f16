/**
 * Change requests on a cluster (docs/change-requests.md, "Applying"): two nodes on one PostgreSQL
 * race to apply two requests against the same target; exactly one wins, the other is a 409
 * conflict naming the target, and nothing of it is written. Requests on different targets both apply.
 */
import t from 'tap';
import { busCluster, until } from '../helpers/cluster.js';
import { createFlag, createKey, evaluate, upsertConfig } from '../helpers/node.js';
import { apply, auditLog, getCr, propose, toggle, upsert } from '../helpers/change-requests.js';

const skip = !process.env.DATABASE_URL || !process.env.NATS_URL ? 'DATABASE_URL and NATS_URL are needed: cluster suite skipped' : false;

t.setTimeout(240_000);

t.test('two nodes racing to apply against the same target: exactly one wins, the other is a conflict', { skip }, async (t) => {
  const { nodes: [a, b] } = await busCluster(t, 2);
  const key = a.adminKey;
  const ek = await createKey(a, { permissions: ['CanEvaluate'], application: 'default' });
  for (const f of ['f', 'g', 'h']) {
    t.equal((await createFlag(a, f)).status, 201);
    t.equal((await upsertConfig(a, f, { defaultVariantKey: 'off' })).status, 200);
  }
  for (let round = 0; round < 6; round++) {
    // Each round's changes differ from whatever the last round left: a no-op would leave the target as its base.
    const one = (await propose(a, key, [upsert('f', { defaultVariantKey: 'off', rolloutPercentage: 50 + round }), toggle('g', round % 2 === 1)], `one ${round}`)).body;
    const two = (await propose(b, key, [upsert('f', { defaultVariantKey: 'on', rolloutPercentage: 10 + round })], `two ${round}`)).body;
    const [ra, rb] = await Promise.all([apply(a, key, one), apply(b, key, two)]);
    const statuses = [ra.status, rb.status].sort();
    t.same(statuses, [200, 409], `round ${round}: one 200 and one 409 (${ra.status} ${rb.status})`);
    const loser = ra.status === 409 ? ra : rb;
    t.equal(loser.body.code, 'CONFLICT');
    t.match(loser.body.detail, /configuration of flag 'f' in 'production'/, 'the conflict names the target');
    const loserId = ra.status === 409 ? one.id : two.id;
    t.equal((await getCr(a, key, loserId)).body.state, 'open', 'the loser stays open');
    const events = (await auditLog(b, key)).filter((e) => e.changeRequestId === loserId);
    t.same(events.map((e) => e.action), ['change.create'], 'nothing of the loser written');
    for (const id of [one.id, two.id]) await a.req('POST', `/api/change-requests/${id}/close`, { key });
  }
  // Different targets: both apply, and both nodes evaluate both.
  const x = (await propose(a, key, [upsert('h', { defaultVariantKey: 'on' })])).body;
  const y = (await propose(b, key, [upsert('g', { defaultVariantKey: 'on', enabled: true })])).body;
  const both = await Promise.all([apply(a, key, x), apply(b, key, y)]);
  t.same(both.map((r) => r.status), [200, 200], 'different targets: both apply');
  for (const n of [a, b]) {
    for (const f of ['g', 'h']) {
      const r = await until(() => evaluate(n, ek, f, { userId: 'u', stage: 'production' }), (r) => r.body?.key === 'on', 3000);
      t.equal(r.body.key, 'on', `${n === a ? 'A' : 'B'} evaluates ${f}`);
    }
  }
});
