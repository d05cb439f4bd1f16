/**
 * The failed-authentication budget (VEXIL_RATE_LIMIT_AUTH_FAILURES; docs/limits.md) over real HTTP: every
 * 401 spends one unit of the client address's budget; past it, 429 RATE_LIMITED with Retry-After
 * and no key lookup (the negative cache does not grow); a key this node already authenticated is
 * still served from that address; the budget refills. The operator token and the /metrics token
 * spend the same budget. Then the AuthFailureBudget itself.
 */
import { request as httpRequest } from 'node:http';
import t from 'tap';
import { AuthFailureBudget } from '../../../src/auth/auth-failures.js';
import { createFlag, createKey, evaluate, expectProblem, randomKey, startTestNode, upsertConfig } from '../../helpers/node.js';

t.test('over HTTP', async (t) => {
  const n = await startTestNode(t, { env: { VEXIL_RATE_LIMIT_AUTH_FAILURES: '0.5' } });
  await createFlag(n, 'f');
  await upsertConfig(n, 'f', {});
  const known = await createKey(n, { permissions: ['CanEvaluate'], application: 'default' });
  const fresh = await createKey(n, { permissions: ['CanEvaluate'], application: 'default' });
  const body = { userId: 'u', stage: 'production' };
  t.equal((await evaluate(n, known, 'f', body)).status, 200, 'this node authenticates the key');
  const keys = n.node.runtime.keys;

  // 0.5 per second: a burst of one failure, refilled in 2 s (slow enough for a noisy machine).
  expectProblem(t, await evaluate(n, randomKey(), 'f', body), 401, 'UNAUTHENTICATED', 'the first bad key');
  const unknownBefore = keys.sizes.unknown;
  const over = await evaluate(n, randomKey(), 'f', body);
  expectProblem(t, over, 429, 'RATE_LIMITED', 'past the budget');
  t.equal(over.headers.get('retry-after'), '2', 'Retry-After: whole seconds until the budget refills');
  for (let i = 0; i < 20; i++) t.equal((await evaluate(n, randomKey(), 'f', body)).status, 429);
  t.equal(keys.sizes.unknown, unknownBefore, 'refused keys were not looked up (nothing new in the negative cache)');
  expectProblem(t, await n.req('POST', '/flags/f', { body }), 429, 'RATE_LIMITED', 'a missing key too');
  const gq = await n.req('POST', '/api/graphql', { key: randomKey(), body: { query: '{ __typename }' } });
  expectProblem(t, gq, 429, 'RATE_LIMITED', 'GraphQL');
  t.ok(gq.headers.get('retry-after'), 'GraphQL 429 carries Retry-After');
  expectProblem(t, await n.req('GET', '/api/flags', { key: randomKey() }), 429, 'RATE_LIMITED', 'REST management');

  const served = await evaluate(n, known, 'f', body);
  t.equal(served.status, 200, 'the key this node already authenticated is still served');
  t.equal((await n.req('GET', '/api/flags', { key: n.adminKey })).status, 200, 'so is the admin key');
  expectProblem(t, await evaluate(n, fresh, 'f', body), 429, 'RATE_LIMITED', 'a valid key this node has not seen waits like any other');

  await new Promise((r) => setTimeout(r, 1100 * Number(over.headers.get('retry-after'))));
  t.equal((await evaluate(n, fresh, 'f', body)).status, 200, 'after Retry-After the budget has refilled: the new key authenticates');
  expectProblem(t, await evaluate(n, randomKey(), 'f', body), 401, 'UNAUTHENTICATED', 'and a bad key is a 401 again');
});

t.test('a wrong operator token spends the same budget; past it even the right token waits', async (t) => {
  const operator = 'operator-token-for-this-test';
  const n = await startTestNode(t, { env: { VEXIL_RATE_LIMIT_AUTH_FAILURES: '0.5', VEXIL_OPERATOR_TOKEN: operator } });
  const org = (name: string, token: string) =>
    n.req('POST', '/api/operator/organizations', { headers: { 'x-operator-token': token }, body: { name, environments: ['production'], applications: ['web'] } });
  t.equal((await n.req('GET', '/api/flags', { key: n.adminKey })).status, 200, 'this node authenticates the admin key');
  expectProblem(t, await org('o1', 'wrong'), 401, 'UNAUTHENTICATED', 'the first wrong token');
  const over = await org('o1', 'wrong again');
  expectProblem(t, over, 429, 'RATE_LIMITED', 'the second, past a burst of one');
  t.equal(over.headers.get('retry-after'), '2', 'Retry-After: whole seconds until the budget refills');
  expectProblem(t, await org('o1', operator), 429, 'RATE_LIMITED', 'the right token is not compared while the address is over budget');
  expectProblem(t, await evaluate(n, randomKey(), 'f', { userId: 'u', stage: 'production' }), 429, 'RATE_LIMITED', 'and the budget is the one keys spend');
  t.equal((await n.req('GET', '/api/flags', { key: n.adminKey })).status, 200, 'a key this node already knows is still served');
  await new Promise((r) => setTimeout(r, 2200));
  const created = await org('o1', operator);
  t.equal(created.status, 201, 'after Retry-After the right token works');
  t.equal(created.body.name, 'o1', 'and created the organization once');
});

t.test('AuthFailureBudget', async (t) => {
  const clock = { ms: 0 };
  const b = new AuthFailureBudget(2, () => clock.ms, 3);
  t.equal(b.blocked('a'), 0, 'a new address is not blocked');
  b.spend('a');
  t.equal(b.blocked('a'), 0);
  b.spend('a');
  t.equal(b.blocked('a'), 1, 'burst of 2 spent: wait 1 s');
  b.spend('b');
  t.equal(b.blocked('b'), 0, 'addresses are separate');
  clock.ms = 500;
  t.equal(b.blocked('a'), 0, 'half a second refills one unit at 2/s');
  for (let i = 0; i < 10; i++) b.spend('a');
  t.equal(b.blocked('a'), 2, 'debt is capped at one burst: (1 - -2) / 2 s, rounded up');
  for (const x of ['c', 'd', 'e', 'f']) b.spend(x);
  t.ok(b.size <= 3, `bounded (${b.size} addresses)`);
});

/** GET /metrics from a chosen loopback source address (Linux routes all of 127/8 to lo). */
function metricsFrom(url: string, localAddress: string, token: string): Promise<{ status: number; body: string; retryAfter: string | undefined }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${url}/metrics`, { localAddress, headers: { authorization: `Bearer ${token}` } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, retryAfter: res.headers['retry-after'] as string | undefined }));
    });
    req.on('error', reject);
    req.end();
  });
}

for (const front of ['uws', 'node'] as const) {
  t.test(`${front} front: a wrong /metrics token spends the same budget; past it even the right token waits`, async (t) => {
    const token = 'metrics-token-for-the-budget-test';
    const n = await startTestNode(t, {
      env: { VEXIL_RATE_LIMIT_AUTH_FAILURES: '0.5', VEXIL_METRICS_TOKEN: token, ...(front === 'node' ? { VEXIL_HTTP_FRONT: 'node' } : {}) },
    });
    t.comment(`on the ${n.node.front.kind} front`);
    if (front === 'node') t.equal(n.node.front.kind, 'node');
    const metrics = (value: string | null) => n.req('GET', '/metrics', value === null ? {} : { headers: { authorization: `Bearer ${value}` } });
    t.equal((await n.req('GET', '/api/flags', { key: n.adminKey })).status, 200, 'this node authenticates the admin key');
    const first = await metrics('wrong-metrics-token-0123');
    expectProblem(t, first, 401, 'UNAUTHENTICATED', 'the first wrong token');
    t.equal(first.headers.get('www-authenticate'), 'Bearer realm="metrics"', 'a 401 names the scheme');
    const over = await metrics(null);
    expectProblem(t, over, 429, 'RATE_LIMITED', 'a missing token past a burst of one');
    t.equal(over.headers.get('retry-after'), '2', 'Retry-After: whole seconds until the budget refills');
    expectProblem(t, await metrics(token), 429, 'RATE_LIMITED', 'the right token is not compared while the address is over budget');
    expectProblem(t, await evaluate(n, randomKey(), 'f', { userId: 'u', stage: 'production' }), 429, 'RATE_LIMITED', 'and the budget is the one keys spend');
    t.equal((await n.req('GET', '/api/flags', { key: n.adminKey })).status, 200, 'a key this node already knows is still served');
    const elsewhere = await metricsFrom(n.url, '127.0.0.2', token);
    t.equal(elsewhere.status, 200, 'a scraper on another address is not affected');
    t.match(elsewhere.body, /vexil_evaluations_total/, 'and gets the metrics');
    t.equal((await metricsFrom(n.url, '127.0.0.2', 'wrong-metrics-token-0123')).status, 401, 'that address has its own budget');
    await new Promise((r) => setTimeout(r, 2200));
    t.equal((await metrics(token)).status, 200, 'after Retry-After the right token works from the first address');
  });
}
