/** `GET /api/keys/self` answers any valid key its own record, never its value (docs/api.md, "Key management"). */
import t from 'tap';
import { createKey, expectProblem, HEX64_ANYWHERE, randomKey, startTestNode } from '../../helpers/node.js';

const n = await startTestNode(t);

t.test('the admin key and a scoped evaluation key each see their own record', async (t) => {
  const r = await n.req('GET', '/api/keys/self', { key: n.adminKey });
  t.equal(r.status, 200);
  t.match(r.body, { id: String, name: String, permissions: ['Admin', 'CanRead', 'CanWrite'], application: null, environment: null, disabled: false, createdAt: String, rotatedAt: null });
  t.notOk('key' in r.body, 'no key field');
  const v = await createKey(n, { name: 'mobile-eval', permissions: ['CanEvaluate'], application: 'default', environment: 'production' });
  const s = await n.req('GET', '/api/keys/self', { key: v });
  t.equal(s.status, 200, 'a key without CanRead or Admin may ask');
  t.match(s.body, { name: 'mobile-eval', permissions: ['CanEvaluate'], application: 'default', environment: 'production' });
  t.notMatch(s.text, HEX64_ANYWHERE, 'no key value in the answer');
  const list = await n.req('GET', '/api/keys', { key: n.adminKey });
  t.same(list.body.find((k: { id: string }) => k.id === s.body.id), s.body, 'the same record GET /api/keys lists');
});

t.test('rotation shows in rotatedAt; a disabled, unknown or missing key is 401', async (t) => {
  const v = await createKey(n, { name: 'temp', permissions: ['CanRead'] });
  const self = (await n.req('GET', '/api/keys/self', { key: v })).body;
  const rot = await n.req('POST', `/api/keys/${self.id}/rotate`, { key: n.adminKey });
  t.equal(rot.status, 200);
  expectProblem(t, await n.req('GET', '/api/keys/self', { key: v }), 401, 'UNAUTHENTICATED', 'the old value');
  const now = await n.req('GET', '/api/keys/self', { key: rot.body.key });
  t.equal(now.status, 200);
  t.type(now.body.rotatedAt, 'string', 'rotatedAt set');
  t.equal((await n.req('POST', `/api/keys/${self.id}/disable`, { key: n.adminKey })).status, 200);
  expectProblem(t, await n.req('GET', '/api/keys/self', { key: rot.body.key }), 401, 'UNAUTHENTICATED', 'disabled');
  expectProblem(t, await n.req('GET', '/api/keys/self', { key: randomKey() }), 401, 'UNAUTHENTICATED', 'unknown');
  expectProblem(t, await n.req('GET', '/api/keys/self'), 401, 'UNAUTHENTICATED', 'missing');
  expectProblem(t, await n.req('POST', '/api/keys/self', { key: n.adminKey }), 405, 'METHOD_NOT_ALLOWED', 'POST');
});
