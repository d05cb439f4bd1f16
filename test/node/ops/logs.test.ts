/**
 * Logs (README.md, "Logs"): JSON lines from pino, one access line per request at debug with the route
 * template, status, duration and request id; never a key value, token or evaluation context, even
 * at debug through a full scenario of keys created, rotated, evaluations and errors.
 */
import t from 'tap';
import { createFlag, createKey, evaluate, HEX64_ANYWHERE, OPERATOR_TOKEN, operatorRequest, randomKey, startTestNode, upsertConfig } from '../../helpers/node.js';
import { gql } from '../../helpers/graphql.js';
import { createLogger } from '../../../src/util/log.js';

const METRICS_TOKEN = 'metrics-token-for-the-log-test-1234';

t.test('a full scenario at debug level: no key value, token or context in the log', async (t) => {
  const lines: string[] = [];
  const n = await startTestNode(t, {
    env: { VEXIL_LOG_LEVEL: 'debug', VEXIL_OPERATOR_TOKEN: OPERATOR_TOKEN, VEXIL_METRICS_TOKEN: METRICS_TOKEN },
    start: { log: createLogger('debug', {}, (l) => lines.push(l)) },
  });
  const issued: string[] = [n.adminKey, OPERATOR_TOKEN, METRICS_TOKEN];
  const contextMarkers = ['ctx-secret-country-7731', 'ctx-nested-secret-4410', 'user-id-secret-9921'];

  t.equal((await createFlag(n, 'log-flag')).status, 201);
  t.equal((await upsertConfig(n, 'log-flag', { rules: [{ priority: 1, conditions: [{ field: 'country', operator: '==', value: 'ctx-secret-country-7731' }], allocations: [{ variantKey: 'on', percentage: 100 }] }] })).status, 200);
  const evalKey = await createKey(n, { permissions: ['CanEvaluate'], application: 'default' });
  issued.push(evalKey);
  const created = await n.req('POST', '/api/keys', { key: n.adminKey, body: { name: 'rotating', permissions: ['CanRead'] } });
  t.equal(created.status, 201);
  issued.push(created.body.key);
  const rotated = await n.req('POST', `/api/keys/${created.body.id}/rotate`, { key: n.adminKey });
  t.equal(rotated.status, 200);
  issued.push(rotated.body.key);
  t.equal((await n.req('GET', '/api/flags', { key: created.body.key })).status, 401, 'the old value is refused');
  t.equal((await n.req('GET', '/api/flags', { key: rotated.body.key })).status, 200);
  const gqlKey = await gql(n, n.adminKey, 'mutation { createManagementKey(input: {name: "g", permissions: [CanRead]}) { key } }');
  issued.push(gqlKey.body.data?.createManagementKey?.key);
  const org = await operatorRequest(n, 'POST', '/organizations', { name: 'other-org', environments: ['production'], applications: ['default'] });
  t.equal(org.status, 201);
  issued.push(org.body.adminKey);

  const ctx = { country: 'ctx-secret-country-7731', nested: { deep: 'ctx-nested-secret-4410' } };
  const hit = await evaluate(n, evalKey, 'log-flag', { userId: 'user-id-secret-9921', stage: 'production', context: ctx }, true);
  t.equal(hit.body.reason?.code, 'rule_matched');
  t.equal((await gql(n, evalKey, 'query($c: Any) { evaluate(key: "log-flag", userId: "user-id-secret-9921", stage: "production", context: $c) { key } }', { c: ctx })).status, 200);
  // Errors: a wrong key, a bad body, a missing flag, a too-large body, a wrong operator token, a bad metrics token.
  const wrong = randomKey();
  issued.push(wrong);
  t.equal((await evaluate(n, wrong, 'log-flag', { userId: 'u', stage: 'production' })).status, 401);
  t.equal((await n.req('POST', '/flags/log-flag', { key: evalKey, raw: '{"userId": "user-id-secret-9921", "context": {"x": "ctx-nested-secret-4410"}', headers: { 'content-type': 'application/json' } })).status, 400);
  t.equal((await evaluate(n, evalKey, 'nope', { userId: 'user-id-secret-9921', stage: 'production', context: ctx })).status, 404);
  t.equal((await n.req('POST', '/api/flags', { key: n.adminKey, raw: 'x'.repeat((1 << 20) + 1), headers: { 'content-type': 'application/json' } })).status, 413);
  t.equal((await operatorRequest(n, 'POST', '/organizations', { name: 'x' }, 'wrong-operator-token-0000000')).status, 401);
  t.equal((await n.req('GET', '/metrics', { headers: { authorization: `Bearer ${METRICS_TOKEN}x` } })).status, 401);
  t.equal((await n.req('GET', '/metrics', { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).status, 200);
  t.equal((await n.req('GET', '/readyz', { headers: { 'x-request-id': 'trace-me-123' } })).status, 200);
  await n.close();

  const log = lines.join('\n');
  t.ok(lines.length > 20, `captured ${lines.length} lines`);
  for (const v of issued) t.equal(typeof v === 'string' && v.length > 0 && !log.includes(v), true, `issued secret ${v?.slice(0, 6)}… is absent from the log`);
  t.notOk(HEX64_ANYWHERE.test(log), 'no 64-hex value at all');
  for (const m of contextMarkers) t.notOk(log.includes(m), `context or user id ${m} is absent`);

  const parsed = lines.map((l) => JSON.parse(l));
  t.ok(parsed.every((p) => typeof p.level === 'string' && typeof p.time === 'string' && typeof p.msg === 'string'), 'every line is JSON with level, time, msg');
  const access = parsed.filter((p) => p.msg === 'request');
  t.ok(access.length >= 18, `an access line per request (${access.length})`);
  t.ok(access.every((p) => p.level === 'debug' && p.component === 'http'), 'access lines at debug from the http component');
  t.ok(access.every((p) => typeof p.reqId === 'string' && typeof p.ms === 'number' && typeof p.status === 'number'), 'with request id, duration and status');
  t.ok(access.some((p) => p.route === '/flags/:name' && p.method === 'POST' && p.status === 200), 'route is the template');
  t.ok(access.some((p) => p.route === '/api/keys/:id/rotate'), 'templates for parameter routes');
  t.notOk(access.some((p) => String(p.route).includes('log-flag')), 'never the raw path');
  t.ok(access.some((p) => p.route === '/readyz' && p.reqId === 'trace-me-123'), "the client's request id is logged");
  t.ok(access.some((p) => p.status === 413) && access.some((p) => p.status === 401), 'errors are logged too');
});

t.test('info level: no access lines for 2xx-4xx; pino redacts credential fields', async (t) => {
  const lines: string[] = [];
  const n = await startTestNode(t, { env: { VEXIL_LOG_LEVEL: 'info' }, start: { log: createLogger('info', {}, (l) => lines.push(l)) } });
  t.equal((await n.req('GET', '/api/flags', { key: n.adminKey })).status, 200);
  t.equal((await n.req('GET', '/nowhere')).status, 404);
  t.notOk(lines.some((l) => JSON.parse(l).msg === 'request'), 'no access line at info for 200 and 404');

  const out: string[] = [];
  const log = createLogger('info', { component: 'test' }, (l) => out.push(l)).child({ sub: 'x' });
  log.info('with secrets', { headers: { 'x-management-key': 'k1-secret', authorization: 'Bearer k2-secret', 'x-api-key': 'k3-secret', 'x-operator-token': 'k4-secret' }, key: 'k5-secret', adminKey: 'k6-secret' });
  const line = JSON.parse(out[0]);
  t.equal(line.component, 'test');
  t.equal(line.sub, 'x', 'child bindings');
  t.notOk(/k\d-secret/.test(out[0]), 'every credential field is redacted');
  t.equal(line.headers.authorization, '[redacted]');
  log.error('boom', { err: new Error('bad thing') });
  t.match(JSON.parse(out[1]).err, { message: 'bad thing', type: 'Error' }, 'errors serialised by pino');
  t.equal(JSON.parse(out[1]).level, 'error');
});
