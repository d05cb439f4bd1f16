/**
 * GET /metrics (README.md, "Metrics"), scraped over real HTTP and read with a Prometheus text parser:
 * counters move by exactly what the test did, evaluations are counted by reason whichever thread
 * ran them (worker counts survive a worker's death), labels carry no flag name, user id or key.
 */
import t from 'tap';
import { evaluate, startTestNode } from '../../helpers/node.js';
import { delta, DURATION, EVALS, REASONS, reasonDeltas, REQS, scrape, seedReasonFlags as seed, TWO_EVALS } from '../../helpers/metrics.js';
import { gql } from '../../helpers/graphql.js';

t.test('front thread: REST and GraphQL evaluations, requests and durations by route template', async (t) => {
  const n = await startTestNode(t);
  const ek = await seed(t, n);
  const s0 = await scrape(n);
  for (const r of REASONS) t.ok(s0.families.get(EVALS)?.metrics.some((m) => m.labels?.reason === r), `reason ${r} is exposed from the start`);

  for (let i = 0; i < 3; i++) t.equal((await evaluate(n, ek, 'checkout-flag', { userId: `user-rest-${i}`, stage: 'production' })).status, 200);
  for (let i = 0; i < 2; i++) t.equal((await evaluate(n, ek, 'dark-flag', { userId: `user-rest-d${i}`, stage: 'production' })).status, 200);
  t.equal((await evaluate(n, ek, 'missing-flag', { userId: 'user-404', stage: 'production' })).status, 404);
  t.equal((await evaluate(n, ek, 'checkout-flag', { stage: 'production' })).status, 400);
  const g = await gql(n, ek, TWO_EVALS);
  t.equal(g.status, 200);
  t.equal(g.body.data?.a?.reason?.code, 'default');
  t.equal((await n.req('GET', '/no/such/path')).status, 404);

  const s1 = await scrape(n);
  t.same(reasonDeltas(s0, s1), { default: 4, config_disabled: 3 }, 'evaluations by reason: 3+1 default, 2+1 config_disabled, none for 404/400');
  const route = { route: '/flags/:name', method: 'POST' };
  t.equal(delta(s0, s1, REQS, { ...route, status: '200' }), 5, '5 answered 200 on /flags/:name');
  t.equal(delta(s0, s1, REQS, { ...route, status: '404' }), 1, '1 answered 404 on /flags/:name');
  t.equal(delta(s0, s1, REQS, { ...route, status: '400' }), 1, '1 answered 400 on /flags/:name');
  t.equal(s1.count(DURATION, route) - s0.count(DURATION, route), 7, 'the duration histogram observed all 7');
  t.equal(delta(s0, s1, REQS, { route: '/api/graphql', method: 'POST', status: '200' }), 1, 'one GraphQL request');
  t.equal(delta(s0, s1, REQS, { route: '(unmatched)', status: '404' }), 1, 'an unknown path is labelled (unmatched), not by its raw path');
  t.equal(delta(s0, s1, REQS, { route: '/metrics', method: 'GET', status: '200' }), 1, 'the first scrape itself');

  const labels = s1.labelValues();
  for (const secret of ['checkout-flag', 'dark-flag', 'missing-flag', 'user-rest-0', 'user-gql-1', ek, n.adminKey, '/no/such/path']) {
    t.notOk(labels.some((v) => v.includes(secret)), `no label value holds ${secret.length === 64 ? 'a key value' : secret}`);
  }
  t.notOk(s1.text.includes(ek) || s1.text.includes(n.adminKey), 'no key value anywhere in the exposition');
  t.ok(labels.filter((v) => v.startsWith('/')).every((v) => !v.includes('flag') || v === '/flags/:name' || v.startsWith('/api/flags')), 'routes are templates');

  t.equal(s1.value('vexil_cluster_nodes'), 1, 'one node');
  t.equal(s1.value('vexil_bus_connected'), 1, 'the local bus counts as connected');
  t.equal(s1.value('vexil_eval_pool_queue_depth'), 0, 'nothing queued');
  const age = s1.value('vexil_snapshot_age_seconds');
  t.ok(age >= 0 && age < 60, `snapshot age ${age}s`);
  for (const m of ['process_cpu_user_seconds_total', 'process_resident_memory_bytes', 'nodejs_eventloop_lag_seconds', 'nodejs_heap_size_used_bytes']) {
    t.ok(s1.families.has(m), `default metric ${m}`);
  }
  t.equal(s1.families.get(DURATION)?.type, 'HISTOGRAM');
  t.equal(s1.families.get(EVALS)?.type, 'COUNTER');
});

t.test('explainEvaluation is not evaluation traffic', async (t) => {
  const n = await startTestNode(t);
  await seed(t, n);
  const s0 = await scrape(n);
  const q = '{ explainEvaluation(key: "checkout-flag", userId: "u-explain", stage: "production") { key reason { code } } }';
  const r = await gql(n, n.adminKey, q);
  t.equal(r.body.data?.explainEvaluation?.reason?.code, 'default', 'the explanation answered');
  const s1 = await scrape(n);
  t.same(reasonDeltas(s0, s1), {}, 'no evaluation counted');
});

t.test('VEXIL_METRICS_TOKEN: Authorization Bearer required', async (t) => {
  const token = 'metrics-token-0123456789abcdef';
  const n = await startTestNode(t, { env: { VEXIL_METRICS_TOKEN: token } });
  const none = await n.req('GET', '/metrics');
  t.equal(none.status, 401, 'no token: 401');
  t.match(none.headers.get('content-type') ?? '', /^application\/problem\+json/);
  t.equal(none.body.code, 'UNAUTHENTICATED');
  t.equal((await n.req('GET', '/metrics', { headers: { authorization: 'Bearer wrong-token-0123456789' } })).status, 401, 'wrong token: 401');
  t.equal((await n.req('GET', '/metrics', { headers: { authorization: token } })).status, 401, 'token without Bearer: 401');
  t.equal((await n.req('GET', '/metrics', { key: n.adminKey })).status, 401, 'a Management Key is not the metrics token');
  const ok = await scrape(n, token);
  t.ok(ok.families.has(EVALS), 'the right token scrapes');
  t.notOk(ok.text.includes(token), 'the token is not exposed');
  t.equal((await n.req('GET', '/livez')).status, 200, 'health checks need no token');
});

