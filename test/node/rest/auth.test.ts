/**
 * Authentication order on every REST call (docs/api.md, "Order of checks"): a missing, malformed,
 * unknown or disabled key is 401 UNAUTHENTICATED; then an organization without subscription is 402
 * PAYMENT_REQUIRED; then the rate limit (test/node/rest/ratelimit.test.ts); then permission and scope
 * 403 FORBIDDEN. When several apply at once, the first in that order decides. Every rejected write
 * is followed by a read-back proving nothing changed.
 */
import t, { type Test } from 'tap';
import {
  createFlag,
  createKey,
  createOrganization,
  evaluate,
  expectProblem,
  operatorRequest,
  OPERATOR_TOKEN,
  randomKey,
  startTestNode,
  upsertConfig,
  type Res,
  type TestNode,
} from '../../helpers/node.js';

// Several real nodes per file (PGlite start-up is seconds each): more than tap's default 120 s on a busy machine.
t.setTimeout(300_000);

// Hundreds of deliberate 401s from one address: the failed-authentication budget (docs/limits.md,
// "Failed authentications"; tested in test/node/hardening/auth-failures.test.ts) is lifted like the key rate limits.
const env = { VEXIL_OPERATOR_TOKEN: OPERATOR_TOKEN, VEXIL_RATE_LIMIT_MGMT: '100000', VEXIL_RATE_LIMIT_EVAL: '100000', VEXIL_RATE_LIMIT_AUTH_FAILURES: '100000' };

const validConfig = { stage: 'production', enabled: true, defaultVariantKey: 'off', rolloutPercentage: 100 };
const newFlag = (name: string) => ({ name, project: 'default', type: 'boolean', variants: [{ key: 'on', value: true, valueType: 'boolean' }, { key: 'off', value: false, valueType: 'boolean' }] });

interface Call {
  name: string;
  method: string;
  path: string;
  body?: unknown;
  raw?: string;
}

/** Every REST endpoint that takes a Management Key, with a valid body where one is needed. */
function everyCall(flag: string, keyId: string): Call[] {
  return [
    { name: 'evaluate', method: 'POST', path: `/flags/${flag}`, body: { userId: 'u1', stage: 'production' } },
    { name: 'list flags', method: 'GET', path: '/api/flags' },
    { name: 'create flag', method: 'POST', path: '/api/flags', body: newFlag('intruder') },
    { name: 'get flag', method: 'GET', path: `/api/flags/${flag}` },
    { name: 'update flag', method: 'PUT', path: `/api/flags/${flag}`, body: { description: 'changed', isArchived: true } },
    { name: 'delete flag', method: 'DELETE', path: `/api/flags/${flag}` },
    { name: 'upsert config', method: 'POST', path: `/api/flags/${flag}/configs`, body: { ...validConfig, defaultVariantKey: 'on' } },
    { name: 'list keys', method: 'GET', path: '/api/keys' },
    { name: 'create key', method: 'POST', path: '/api/keys', body: { name: 'intruder', permissions: ['CanRead'] } },
    { name: 'rotate key', method: 'POST', path: `/api/keys/${keyId}/rotate` },
    { name: 'disable key', method: 'POST', path: `/api/keys/${keyId}/disable` },
    { name: 'delete key', method: 'DELETE', path: `/api/keys/${keyId}` },
    { name: 'audit log', method: 'GET', path: '/api/audit' },
  ];
}

const send = (n: TestNode, c: Call, key: string | undefined, headers: Record<string, string> = {}): Promise<Res> =>
  n.req(c.method, c.path, { key, body: c.body, raw: c.raw, headers });

/** Everything an admin can read back: flags with configs, the key list, and a victim key's health. */
async function state(n: TestNode, flag: string, adminKey = n.adminKey) {
  const flags = await n.req('GET', '/api/flags', { key: adminKey });
  const one = await n.req('GET', `/api/flags/${flag}`, { key: adminKey });
  const keys = await n.req('GET', '/api/keys', { key: adminKey });
  const intruder = await n.req('GET', '/api/flags/intruder', { key: adminKey });
  return { flags: flags.body, one: one.body, keys: keys.body, intruder: intruder.status };
}

async function setupDefaultOrg(t: Test, n: TestNode) {
  t.equal((await createFlag(n, 'probe')).status, 201);
  t.equal((await upsertConfig(n, 'probe', validConfig)).status, 200);
  const victim = await n.req('POST', '/api/keys', { key: n.adminKey, body: { name: 'victim', permissions: ['CanEvaluate'], application: 'default' } });
  return { victimId: victim.body.id as string, victimKey: victim.body.key as string };
}

t.test('missing, malformed, unknown and disabled keys get 401 on every endpoint, and change nothing', async (t) => {
  const n = await startTestNode(t, { env });
  const { victimId, victimKey } = await setupDefaultOrg(t, n);
  // A key that had every permission and was in use (cached) before it was disabled.
  const strong = await n.req('POST', '/api/keys', { key: n.adminKey, body: { name: 'strong', permissions: ['CanEvaluate', 'CanRead', 'CanWrite'], application: 'default' } });
  t.equal((await n.req('GET', '/api/flags', { key: strong.body.key })).status, 200, 'the key works before it is disabled');
  t.equal((await n.req('POST', `/api/keys/${strong.body.id}/disable`, { key: n.adminKey })).status, 200);
  const before = await state(n, 'probe');
  t.equal(before.intruder, 404);

  const credentials: { what: string; key?: string; headers?: Record<string, string> }[] = [
    { what: 'missing header' },
    { what: 'empty header', headers: { 'x-management-key': '' } },
    { what: 'the admin key in uppercase', key: n.adminKey.toUpperCase() },
    { what: '63 hex characters', key: n.adminKey.slice(0, 63) },
    { what: '65 hex characters', key: n.adminKey + '0' },
    { what: 'non-hex characters', key: 'g'.repeat(64) },
    { what: 'the admin key in another header', headers: { authorization: `Bearer ${n.adminKey}` } },
    { what: 'an unknown well-formed key', key: randomKey() },
    { what: 'a disabled key', key: strong.body.key },
  ];
  for (const cred of credentials) {
    for (const c of everyCall('probe', victimId)) {
      const r = await send(n, c, cred.key, cred.headers);
      expectProblem(t, r, 401, 'UNAUTHENTICATED', `${c.name} with ${cred.what}`);
    }
  }

  const after = await state(n, 'probe');
  t.same(after, before, 'flags, configs and keys are exactly as before');
  const victim = await evaluate(n, victimKey, 'probe', { userId: 'u1', stage: 'production' });
  t.equal(victim.status, 200, 'the victim key was neither rotated, disabled nor deleted');
  t.equal(victim.body.key, 'off', 'the configuration was not changed');
});

t.test('401 comes before 400, 404 and 415: an unknown key with a bad request is still 401', async (t) => {
  const n = await startTestNode(t, { env });
  await setupDefaultOrg(t, n);
  const unknown = randomKey();
  const before = await state(n, 'probe');
  const cases: (Call & { headers?: Record<string, string> })[] = [
    { name: 'create flag, body not JSON', method: 'POST', path: '/api/flags', raw: '{not json', headers: { 'content-type': 'application/json' } },
    { name: 'create flag, body an array', method: 'POST', path: '/api/flags', body: [1, 2] },
    { name: 'create flag, no body', method: 'POST', path: '/api/flags' },
    { name: 'create flag, invalid fields', method: 'POST', path: '/api/flags', body: { name: 'bad name!', colour: 'red' } },
    { name: 'create flag, wrong content type', method: 'POST', path: '/api/flags', raw: JSON.stringify(newFlag('intruder')), headers: { 'content-type': 'text/plain' } },
    { name: 'update unknown flag', method: 'PUT', path: '/api/flags/nope', body: { description: 'x' } },
    { name: 'upsert config, invalid body', method: 'POST', path: '/api/flags/probe/configs', body: { stage: 42 } },
    { name: 'evaluate without stage', method: 'POST', path: '/flags/probe', body: { userId: 'u1' } },
    { name: 'evaluate unknown flag', method: 'POST', path: '/flags/nope', body: { userId: 'u1', stage: 'production' } },
    { name: 'evaluate, body not JSON', method: 'POST', path: '/flags/probe', raw: 'x', headers: { 'content-type': 'application/json' } },
    { name: 'create key, no permissions', method: 'POST', path: '/api/keys', body: { name: 'k', permissions: [] } },
    { name: 'rotate unknown key id', method: 'POST', path: '/api/keys/does-not-exist/rotate' },
    { name: 'delete unknown key id', method: 'DELETE', path: '/api/keys/does-not-exist' },
  ];
  for (const c of cases) {
    expectProblem(t, await send(n, c, unknown, c.headers), 401, 'UNAUTHENTICATED', c.name);
    expectProblem(t, await send(n, c, undefined, c.headers), 401, 'UNAUTHENTICATED', `${c.name} (no key)`);
  }
  t.same(await state(n, 'probe'), before, 'nothing changed');
});

t.test('an organization without subscription gets 402 at once, before 403; re-activating restores access at once', async (t) => {
  const n = await startTestNode(t, { env });
  await setupDefaultOrg(t, n);
  const acme = await createOrganization(n, 'acme');
  t.equal((await createFlag(acme, 'probe')).status, 201);
  t.equal((await upsertConfig(acme, 'probe', validConfig)).status, 200);
  const victim = await acme.req('POST', '/api/keys', { key: acme.adminKey, body: { name: 'victim', permissions: ['CanEvaluate'], application: 'default' } });
  const evalKey = victim.body.key as string;
  const readKey = await createKey(acme, { permissions: ['CanRead'] });
  const writeKey = await createKey(acme, { permissions: ['CanWrite'], application: 'default' });
  const disabled = await acme.req('POST', '/api/keys', { key: acme.adminKey, body: { name: 'disabled', permissions: ['CanRead'] } });
  t.equal((await acme.req('POST', `/api/keys/${disabled.body.id}/disable`, { key: acme.adminKey })).status, 200);

  // Every key is in use, hence in the 60-second key cache, before the subscription ends.
  t.equal((await evaluate(acme, evalKey, 'probe', { userId: 'u1', stage: 'production' })).status, 200);
  t.equal((await acme.req('GET', '/api/flags', { key: readKey })).status, 200);
  t.equal((await acme.req('GET', '/api/flags', { key: writeKey })).status, 200);
  t.equal((await acme.req('GET', '/api/keys', { key: acme.adminKey })).status, 200);
  const before = await state(acme, 'probe');
  const defaultBefore = await state(n, 'probe');

  const off = await operatorRequest(n, 'PATCH', '/organizations/acme', { subscriptionActive: false });
  t.equal(off.status, 200);
  t.equal(off.body.subscriptionActive, false);

  // Immediately (no waiting for the key cache): every endpoint, every key of the organization.
  for (const [what, key] of [['admin key', acme.adminKey], ['write key', writeKey], ['read key', readKey], ['evaluation key', evalKey]] as const) {
    for (const c of everyCall('probe', victim.body.id)) {
      expectProblem(t, await send(acme, c, key), 402, 'PAYMENT_REQUIRED', `${c.name} with the ${what}`);
    }
  }
  // Missing permission does not hide the subscription: 402 before 403.
  expectProblem(t, await createFlag(acme, 'nope', {}, readKey), 402, 'PAYMENT_REQUIRED', 'read key writing');
  expectProblem(t, await acme.req('GET', '/api/flags', { key: evalKey }), 402, 'PAYMENT_REQUIRED', 'evaluation key listing');
  expectProblem(t, await evaluate(acme, readKey, 'probe', { userId: 'u1', stage: 'production' }), 402, 'PAYMENT_REQUIRED', 'read key evaluating');
  expectProblem(t, await acme.req('GET', '/api/keys', { key: writeKey }), 402, 'PAYMENT_REQUIRED', 'write key listing keys');
  expectProblem(t, await acme.req('POST', '/api/flags', { key: readKey, raw: '{oops', headers: { 'content-type': 'application/json' } }), 402, 'PAYMENT_REQUIRED', 'read key with a bad body');
  // But key problems come first: 401 before 402.
  expectProblem(t, await acme.req('GET', '/api/flags', { key: disabled.body.key }), 401, 'UNAUTHENTICATED', 'disabled key of the inactive organization');
  expectProblem(t, await acme.req('GET', '/api/flags', { key: acme.adminKey.toUpperCase() }), 401, 'UNAUTHENTICATED', 'malformed key');

  // Other organizations are unaffected.
  t.equal((await n.req('GET', '/api/flags', { key: n.adminKey })).status, 200, 'the default organization still works');
  t.same(await state(n, 'probe'), defaultBefore);

  const on = await operatorRequest(n, 'PATCH', '/organizations/acme', { subscriptionActive: true });
  t.equal(on.status, 200);
  t.equal(on.body.subscriptionActive, true);
  t.same(await state(acme, 'probe'), before, 'the refused writes changed nothing');
  const ev = await evaluate(acme, evalKey, 'probe', { userId: 'u1', stage: 'production' });
  t.equal(ev.status, 200, 'evaluation works again at once');
  t.equal(ev.body.key, 'off');
  t.equal((await acme.req('GET', '/api/flags', { key: readKey })).status, 200, 'reading works again at once');
  t.equal((await createFlag(acme, 'after', {}, writeKey)).status, 201, 'writing works again at once');
  t.equal((await acme.req('GET', '/api/keys', { key: acme.adminKey })).status, 200, 'key management works again at once');
});

t.test('an organization created without subscription is 402 from its first request', async (t) => {
  const n = await startTestNode(t, { env });
  const idle = await createOrganization(n, 'idle', { subscriptionActive: false });
  expectProblem(t, await idle.req('GET', '/api/keys', { key: idle.adminKey }), 402, 'PAYMENT_REQUIRED');
  expectProblem(t, await createFlag(idle, 'x'), 402, 'PAYMENT_REQUIRED');
  t.equal((await operatorRequest(n, 'PATCH', '/organizations/idle', { subscriptionActive: true })).status, 200);
  expectProblem(t, await idle.req('GET', '/api/flags/x', { key: idle.adminKey }), 404, 'NOT_FOUND', 'the refused create left no flag');
});

t.test('a valid key without the permission or outside its scope gets 403, and changes nothing', async (t) => {
  const n = await startTestNode(t, { env });
  const multi = await createOrganization(n, 'multi', { applications: ['web', 'api'] });
  t.equal((await createFlag(multi, 'web-flag', { project: 'web' })).status, 201);
  t.equal((await createFlag(multi, 'api-flag', { project: 'api' })).status, 201);
  t.equal((await upsertConfig(multi, 'web-flag', validConfig)).status, 200);
  t.equal((await upsertConfig(multi, 'api-flag', validConfig)).status, 200);
  const keys = {
    evalWeb: await createKey(multi, { permissions: ['CanEvaluate'], application: 'web' }),
    evalWebDev: await createKey(multi, { permissions: ['CanEvaluate'], application: 'web', environment: 'development' }),
    evalOrgWide: await createKey(multi, { permissions: ['CanEvaluate'] }),
    read: await createKey(multi, { permissions: ['CanRead'] }),
    writeWeb: await createKey(multi, { permissions: ['CanWrite'], application: 'web' }),
    writeWebDev: await createKey(multi, { permissions: ['CanWrite'], application: 'web', environment: 'development' }),
  };
  const snapshot = async () => ({
    web: (await multi.req('GET', '/api/flags/web-flag', { key: multi.adminKey })).body,
    api: (await multi.req('GET', '/api/flags/api-flag', { key: multi.adminKey })).body,
    list: (await multi.req('GET', '/api/flags', { key: multi.adminKey })).body,
  });
  const before = await snapshot();
  const ev = { userId: 'u1', stage: 'production' };

  const cases: [string, Promise<Res>][] = [
    ['read key creating a flag', createFlag(multi, 'new-flag', { project: 'web' }, keys.read)],
    ['read key creating a flag with a bad body (403 before 400)', multi.req('POST', '/api/flags', { key: keys.read, body: { colour: 'red' } })],
    ['read key updating a flag', multi.req('PUT', '/api/flags/web-flag', { key: keys.read, body: { description: 'x' } })],
    ['read key deleting a flag', multi.req('DELETE', '/api/flags/web-flag', { key: keys.read })],
    ['read key upserting a config', upsertConfig(multi, 'web-flag', { defaultVariantKey: 'on' }, keys.read)],
    ['read key evaluating', evaluate(multi, keys.read, 'web-flag', ev)],
    ['evaluation key listing flags', multi.req('GET', '/api/flags', { key: keys.evalWeb })],
    ['evaluation key reading a flag', multi.req('GET', '/api/flags/web-flag', { key: keys.evalWeb })],
    ['evaluation key creating a flag', createFlag(multi, 'new-flag', { project: 'web' }, keys.evalWeb)],
    ['write key evaluating', evaluate(multi, keys.writeWeb, 'web-flag', ev)],
    ['organization-wide evaluation key evaluating', evaluate(multi, keys.evalOrgWide, 'web-flag', ev)],
    ['web evaluation key evaluating an api flag', evaluate(multi, keys.evalWeb, 'api-flag', ev)],
    ['development evaluation key evaluating production', evaluate(multi, keys.evalWebDev, 'web-flag', ev)],
    ['web write key reading an api flag', multi.req('GET', '/api/flags/api-flag', { key: keys.writeWeb })],
    ['web write key creating an api flag', createFlag(multi, 'new-flag', { project: 'api' }, keys.writeWeb)],
    ['web write key updating an api flag', multi.req('PUT', '/api/flags/api-flag', { key: keys.writeWeb, body: { description: 'x' } })],
    ['web write key deleting an api flag', multi.req('DELETE', '/api/flags/api-flag', { key: keys.writeWeb })],
    ['web write key configuring an api flag', upsertConfig(multi, 'api-flag', { defaultVariantKey: 'on' }, keys.writeWeb)],
    ['development write key configuring production', upsertConfig(multi, 'web-flag', { defaultVariantKey: 'on' }, keys.writeWebDev)],
  ];
  for (const [what, p] of cases) expectProblem(t, await p, 403, 'FORBIDDEN', what);

  t.same(await snapshot(), before, 'no flag or configuration changed');
  t.equal((await multi.req('GET', '/api/flags/new-flag', { key: multi.adminKey })).status, 404, 'no flag was created');
  // The same keys within their rights succeed, so the 403s above were about permission and scope.
  t.equal((await evaluate(multi, keys.evalWeb, 'web-flag', ev)).status, 200);
  t.equal((await evaluate(multi, keys.evalWebDev, 'web-flag', { userId: 'u1', stage: 'DEVELOPMENT' })).body.key, null, 'development is evaluable (no config there)');
  t.equal((await multi.req('GET', '/api/flags/api-flag', { key: keys.read })).status, 200);
  const listed = await multi.req('GET', '/api/flags', { key: keys.writeWeb });
  t.same(listed.body.map((f: { name: string }) => f.name), ['web-flag'], 'the application scope filters the list');
  t.equal((await upsertConfig(multi, 'web-flag', { stage: 'development' }, keys.writeWebDev)).status, 200);
});
