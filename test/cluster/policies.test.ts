/**
 * Environment policies on a cluster (docs/change-requests.md, "Protecting an environment"): a
 * policy set on node A protects writes on node B at once (the guard reads the policy inside the
 * write's transaction), and lifting it on B frees writes on A at once; a write racing a policy
 * change is ordered with it by the organization's lock: it either committed before the policy
 * (its audit event comes first) or was refused.
 */
import t from 'tap';
import { busCluster } from '../helpers/cluster.js';
import { createFlag, upsertConfig, type TestNode } from '../helpers/node.js';

const skip = !process.env.DATABASE_URL || !process.env.NATS_URL ? 'DATABASE_URL and NATS_URL are needed: cluster suite skipped' : false;

t.setTimeout(120_000);

const policy = (n: TestNode, requiredApprovals: number) =>
  n.req('PUT', '/api/environments/production/policy', { key: n.adminKey, body: { requiredApprovals } });

t.test('a policy set on node A protects writes on node B at once', { skip }, async (t) => {
  const { nodes: [a, b] } = await busCluster(t, 2);
  t.equal((await createFlag(a, 'f')).status, 201);
  t.equal((await upsertConfig(a, 'f', { defaultVariantKey: 'off' })).status, 200);

  t.equal((await policy(a, 1)).status, 200);
  // No wait: the very next write on B is refused.
  const refused = await upsertConfig(b, 'f', { defaultVariantKey: 'on' });
  t.equal(refused.status, 409, refused.text);
  t.match(refused.body, { code: 'CONFLICT', reason: 'review_required', environment: 'production' });
  t.equal((await b.req('GET', '/api/environments/production/policy', { key: b.adminKey })).body.requiredApprovals, 1, 'B reads it');
  t.equal((await upsertConfig(b, 'f', { stage: 'development', defaultVariantKey: 'on' })).status, 200, 'development is free');

  // Lifted on B: A writes at once.
  t.equal((await policy(b, 0)).status, 200);
  t.equal((await upsertConfig(a, 'f', { defaultVariantKey: 'on' })).status, 200, 'A writes production at once');

  // Racing: protecting (even rounds) or lifting (odd rounds) on A against a write on B. The
  // organization's lock orders them: a write that committed is on the unprotected side of the
  // policy change (before a protect, after a lift), and a refused write recorded nothing.
  for (let i = 0; i < 6; i++) {
    const protect = i % 2 === 0;
    const [p, w] = await Promise.all([policy(a, protect ? 1 : 0), upsertConfig(b, 'f', { defaultVariantKey: protect ? 'off' : 'on' })]);
    t.equal(p.status, 200);
    const log = ((await a.req('GET', '/api/audit?limit=2', { key: a.adminKey })).body as { action: string }[]).map((e) => e.action);
    if (w.status === 200) {
      t.same(log, protect ? ['org.policy', 'config.upsert'] : ['config.upsert', 'org.policy'], `round ${i}: the write committed ${protect ? 'before the protection' : 'after the lift'}`);
    } else {
      t.equal(w.body.reason, 'review_required', `round ${i}: refused`);
      t.equal(log[0], 'org.policy', `round ${i}: the refused write recorded nothing`);
    }
  }
});
