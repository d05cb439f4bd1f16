/**
 * Operator API (docs/api.md, "Operator API"): organizations and subscriptions behind VEXIL_OPERATOR_TOKEN; 404
 * when the token is not configured, 401 on a wrong or missing token. Organizations never learn of
 * each other's flags (docs/api.md, "Flags").
 */
import t from 'tap';
import {
  createFlag,
  createKey,
  createOrganization,
  evaluate,
  expectProblem,
  HEX64,
  operatorRequest,
  OPERATOR_TOKEN,
  startTestNode,
  upsertConfig,
  type TestNode,
} from '../../helpers/node.js';

// Several real nodes per file (PGlite start-up is seconds each): more than tap's default 120 s on a busy machine.
t.setTimeout(300_000);

const env = { VEXIL_OPERATOR_TOKEN: OPERATOR_TOKEN, VEXIL_RATE_LIMIT_MGMT: '100000', VEXIL_RATE_LIMIT_EVAL: '100000' };

/** Organizations as stored, for read-back after refused calls. */
const orgRows = (n: TestNode) =>
  n.node.db.query('select name, subscription_active, environments, applications, version from organizations order by name');
const keyCount = async (n: TestNode) => (await n.node.db.query('select id from management_keys')).length;

t.test('without VEXIL_OPERATOR_TOKEN the operator API does not exist (404)', async (t) => {
  const n = await startTestNode(t, { env: { VEXIL_RATE_LIMIT_MGMT: '100000' } });
  const before = await orgRows(n);
  const body = { name: 'acme', environments: ['production'], applications: ['web'] };
  for (const token of [null, '', OPERATOR_TOKEN, 'anything-at-all-long-enough']) {
    expectProblem(t, await operatorRequest(n, 'POST', '/organizations', body, token), 404, 'NOT_FOUND', `create, token ${JSON.stringify(token)}`);
    expectProblem(t, await operatorRequest(n, 'PATCH', '/organizations/default', { subscriptionActive: false }, token), 404, 'NOT_FOUND', `patch, token ${JSON.stringify(token)}`);
  }
  // The bootstrap admin key is no operator credential either.
  expectProblem(t, await n.req('POST', '/api/operator/organizations', { key: n.adminKey, body }), 404, 'NOT_FOUND', 'admin key');
  t.same(await orgRows(n), before, 'no organization created or changed');
  t.equal((await n.req('GET', '/api/flags', { key: n.adminKey })).status, 200, 'the default organization is still active');
});

t.test('a missing or wrong operator token is 401 and changes nothing', async (t) => {
  const n = await startTestNode(t, { env });
  const before = await orgRows(n);
  const keysBefore = await keyCount(n);
  const body = { name: 'acme', environments: ['production'], applications: ['web'] };
  const wrong: [string, string | null][] = [
    ['missing', null],
    ['empty', ''],
    ['wrong', 'not-the-operator-token-at-all'],
    ['same length, last character changed', OPERATOR_TOKEN.slice(0, -1) + (OPERATOR_TOKEN.endsWith('f') ? 'e' : 'f')],
    ['a prefix', OPERATOR_TOKEN.slice(0, 16)],
    ['uppercase', OPERATOR_TOKEN.toUpperCase()],
    ['the token twice', OPERATOR_TOKEN + OPERATOR_TOKEN],
  ];
  for (const [what, token] of wrong) {
    expectProblem(t, await operatorRequest(n, 'POST', '/organizations', body, token), 401, 'UNAUTHENTICATED', `create, ${what} token`);
    expectProblem(t, await operatorRequest(n, 'PATCH', '/organizations/default', { subscriptionActive: false }, token), 401, 'UNAUTHENTICATED', `patch, ${what} token`);
    // Token before body and before existence.
    expectProblem(t, await operatorRequest(n, 'POST', '/organizations', { nonsense: 1 }, token), 401, 'UNAUTHENTICATED', `bad body, ${what} token`);
    expectProblem(t, await operatorRequest(n, 'PATCH', '/organizations/nope', { subscriptionActive: false }, token), 401, 'UNAUTHENTICATED', `unknown org, ${what} token`);
  }
  expectProblem(t, await n.req('POST', '/api/operator/organizations', { key: n.adminKey, body }), 401, 'UNAUTHENTICATED', 'management key instead of token');
  t.same(await orgRows(n), before, 'no organization created or changed');
  t.equal(await keyCount(n), keysBefore, 'no admin key minted');
  t.equal((await n.req('GET', '/api/flags', { key: n.adminKey })).status, 200, 'the default organization is still active');
});

t.test('creating an organization answers 201 with a working org-wide admin key', async (t) => {
  const n = await startTestNode(t, { env });
  const r = await operatorRequest(n, 'POST', '/organizations', { name: 'acme', environments: ['dev', 'Prod'], applications: ['web', 'api'] });
  t.equal(r.status, 201);
  t.match(r.headers.get('content-type'), /^application\/json/);
  t.same(Object.keys(r.body).sort(), ['adminKey', 'applications', 'environments', 'name', 'subscriptionActive']);
  t.same({ ...r.body, adminKey: 'x' }, { name: 'acme', subscriptionActive: true, environments: ['dev', 'Prod'], applications: ['web', 'api'], adminKey: 'x' });
  t.match(r.body.adminKey, HEX64);
  t.not(r.body.adminKey, n.adminKey);

  const acme: TestNode = { ...n, adminKey: r.body.adminKey };
  const keys = await acme.req('GET', '/api/keys', { key: acme.adminKey });
  t.equal(keys.status, 200, 'the admin key manages keys');
  t.equal(keys.body.length, 1);
  t.same([...keys.body[0].permissions].sort(), ['Admin', 'CanRead', 'CanWrite']);
  t.match(keys.body[0], { application: null, environment: null, disabled: false });

  const f = await createFlag(acme, 'checkout', { project: 'web' });
  t.equal(f.status, 201, 'the admin key creates flags in the new organization');
  t.same(f.body.environments, ['dev', 'Prod'], 'with the new organization\'s environments');
  expectProblem(t, await createFlag(acme, 'other', { project: 'default' }), 400, 'BAD_REQUEST', "the default organization's application is unknown here");
  t.equal((await upsertConfig(acme, 'checkout', { stage: 'prod', defaultVariantKey: 'on' })).status, 200);
  const ek = await createKey(acme, { permissions: ['CanEvaluate'], application: 'web' });
  const e = await evaluate(acme, ek, 'checkout', { userId: 'u', stage: 'PROD' });
  t.equal(e.status, 200);
  t.equal(e.body.key, 'on');

  // subscriptionActive may be given; false makes the new organization inactive from the start.
  const idle = await operatorRequest(n, 'POST', '/organizations', { name: 'idle', environments: ['e'], applications: ['a'], subscriptionActive: false });
  t.equal(idle.status, 201);
  t.equal(idle.body.subscriptionActive, false);
  expectProblem(t, await n.req('GET', '/api/keys', { key: idle.body.adminKey }), 402, 'PAYMENT_REQUIRED');
  const explicit = await operatorRequest(n, 'POST', '/organizations', { name: 'busy', environments: ['e'], applications: ['a'], subscriptionActive: true });
  t.equal(explicit.status, 201);
  t.equal(explicit.body.subscriptionActive, true);
});

t.test('a duplicate organization name is 409 and changes nothing', async (t) => {
  const n = await startTestNode(t, { env });
  const acme = await createOrganization(n, 'acme');
  const before = await orgRows(n);
  const keysBefore = await keyCount(n);
  const dup = await operatorRequest(n, 'POST', '/organizations', { name: 'acme', environments: ['x'], applications: ['y'], subscriptionActive: false });
  expectProblem(t, dup, 409, 'CONFLICT', 'same name');
  t.notOk('adminKey' in (dup.body ?? {}), 'no admin key is handed out');
  expectProblem(t, await operatorRequest(n, 'POST', '/organizations', { name: 'default', environments: ['x'], applications: ['y'] }), 409, 'CONFLICT', 'the bootstrap organization');
  t.same(await orgRows(n), before, 'the existing organization kept its settings');
  t.equal(await keyCount(n), keysBefore, 'no key minted');
  t.equal((await acme.req('GET', '/api/keys', { key: acme.adminKey })).status, 200, 'still active, with its own admin key');
});

t.test('PATCH switches the subscription and answers the organization without a key', async (t) => {
  const n = await startTestNode(t, { env });
  const acme = await createOrganization(n, 'acme', { environments: ['production'], applications: ['web'] });
  const off = await operatorRequest(n, 'PATCH', '/organizations/acme', { subscriptionActive: false });
  t.equal(off.status, 200);
  t.same(off.body, { name: 'acme', subscriptionActive: false, environments: ['production'], applications: ['web'] });
  expectProblem(t, await acme.req('GET', '/api/keys', { key: acme.adminKey }), 402, 'PAYMENT_REQUIRED');
  const offAgain = await operatorRequest(n, 'PATCH', '/organizations/acme', { subscriptionActive: false });
  t.equal(offAgain.status, 200, 'idempotent');
  t.equal((await n.req('GET', '/api/keys', { key: n.adminKey })).status, 200, 'other organizations are unaffected');
  const on = await operatorRequest(n, 'PATCH', '/organizations/acme', { subscriptionActive: true });
  t.equal(on.status, 200);
  t.same(on.body, { name: 'acme', subscriptionActive: true, environments: ['production'], applications: ['web'] });
  t.equal((await acme.req('GET', '/api/keys', { key: acme.adminKey })).status, 200);
  // The bootstrap organization can be switched off too.
  t.equal((await operatorRequest(n, 'PATCH', '/organizations/default', { subscriptionActive: false })).status, 200);
  expectProblem(t, await n.req('GET', '/api/flags', { key: n.adminKey }), 402, 'PAYMENT_REQUIRED');
  t.equal((await operatorRequest(n, 'PATCH', '/organizations/default', { subscriptionActive: true })).status, 200);
  t.equal((await n.req('GET', '/api/flags', { key: n.adminKey })).status, 200);
});

t.test('PATCH of an unknown organization is 404; invalid bodies are 400; nothing changes', async (t) => {
  const n = await startTestNode(t, { env });
  const acme = await createOrganization(n, 'acme');
  const before = await orgRows(n);
  expectProblem(t, await operatorRequest(n, 'PATCH', '/organizations/nope', { subscriptionActive: false }), 404, 'NOT_FOUND', 'unknown organization');
  const bad: [string, unknown][] = [
    ['empty object', {}],
    ['string instead of boolean', { subscriptionActive: 'false' }],
    ['null', { subscriptionActive: null }],
    ['unknown field', { subscriptionActive: false, name: 'renamed' }],
    ['other settings are not the operator\'s', { subscriptionActive: false, environments: ['x'] }],
    ['array', [{ subscriptionActive: false }]],
  ];
  for (const [what, body] of bad) {
    expectProblem(t, await operatorRequest(n, 'PATCH', '/organizations/acme', body), 400, 'BAD_REQUEST', what);
  }
  expectProblem(t, await operatorRequest(n, 'PATCH', '/organizations/acme'), 400, 'BAD_REQUEST', 'no body');
  expectProblem(t, await n.req('PATCH', '/api/operator/organizations/acme', { raw: '{"subscriptionActive":', headers: { 'x-operator-token': OPERATOR_TOKEN, 'content-type': 'application/json' } }), 400, 'BAD_REQUEST', 'broken JSON');
  t.same(await orgRows(n), before, 'no organization changed (not even its version)');
  t.equal((await acme.req('GET', '/api/keys', { key: acme.adminKey })).status, 200, 'acme is still active');
});

t.test('invalid organizations are 400 and create nothing', async (t) => {
  const n = await startTestNode(t, { env });
  const before = await orgRows(n);
  const keysBefore = await keyCount(n);
  const ok = { name: 'acme', environments: ['production'], applications: ['web'] };
  const bad: [string, unknown][] = [
    ['name missing', { environments: ['production'], applications: ['web'] }],
    ['name with a space', { ...ok, name: 'ac me' }],
    ['name empty', { ...ok, name: '' }],
    ['name not a string', { ...ok, name: 42 }],
    ['environments missing', { name: 'acme', applications: ['web'] }],
    ['environments empty', { ...ok, environments: [] }],
    ['environment name invalid', { ...ok, environments: ['pro duction'] }],
    ['environments differing only in case', { ...ok, environments: ['dev', 'DEV'] }],
    ['applications missing', { name: 'acme', environments: ['production'] }],
    ['applications empty', { ...ok, applications: [] }],
    ['applications not a list', { ...ok, applications: 'web' }],
    ['duplicate applications', { ...ok, applications: ['web', 'web'] }],
    ['subscriptionActive not a boolean', { ...ok, subscriptionActive: 'yes' }],
    ['unknown field', { ...ok, adminKey: 'a'.repeat(64) }],
    ['array', [ok]],
  ];
  for (const [what, body] of bad) {
    expectProblem(t, await operatorRequest(n, 'POST', '/organizations', body), 400, 'BAD_REQUEST', what);
  }
  expectProblem(t, await operatorRequest(n, 'POST', '/organizations'), 400, 'BAD_REQUEST', 'no body');
  t.same(await orgRows(n), before, 'no organization created');
  t.equal(await keyCount(n), keysBefore, 'no key minted');
  t.equal((await operatorRequest(n, 'POST', '/organizations', ok)).status, 201, 'the valid body then works');
});

t.test('organizations never learn of each other\'s flags', async (t) => {
  const n = await startTestNode(t, { env });
  t.equal((await createFlag(n, 'secret', { description: 'ours' })).status, 201);
  t.equal((await upsertConfig(n, 'secret', { defaultVariantKey: 'on' })).status, 200);
  const ourEval = await createKey(n, { permissions: ['CanEvaluate'], application: 'default' });
  const other = await createOrganization(n, 'other');
  const theirRead = await createKey(other, { permissions: ['CanRead'] });
  const theirEval = await createKey(other, { permissions: ['CanEvaluate'], application: 'default' });
  const ours = (await n.req('GET', '/api/flags/secret', { key: n.adminKey })).body;

  for (const [what, key] of [['admin', other.adminKey], ['read key', theirRead]] as const) {
    expectProblem(t, await other.req('GET', '/api/flags/secret', { key }), 404, 'NOT_FOUND', `${what}: get`);
    const list = await other.req('GET', '/api/flags', { key });
    t.equal(list.status, 200);
    t.same(list.body, [], `${what}: empty list`);
  }
  expectProblem(t, await evaluate(other, theirEval, 'secret', { userId: 'u', stage: 'production' }), 404, 'NOT_FOUND', 'evaluate');
  expectProblem(t, await other.req('PUT', '/api/flags/secret', { key: other.adminKey, body: { description: 'theirs' } }), 404, 'NOT_FOUND', 'update');
  expectProblem(t, await upsertConfig(other, 'secret', { defaultVariantKey: 'off' }), 404, 'NOT_FOUND', 'configure');
  expectProblem(t, await other.req('DELETE', '/api/flags/secret', { key: other.adminKey }), 404, 'NOT_FOUND', 'delete');
  expectProblem(t, await createFlag(other, 'child', { dependencies: [{ flag: 'secret' }] }), 400, 'BAD_REQUEST', 'depend on it');
  t.same((await n.req('GET', '/api/flags/secret', { key: n.adminKey })).body, ours, 'our flag is untouched');

  // The same name in the other organization is another flag.
  const theirs = await createFlag(other, 'secret', { description: 'theirs' });
  t.equal(theirs.status, 201, 'names are per organization');
  t.equal((await upsertConfig(other, 'secret', { defaultVariantKey: 'off' })).status, 200);
  t.equal((await other.req('GET', '/api/flags/secret', { key: theirRead })).body.description, 'theirs');
  t.same((await n.req('GET', '/api/flags/secret', { key: n.adminKey })).body, ours, 'ours still says ours');
  t.equal((await evaluate(n, ourEval, 'secret', { userId: 'u', stage: 'production' })).body.key, 'on');
  t.equal((await evaluate(other, theirEval, 'secret', { userId: 'u', stage: 'production' })).body.key, 'off');
  t.equal((await other.req('DELETE', '/api/flags/secret', { key: other.adminKey })).status, 204);
  t.equal((await n.req('GET', '/api/flags/secret', { key: n.adminKey })).status, 200, 'deleting theirs left ours');
  // Keys cannot cross either: our evaluation key does not see their flags.
  t.equal((await createFlag(other, 'only-theirs')).status, 201);
  expectProblem(t, await evaluate(n, ourEval, 'only-theirs', { userId: 'u', stage: 'production' }), 404, 'NOT_FOUND', 'our key, their flag');
});
