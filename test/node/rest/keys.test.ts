/**
 * Management Keys over REST (docs/api.md, "Keys" and "Key management"): create, list, rotate, disable, delete;
 * only org-wide Admin keys manage keys; values are shown once, stored only as SHA-256 hashes, never
 * logged; disable, rotation and deletion stop the old value at once on this node.
 */
import { createHash } from 'node:crypto';
import t from 'tap';
import {
  createFlag,
  createKey,
  createOrganization,
  evaluate,
  expectProblem,
  HEX64,
  HEX64_ANYWHERE,
  OPERATOR_TOKEN,
  randomKey,
  startTestNode,
  upsertConfig,
  type TestNode,
} from '../../helpers/node.js';
import { createLogger } from '../../../src/util/log.js';

// Several real nodes per file (PGlite start-up is seconds each): more than tap's default 120 s on a busy machine.
t.setTimeout(300_000);

const env = { VEXIL_OPERATOR_TOKEN: OPERATOR_TOKEN, VEXIL_RATE_LIMIT_MGMT: '100000', VEXIL_RATE_LIMIT_EVAL: '100000' };
const sha256 = (v: string) => createHash('sha256').update(v).digest('hex');
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const CREATED_FIELDS = ['application', 'createdAt', 'disabled', 'environment', 'id', 'key', 'name', 'permissions'];
const RECORD_FIELDS = ['application', 'createdAt', 'disabled', 'environment', 'id', 'name', 'permissions', 'rotatedAt'];
const ev = { userId: 'u1', stage: 'production' };

async function withFlag(n: TestNode): Promise<void> {
  if ((await createFlag(n, 'f')).status !== 201) throw new Error('flag');
  if ((await upsertConfig(n, 'f', { defaultVariantKey: 'on' })).status !== 200) throw new Error('config');
}

const list = async (n: TestNode, key = n.adminKey) => (await n.req('GET', '/api/keys', { key })).body as Record<string, unknown>[];
const byId = async (n: TestNode, id: string) => (await list(n)).find((k) => k.id === id);

t.test('create answers 201 with the value once; the key works with its permissions and scope', async (t) => {
  const n = await startTestNode(t, { env });
  await withFlag(n);
  const started = Date.now();
  const r = await n.req('POST', '/api/keys', {
    key: n.adminKey,
    body: { name: 'ci', permissions: ['CanEvaluate', 'CanRead'], application: 'default', environment: 'production' },
  });
  t.equal(r.status, 201);
  t.match(r.headers.get('content-type'), /^application\/json/);
  t.same(Object.keys(r.body).sort(), CREATED_FIELDS, 'exactly the documented fields');
  t.match(r.body, { id: String, name: 'ci', permissions: ['CanEvaluate', 'CanRead'], application: 'default', environment: 'production', disabled: false });
  t.match(r.body.key, HEX64, 'the value is 64 lowercase hex');
  t.match(r.body.createdAt, ISO);
  t.ok(Math.abs(Date.parse(r.body.createdAt) - started) < 60_000, 'createdAt is now');
  t.equal(r.body.permissions.length, 2);

  const e = await evaluate(n, r.body.key, 'f', ev);
  t.equal(e.status, 200, 'the new key evaluates');
  t.equal(e.body.key, 'on');
  t.equal((await n.req('GET', '/api/flags', { key: r.body.key })).status, 200, 'and reads');
  expectProblem(t, await createFlag(n, 'g', {}, r.body.key), 403, 'FORBIDDEN', 'but cannot write');
  expectProblem(t, await evaluate(n, r.body.key, 'f', { userId: 'u1', stage: 'development' }), 403, 'FORBIDDEN', 'nor leave its environment');

  // Names of the scope are matched case-insensitively and stored in the organization's spelling.
  const c = await n.req('POST', '/api/keys', { key: n.adminKey, body: { name: '  spaced  ', permissions: ['CanWrite'], application: 'DEFAULT', environment: 'Development' } });
  t.equal(c.status, 201);
  t.match(c.body, { name: 'spaced', application: 'default', environment: 'development' });
  // application and environment may be omitted or null: org-wide.
  const o = await n.req('POST', '/api/keys', { key: n.adminKey, body: { name: 'org', permissions: ['CanRead', 'CanWrite', 'CanEvaluate', 'Admin'], application: null } });
  t.equal(o.status, 201);
  t.match(o.body, { application: null, environment: null, disabled: false });
  t.not(o.body.key, r.body.key, 'every key gets its own value');
  // An org-wide CanEvaluate key may be created but cannot evaluate (docs/api.md, "Keys").
  const orgWideEval = await createKey(n, { permissions: ['CanEvaluate'] });
  expectProblem(t, await evaluate(n, orgWideEval, 'f', ev), 403, 'FORBIDDEN', 'org-wide evaluation key');
  // An Admin key made through the API manages keys.
  t.equal((await n.req('GET', '/api/keys', { key: o.body.key })).status, 200);
});

t.test('the list never shows a key value and carries rotatedAt', async (t) => {
  const n = await startTestNode(t, { env });
  const made = [
    await n.req('POST', '/api/keys', { key: n.adminKey, body: { name: 'a', permissions: ['CanRead'] } }),
    await n.req('POST', '/api/keys', { key: n.adminKey, body: { name: 'b', permissions: ['CanEvaluate'], application: 'default', environment: 'development' } }),
  ];
  const r = await n.req('GET', '/api/keys', { key: n.adminKey });
  t.equal(r.status, 200);
  t.ok(Array.isArray(r.body), 'a bare JSON array');
  t.equal(r.body.length, 3, 'the bootstrap key and the two new ones');
  for (const k of r.body) t.same(Object.keys(k).sort(), RECORD_FIELDS, `key ${k.name}: exactly the documented fields`);
  t.notMatch(r.text, HEX64_ANYWHERE, 'no 64-hex string anywhere in the list');
  for (const m of made) t.notOk(r.text.includes(m.body.key), `value of ${m.body.name} absent`);
  t.notOk(r.text.includes(n.adminKey), 'admin value absent');
  t.notOk(r.text.includes(sha256(n.adminKey)), 'hash absent');
  const boot = r.body.find((k: { permissions: string[] }) => k.permissions.includes('Admin'));
  t.match(boot, { application: null, environment: null, disabled: false, rotatedAt: null });
  const b = r.body.find((k: { name: string }) => k.name === 'b');
  const { key: _value, ...created } = made[1].body;
  t.same(b, { ...created, rotatedAt: null }, 'the list record equals the created record without its value');
});

t.test('rotate answers {id, key}; the old value is refused at once, the new one works', async (t) => {
  const n = await startTestNode(t, { env });
  await withFlag(n);
  const made = await n.req('POST', '/api/keys', { key: n.adminKey, body: { name: 'svc', permissions: ['CanEvaluate'], application: 'default' } });
  const old = made.body.key as string;
  t.equal((await evaluate(n, old, 'f', ev)).status, 200, 'in use, so cached');

  const r = await n.req('POST', `/api/keys/${made.body.id}/rotate`, { key: n.adminKey });
  t.equal(r.status, 200, 'an empty body is accepted');
  t.same(Object.keys(r.body).sort(), ['id', 'key']);
  t.equal(r.body.id, made.body.id);
  t.match(r.body.key, HEX64);
  t.not(r.body.key, old);
  expectProblem(t, await evaluate(n, old, 'f', ev), 401, 'UNAUTHENTICATED', 'old value right after rotation');
  const fresh = await evaluate(n, r.body.key, 'f', ev);
  t.equal(fresh.status, 200, 'new value works');
  t.equal(fresh.body.key, 'on');
  const rec = await byId(n, made.body.id);
  t.match(rec, { name: 'svc', permissions: ['CanEvaluate'], application: 'default', environment: null, disabled: false, createdAt: made.body.createdAt });
  t.match(rec?.rotatedAt, ISO, 'rotatedAt is set');

  // A second rotation with an explicit empty JSON object; the previous value stops too.
  const r2 = await n.req('POST', `/api/keys/${made.body.id}/rotate`, { key: n.adminKey, body: {} });
  t.equal(r2.status, 200, '{} is accepted');
  expectProblem(t, await evaluate(n, r.body.key, 'f', ev), 401, 'UNAUTHENTICATED', 'first rotated value');
  expectProblem(t, await evaluate(n, old, 'f', ev), 401, 'UNAUTHENTICATED', 'original value');
  t.equal((await evaluate(n, r2.body.key, 'f', ev)).status, 200);

  // A body that is not an object is refused and rotates nothing.
  expectProblem(t, await n.req('POST', `/api/keys/${made.body.id}/rotate`, { key: n.adminKey, body: [1] }), 400, 'BAD_REQUEST', 'array body');
  expectProblem(t, await n.req('POST', `/api/keys/${made.body.id}/rotate`, { key: n.adminKey, raw: '{x', headers: { 'content-type': 'application/json' } }), 400, 'BAD_REQUEST', 'broken JSON');
  t.equal((await evaluate(n, r2.body.key, 'f', ev)).status, 200, 'the current value still works');
  expectProblem(t, await n.req('POST', '/api/keys/00000000-0000-0000-0000-000000000000/rotate', { key: n.adminKey }), 404, 'NOT_FOUND', 'unknown id');

  // Rotating the admin key that makes the call: the old value is refused for the next call.
  const adminId = (await list(n)).find((k) => (k.permissions as string[]).includes('Admin'))!.id;
  const self = await n.req('POST', `/api/keys/${adminId}/rotate`, { key: n.adminKey });
  t.equal(self.status, 200);
  expectProblem(t, await n.req('GET', '/api/keys', { key: n.adminKey }), 401, 'UNAUTHENTICATED', 'old admin value');
  t.equal((await n.req('GET', '/api/keys', { key: self.body.key })).status, 200, 'new admin value');
});

t.test('disable answers the record with disabled true; the value is refused at once', async (t) => {
  const n = await startTestNode(t, { env });
  await withFlag(n);
  const made = await n.req('POST', '/api/keys', { key: n.adminKey, body: { name: 'svc', permissions: ['CanEvaluate', 'CanRead'], application: 'default' } });
  const value = made.body.key as string;
  t.equal((await evaluate(n, value, 'f', ev)).status, 200, 'in use, so cached');
  t.equal((await n.req('GET', '/api/flags', { key: value })).status, 200);

  const r = await n.req('POST', `/api/keys/${made.body.id}/disable`, { key: n.adminKey });
  t.equal(r.status, 200, 'an empty body is accepted');
  t.same(Object.keys(r.body).sort(), RECORD_FIELDS, 'the key record, without a value');
  t.match(r.body, { id: made.body.id, name: 'svc', permissions: ['CanEvaluate', 'CanRead'], application: 'default', environment: null, disabled: true, rotatedAt: null, createdAt: made.body.createdAt });
  t.notMatch(r.text, HEX64_ANYWHERE);
  expectProblem(t, await evaluate(n, value, 'f', ev), 401, 'UNAUTHENTICATED', 'evaluation right after disable');
  expectProblem(t, await n.req('GET', '/api/flags', { key: value }), 401, 'UNAUTHENTICATED', 'read right after disable');
  t.equal((await byId(n, made.body.id))?.disabled, true, 'the list shows it disabled');

  // Disabling again with {} is harmless; rotating a disabled key does not revive it.
  const again = await n.req('POST', `/api/keys/${made.body.id}/disable`, { key: n.adminKey, body: {} });
  t.equal(again.status, 200);
  t.equal(again.body.disabled, true);
  const rot = await n.req('POST', `/api/keys/${made.body.id}/rotate`, { key: n.adminKey });
  t.equal(rot.status, 200);
  expectProblem(t, await evaluate(n, rot.body.key, 'f', ev), 401, 'UNAUTHENTICATED', 'rotated value of a disabled key');
  expectProblem(t, await n.req('POST', '/api/keys/nope/disable', { key: n.adminKey }), 404, 'NOT_FOUND', 'unknown id');
});

t.test('delete answers 204; the value is refused at once and the id is gone', async (t) => {
  const n = await startTestNode(t, { env });
  await withFlag(n);
  const made = await n.req('POST', '/api/keys', { key: n.adminKey, body: { name: 'svc', permissions: ['CanEvaluate'], application: 'default' } });
  t.equal((await evaluate(n, made.body.key, 'f', ev)).status, 200, 'in use, so cached');
  const r = await n.req('DELETE', `/api/keys/${made.body.id}`, { key: n.adminKey });
  t.equal(r.status, 204);
  t.equal(r.text, '', 'no body');
  expectProblem(t, await evaluate(n, made.body.key, 'f', ev), 401, 'UNAUTHENTICATED', 'right after delete');
  t.equal(await byId(n, made.body.id), undefined, 'gone from the list');
  expectProblem(t, await n.req('DELETE', `/api/keys/${made.body.id}`, { key: n.adminKey }), 404, 'NOT_FOUND', 'second delete');
  expectProblem(t, await n.req('POST', `/api/keys/${made.body.id}/rotate`, { key: n.adminKey }), 404, 'NOT_FOUND', 'rotate deleted');
  expectProblem(t, await n.req('POST', `/api/keys/${made.body.id}/disable`, { key: n.adminKey }), 404, 'NOT_FOUND', 'disable deleted');
  t.equal((await list(n)).length, 1, 'only the bootstrap key is left');
});

t.test('invalid create bodies are 400 and create nothing', async (t) => {
  const n = await startTestNode(t, { env });
  const before = await list(n);
  const bodies: [string, unknown][] = [
    ['unknown application', { name: 'k', permissions: ['CanEvaluate'], application: 'mobile' }],
    ['unknown environment', { name: 'k', permissions: ['CanEvaluate'], application: 'default', environment: 'staging' }],
    ['unknown environment, org-wide', { name: 'k', permissions: ['CanRead'], environment: 'qa' }],
    ['empty permissions', { name: 'k', permissions: [] }],
    ['unknown permission', { name: 'k', permissions: ['CanRead', 'Root'] }],
    ['lowercase permission', { name: 'k', permissions: ['canread'] }],
    ['duplicate permission', { name: 'k', permissions: ['CanRead', 'CanRead'] }],
    ['permissions not a list', { name: 'k', permissions: 'CanRead' }],
    ['permissions missing', { name: 'k' }],
    ['name missing', { permissions: ['CanRead'] }],
    ['name empty', { name: '   ', permissions: ['CanRead'] }],
    ['name not a string', { name: 7, permissions: ['CanRead'] }],
    ['unknown field', { name: 'k', permissions: ['CanRead'], key: randomKey() }],
    ['Admin with an application scope', { name: 'k', permissions: ['Admin'], application: 'default' }],
    ['Admin with an environment scope', { name: 'k', permissions: ['Admin', 'CanRead'], environment: 'production' }],
    ['application not a string', { name: 'k', permissions: ['CanRead'], application: 5 }],
    ['a JSON array', [{ name: 'k', permissions: ['CanRead'] }]],
  ];
  for (const [what, body] of bodies) {
    expectProblem(t, await n.req('POST', '/api/keys', { key: n.adminKey, body }), 400, 'BAD_REQUEST', what);
  }
  expectProblem(t, await n.req('POST', '/api/keys', { key: n.adminKey }), 400, 'BAD_REQUEST', 'no body');
  expectProblem(t, await n.req('POST', '/api/keys', { key: n.adminKey, raw: '{"name":', headers: { 'content-type': 'application/json' } }), 400, 'BAD_REQUEST', 'broken JSON');
  t.same(await list(n), before, 'no key was created');
  const rows = await n.node.db.query('select id from management_keys');
  t.equal(rows.length, 1, 'and none is in the database');
});

t.test('keys without Admin, and scoped Admin keys, get 403 on every key endpoint', async (t) => {
  const n = await startTestNode(t, { env });
  await withFlag(n);
  const victim = await n.req('POST', '/api/keys', { key: n.adminKey, body: { name: 'victim', permissions: ['CanEvaluate'], application: 'default' } });
  const nonAdmin = {
    'CanRead+CanWrite org-wide': await createKey(n, { permissions: ['CanRead', 'CanWrite'] }),
    'CanEvaluate+CanRead+CanWrite scoped': await createKey(n, { permissions: ['CanEvaluate', 'CanRead', 'CanWrite'], application: 'default' }),
    'CanEvaluate scoped': await createKey(n, { permissions: ['CanEvaluate'], application: 'default', environment: 'production' }),
  };
  // The API refuses to make a scoped Admin key (400 above); one stored by other means (an older
  // version, a manual fix) must still not manage keys (docs/api.md, "Keys": org-wide keys only).
  const scopedAdmin = randomKey();
  const org = (await n.node.db.query<{ id: string }>(`select id from organizations where name = 'default'`))[0].id;
  await n.node.db.query(
    `insert into management_keys (id, org_id, name, key_hash, permissions, application, environment) values ($1, $2, 'scoped-admin', $3, $4::jsonb, 'default', null)`,
    ['scoped-admin-id', org, sha256(scopedAdmin), JSON.stringify(['Admin', 'CanRead', 'CanWrite'])],
  );
  const envAdmin = randomKey();
  await n.node.db.query(
    `insert into management_keys (id, org_id, name, key_hash, permissions, application, environment) values ($1, $2, 'env-admin', $3, $4::jsonb, null, 'production')`,
    ['env-admin-id', org, sha256(envAdmin), JSON.stringify(['Admin'])],
  );
  const callers: Record<string, string> = { ...nonAdmin, 'Admin scoped to an application': scopedAdmin, 'Admin scoped to an environment': envAdmin };
  const before = await list(n);

  for (const [what, key] of Object.entries(callers)) {
    expectProblem(t, await n.req('GET', '/api/keys', { key }), 403, 'FORBIDDEN', `${what}: list`);
    expectProblem(t, await n.req('POST', '/api/keys', { key, body: { name: 'x', permissions: ['CanRead'] } }), 403, 'FORBIDDEN', `${what}: create`);
    expectProblem(t, await n.req('POST', '/api/keys', { key, body: { bogus: true } }), 403, 'FORBIDDEN', `${what}: create with a bad body (403 before 400)`);
    expectProblem(t, await n.req('POST', `/api/keys/${victim.body.id}/rotate`, { key }), 403, 'FORBIDDEN', `${what}: rotate`);
    expectProblem(t, await n.req('POST', `/api/keys/${victim.body.id}/disable`, { key }), 403, 'FORBIDDEN', `${what}: disable`);
    expectProblem(t, await n.req('DELETE', `/api/keys/${victim.body.id}`, { key }), 403, 'FORBIDDEN', `${what}: delete`);
    expectProblem(t, await n.req('POST', '/api/keys/no-such-id/rotate', { key }), 403, 'FORBIDDEN', `${what}: rotate unknown id (403 before 404)`);
  }
  t.same(await list(n), before, 'no key created, rotated, disabled or deleted');
  t.equal((await evaluate(n, victim.body.key, 'f', ev)).status, 200, 'the victim key still works with its value');
  // The scoped Admin key is otherwise a working key, so the 403s were about key management.
  t.equal((await n.req('GET', '/api/flags', { key: scopedAdmin })).status, 200);
});

t.test("an Admin key of another organization gets 404 for our key ids, and ours for theirs", async (t) => {
  const n = await startTestNode(t, { env });
  await withFlag(n);
  const ours = await n.req('POST', '/api/keys', { key: n.adminKey, body: { name: 'ours', permissions: ['CanEvaluate'], application: 'default' } });
  const other = await createOrganization(n, 'other');
  const theirs = await other.req('POST', '/api/keys', { key: other.adminKey, body: { name: 'theirs', permissions: ['CanRead'] } });
  t.equal(theirs.status, 201);
  const ourList = await list(n);
  const theirList = await list(other);
  t.notOk(theirList.some((k) => k.id === ours.body.id), 'their list does not show our key');
  t.notOk(ourList.some((k) => k.id === theirs.body.id), 'our list does not show theirs');
  t.equal(theirList.length, 2, 'their admin key and theirs');

  for (const [who, key, id] of [['other org', other.adminKey, ours.body.id], ['our org', n.adminKey, theirs.body.id]] as const) {
    expectProblem(t, await n.req('POST', `/api/keys/${id}/rotate`, { key }), 404, 'NOT_FOUND', `${who}: rotate`);
    expectProblem(t, await n.req('POST', `/api/keys/${id}/disable`, { key }), 404, 'NOT_FOUND', `${who}: disable`);
    expectProblem(t, await n.req('DELETE', `/api/keys/${id}`, { key }), 404, 'NOT_FOUND', `${who}: delete`);
  }
  t.same(await list(n), ourList, 'our keys unchanged');
  t.same(await list(other), theirList, 'their keys unchanged');
  t.equal((await evaluate(n, ours.body.key, 'f', ev)).status, 200, 'our key still works');
  t.equal((await other.req('GET', '/api/flags', { key: theirs.body.key })).status, 200, 'theirs too');
  // A scope names the caller's organization's applications and environments only.
  const odd = await createOrganization(n, 'odd', { environments: ['qa'], applications: ['mobile'] });
  expectProblem(t, await odd.req('POST', '/api/keys', { key: odd.adminKey, body: { name: 'k', permissions: ['CanEvaluate'], application: 'default' } }), 400, 'BAD_REQUEST', "another organization's application");
  expectProblem(t, await odd.req('POST', '/api/keys', { key: odd.adminKey, body: { name: 'k', permissions: ['CanEvaluate'], application: 'mobile', environment: 'production' } }), 400, 'BAD_REQUEST', "another organization's environment");
  t.equal((await odd.req('POST', '/api/keys', { key: odd.adminKey, body: { name: 'k', permissions: ['CanEvaluate'], application: 'mobile', environment: 'qa' } })).status, 201);
});

t.test('key values are stored only as SHA-256 hashes', async (t) => {
  const n = await startTestNode(t, { env });
  const a = await n.req('POST', '/api/keys', { key: n.adminKey, body: { name: 'a', permissions: ['CanRead'] } });
  const b = await n.req('POST', '/api/keys', { key: n.adminKey, body: { name: 'b', permissions: ['CanEvaluate'], application: 'default' } });
  const rotated = await n.req('POST', `/api/keys/${b.body.id}/rotate`, { key: n.adminKey });
  const other = await createOrganization(n, 'other');
  const values = [n.adminKey, a.body.key, b.body.key, rotated.body.key, other.adminKey];
  t.equal(new Set(values).size, 5);

  const db = n.node.db;
  const rows = await db.query<Record<string, unknown>>('select * from management_keys');
  t.equal(rows.length, 4, 'default admin, a, b, other admin');
  const dump = JSON.stringify(rows);
  for (const v of values) {
    t.notOk(dump.includes(v), 'no row contains a plaintext value');
    t.notOk(dump.includes(v.toUpperCase()), 'nor its uppercase form');
  }
  const hashes = new Map(rows.map((r) => [r.id, r.key_hash]));
  t.equal(hashes.get(a.body.id), sha256(a.body.key), 'key_hash is the SHA-256 hex of the value');
  t.equal(hashes.get(b.body.id), sha256(rotated.body.key), 'after rotation, of the new value');
  t.notOk([...hashes.values()].includes(sha256(b.body.key)), 'the old hash is gone');
  t.ok([...hashes.values()].includes(sha256(n.adminKey)), 'the bootstrap key is hashed too');
  t.ok([...hashes.values()].includes(sha256(other.adminKey)), 'and the operator-created admin key');

  // No other table holds a value either.
  const tables = await db.query<{ table_name: string }>(`select table_name from information_schema.tables where table_schema = 'public'`);
  t.ok(tables.length >= 4);
  for (const { table_name } of tables) {
    const text = JSON.stringify(await db.query(`select * from "${table_name}"`));
    for (const v of values) t.notOk(text.includes(v), `table ${table_name} has no plaintext value`);
  }
});

t.test('key values never reach the log', async (t) => {
  const lines: string[] = [];
  const n = await startTestNode(t, { env, start: { log: createLogger('debug', {}, (line) => lines.push(line)) } });
  await withFlag(n);
  const made = await n.req('POST', '/api/keys', { key: n.adminKey, body: { name: 'svc', permissions: ['CanEvaluate'], application: 'default' } });
  t.equal((await evaluate(n, made.body.key, 'f', ev, true)).status, 200);
  const rot = await n.req('POST', `/api/keys/${made.body.id}/rotate`, { key: n.adminKey });
  t.equal((await evaluate(n, rot.body.key, 'f', ev)).status, 200);
  const unknown = randomKey();
  t.equal((await evaluate(n, unknown, 'f', ev)).status, 401);
  t.equal((await evaluate(n, made.body.key, 'f', ev)).status, 401);
  t.equal((await n.req('GET', '/api/flags', { key: n.adminKey.toUpperCase() })).status, 401);
  const org = await createOrganization(n, 'logged');
  t.equal((await n.req('POST', `/api/keys/${made.body.id}/disable`, { key: n.adminKey })).status, 200);
  t.equal((await n.req('DELETE', `/api/keys/${made.body.id}`, { key: n.adminKey })).status, 204);

  t.ok(lines.length > 0, 'the logger was in use');
  const log = lines.join('\n').toLowerCase();
  for (const v of [n.adminKey, made.body.key, rot.body.key, unknown, org.adminKey, OPERATOR_TOKEN]) {
    t.notOk(log.includes(v.toLowerCase()), 'a key value or token is absent from the log');
  }
  t.notMatch(log, HEX64_ANYWHERE, 'no 64-hex string in the log at all');
});
