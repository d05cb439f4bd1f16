/**
 * The failed-authentication budget (VEXIL_RATE_LIMIT_AUTH_FAILURES; docs/limits.md) over real HTTP: every
 * 401 spends one unit of the client address's budget; past it, 429 RATE_LIMITED with Retry-After
 * and no key lookup (the negative cache does not grow); a key this node already authenticated is
 * still served from that address; the budget refills. Under concurrency (200 parallel guesses) at
 * most the budget reaches the key lookup, and a new valid key gives its unit back. The operator
 * token and the /metrics token spend the same budget. Then the AuthFailureBudget itself.
 */
import { request as httpRequest } from 'node:http';
import t from 'tap';
import { AuthFailureBudget } from '../../../src/auth/auth-failures.js';
import { createFlag, createKey, evaluate, expectProblem, randomKey, startTestNode, upsertConfig } from '../../helpers/node.js';

t.setTimeout(300_000);

t.test('over HTTP', async (t) => {
  const n = await startTestNode(t, { env: { VEXIL_RATE_LIMIT_AUTH_FAILURES: '0.5' } });
  await createFlag(n, 'f');
  await upsertConfig(n, 'f', {});
  const known = await createKey(n, { permissions: ['CanEvaluate'], application: 'default' });
  const fresh = await createKey(n, { permissions: ['CanEvaluate'], application: 'default' });
  const body = { userId: 'u', stage: 'production' };
  const keys = n.node.runtime.keys;
  // Keys this node's actor creates are handed to its key cache (docs/cluster.md, "Management never
  // starves"): forgotten here, both are keys this node has not seen, as if another node made them.
  keys.clear();
  t.equal((await evaluate(n, known, 'f', body)).status, 200, 'this node authenticates the key');
  t.equal((await n.req('GET', '/api/flags', { key: n.adminKey })).status, 200, 'and the admin key');

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

t.test('under concurrency: parallel guesses cannot outrun the budget (issue 28)', async (t) => {
  const rate = 20;
  const n = await startTestNode(t, { env: { VEXIL_RATE_LIMIT_AUTH_FAILURES: String(rate) } });
  await createFlag(n, 'f');
  await upsertConfig(n, 'f', {});
  const fresh = [];
  for (let i = 0; i < 3; i++) fresh.push(await createKey(n, { permissions: ['CanEvaluate'], application: 'default' }));
  const body = { userId: 'u', stage: 'production' };
  const keys = n.node.runtime.keys;
  keys.clear(); // the keys this node's actor made, forgotten: looked up like keys made elsewhere
  // Every lookup of a hash the key cache does not answer from memory (the ask that reaches the database).
  let lookups = 0;
  const lookup = keys.lookup.bind(keys);
  keys.lookup = (hash: string) => {
    if (keys.peek(hash) === undefined) lookups++;
    return lookup(hash);
  };
  const unknownBefore = keys.sizes.unknown;

  const t0 = performance.now();
  const answers = await Promise.all(Array.from({ length: 200 }, () => evaluate(n, randomKey(), 'f', body)));
  const elapsedSec = (performance.now() - t0) / 1000;
  const statuses = answers.map((a) => a.status);
  const refused = answers.filter((a) => a.status === 429);
  // The budget refills at `rate` per second while the burst is under way: allow for it.
  const bound = rate + Math.ceil(rate * elapsedSec);
  t.comment(`200 parallel guesses in ${(elapsedSec * 1000).toFixed(0)} ms: ${lookups} looked up, ${statuses.filter((s) => s === 401).length} × 401, ${refused.length} × 429`);
  t.ok(lookups <= bound, `at most the burst (${rate}) plus the refill (${bound - rate}) reached the key lookup (${lookups})`);
  t.ok(keys.sizes.unknown - unknownBefore <= bound, 'and the negative cache grew by no more');
  t.same(new Set(statuses), new Set([401, 429]), 'every guess was a 401 or a 429');
  t.ok(refused.length >= 200 - bound, `the rest were refused with 429 (${refused.length})`);
  t.ok(refused.every((a) => Number(a.headers.get('retry-after')) >= 1), 'each 429 carries Retry-After');
  t.equal(statuses.filter((s) => s === 401).length, lookups, 'each lookup cost one 401, no more');

  // A valid key this node has not seen gives its reserved unit back: several in parallel, past a spent budget too once refilled.
  await new Promise((r) => setTimeout(r, 1100));
  const served = await Promise.all(fresh.map((k) => evaluate(n, k, 'f', body)));
  t.same(served.map((a) => a.status), [200, 200, 200], 'after a second, new valid keys are served');
  const guesses = await Promise.all(Array.from({ length: rate + 10 }, () => evaluate(n, randomKey(), 'f', body)));
  t.ok(guesses.filter((a) => a.status === 401).length >= rate - 2, 'their units were refunded: nearly a whole burst of guesses is looked up again');
  t.equal((await evaluate(n, fresh[0], 'f', body)).status, 200, 'a key this node holds is served past the budget');
});

t.test("a client's first parallel burst with its new valid key is served whole", async (t) => {
  const n = await startTestNode(t, { env: { VEXIL_RATE_LIMIT_AUTH_FAILURES: '2' } });
  await createFlag(n, 'f');
  await upsertConfig(n, 'f', {});
  const k = await createKey(n, { permissions: ['CanEvaluate'], application: 'default' });
  n.node.runtime.keys.clear(); // as if another node had made it: the first requests look it up
  const answers = await Promise.all(Array.from({ length: 50 }, () => evaluate(n, k, 'f', { userId: 'u', stage: 'production' })));
  t.same(new Set(answers.map((a) => a.status)), new Set([200]), '50 parallel first requests, a budget of 2: one lookup, one reservation, all 200');
});

t.test('a new valid key gives its unit back', async (t) => {
  const n = await startTestNode(t, { env: { VEXIL_RATE_LIMIT_AUTH_FAILURES: '0.5' } });
  await createFlag(n, 'f');
  await upsertConfig(n, 'f', {});
  const a = await createKey(n, { permissions: ['CanEvaluate'], application: 'default' });
  const b = await createKey(n, { permissions: ['CanEvaluate'], application: 'default' });
  n.node.runtime.keys.clear(); // as if another node had made them: each is looked up once
  const body = { userId: 'u', stage: 'production' };
  // A burst of one unit: without the refund, the second new key would wait 2 s.
  t.equal((await evaluate(n, a, 'f', body)).status, 200, 'a new key reserves the only unit, and gives it back');
  t.equal((await evaluate(n, b, 'f', body)).status, 200, 'so the next new key is looked up too');
  expectProblem(t, await evaluate(n, randomKey(), 'f', body), 401, 'UNAUTHENTICATED', 'a guess spends the unit');
  expectProblem(t, await evaluate(n, randomKey(), 'f', body), 429, 'RATE_LIMITED', 'and the next one waits');
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
