/**
 * Idempotency-Key (docs/api.md, "Idempotency-Key"; src/management/idempotency.ts): repeats answer the first
 * answer and write nothing; another request with the same key is 409; answers that carried a key
 * value are never stored (409 naming the key id); across two nodes and a restart (PostgreSQL),
 * across a restart (PGlite).
 */
import t from 'tap';
import { createHash } from 'node:crypto';
import { rmSync } from 'node:fs';
import postgres from 'postgres';
import {
  boolVariants,
  expectProblem,
  freshPostgresDatabase,
  OPERATOR_TOKEN,
  operatorRequest,
  pgliteCopy,
  skipWithoutPostgres,
  startTestNode,
  type TestNode,
} from '../../helpers/node.js';

const env = { VEXIL_OPERATOR_TOKEN: OPERATOR_TOKEN, VEXIL_RATE_LIMIT_MGMT: '100000' };
const flagBody = (name: string) => ({ name, project: 'default', type: 'boolean', variants: boolVariants });
const post = (n: TestNode, path: string, body: unknown, idem: string, key = n.adminKey) =>
  n.req('POST', path, { key, body, headers: { 'idempotency-key': idem } });
const auditCount = async (n: TestNode) => ((await n.req('GET', '/api/audit?limit=500', { key: n.adminKey })).body as unknown[]).length;

t.test('PGlite: repeats, mismatches, key values, validation, restart', async (t) => {
  const dataDir = await pgliteCopy();
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  let n = await startTestNode(t, { dataDir, env });
  const adminKey = n.adminKey;

  const first = await post(n, '/api/flags', flagBody('idem-a'), 'create-a');
  t.equal(first.status, 201);
  const events = await auditCount(n);
  const again = await post(n, '/api/flags', flagBody('idem-a'), 'create-a');
  t.equal(again.status, 201, 'a repeat gets the first status (not 409 "exists")');
  t.same(again.body, first.body, 'and the first body');
  t.equal(again.headers.get('idempotent-replayed'), 'true');
  t.equal(await auditCount(n), events, 'the repeat wrote nothing (one audit event)');
  const list = await n.req('GET', '/api/flags?limit=100', { key: adminKey });
  t.equal((list.body.items ?? list.body).filter((f: { name: string }) => f.name === 'idem-a').length, 1, 'one flag');

  expectProblem(t, await post(n, '/api/flags', flagBody('idem-b'), 'create-a'), 409, 'CONFLICT', 'another body with the same key');
  expectProblem(
    t,
    await n.req('PUT', '/api/flags/idem-a', { key: adminKey, body: flagBody('idem-a'), headers: { 'idempotency-key': 'create-a' } }),
    409,
    'CONFLICT',
    'another method and path with the same key',
  );
  t.equal(await auditCount(n), events, 'the conflicts wrote nothing');

  // A DELETE (204, no body) replays as 204.
  t.equal((await post(n, '/api/flags', flagBody('idem-del'), 'c-del')).status, 201);
  const del = await n.req('DELETE', '/api/flags/idem-del', { key: adminKey, headers: { 'idempotency-key': 'd-del' } });
  t.equal(del.status, 204);
  const delAgain = await n.req('DELETE', '/api/flags/idem-del', { key: adminKey, headers: { 'idempotency-key': 'd-del' } });
  t.equal(delAgain.status, 204, 'a repeated DELETE answers 204 again, not 404');

  // Validation.
  for (const bad of ['x'.repeat(256), 'has space', 'tab\tin']) {
    const r = await n.req('POST', '/api/flags', { key: adminKey, body: flagBody('idem-bad'), headers: { 'idempotency-key': bad } }).catch(() => null);
    if (r === null) continue; // fetch itself refuses some header values
    expectProblem(t, r, 400, 'BAD_REQUEST', `Idempotency-Key ${JSON.stringify(bad.slice(0, 10))}`);
  }
  t.equal((await n.req('GET', '/api/flags/idem-bad', { key: adminKey })).status, 404, 'a rejected key wrote nothing');

  // Scoped to the calling key: another key may use the same value.
  const other = await post(n, '/api/keys', { name: 'other', permissions: ['CanWrite', 'CanRead'], application: 'default' }, 'key-1');
  t.equal(other.status, 201);
  const otherKey = other.body.key as string;
  const byOther = await post(n, '/api/flags', flagBody('idem-other'), 'create-a', otherKey);
  t.equal(byOther.status, 201, 'the same Idempotency-Key of another Management Key is its own');

  // Answers with a key value are never stored: the repeat names the key id.
  const keyAgain = await post(n, '/api/keys', { name: 'other', permissions: ['CanWrite', 'CanRead'], application: 'default' }, 'key-1');
  expectProblem(t, keyAgain, 409, 'CONFLICT', 'repeat of a key creation');
  t.match(keyAgain.body.detail, other.body.id, 'names the key id');
  t.notMatch(keyAgain.text, otherKey, 'never the key value');
  const rot = await post(n, `/api/keys/${other.body.id}/rotate`, {}, 'rot-1');
  t.equal(rot.status, 200);
  const rotAgain = await post(n, `/api/keys/${other.body.id}/rotate`, {}, 'rot-1');
  expectProblem(t, rotAgain, 409, 'CONFLICT', 'repeat of a rotation');
  t.match(rotAgain.body.detail, other.body.id);
  const org = await n.req('POST', '/api/operator/organizations', {
    body: { name: 'idem-org', environments: ['production'], applications: ['default'] },
    headers: { 'x-operator-token': OPERATOR_TOKEN, 'idempotency-key': 'org-1' },
  });
  t.equal(org.status, 201);
  const orgAgain = await n.req('POST', '/api/operator/organizations', {
    body: { name: 'idem-org', environments: ['production'], applications: ['default'] },
    headers: { 'x-operator-token': OPERATOR_TOKEN, 'idempotency-key': 'org-1' },
  });
  expectProblem(t, orgAgain, 409, 'CONFLICT', 'repeat of an organization creation');
  t.match(orgAgain.body.detail, /created key [0-9a-f-]{36}/, 'names the admin key id');
  t.notMatch(orgAgain.text, org.body.adminKey);
  // Operator scope: a PATCH repeats.
  const patch = () =>
    n.req('PATCH', '/api/operator/organizations/idem-org', {
      body: { subscriptionActive: false },
      headers: { 'x-operator-token': OPERATOR_TOKEN, 'idempotency-key': 'org-1' },
    });
  expectProblem(t, await patch(), 409, 'CONFLICT', 'the operator scope holds org-1 for another request');
  void operatorRequest;

  // Across a restart (PGlite persists to its directory).
  const before = await auditCount(n);
  await n.close();
  n = await startTestNode(t, { dataDir, env, adminKey });
  const afterRestart = await post(n, '/api/flags', flagBody('idem-a'), 'create-a');
  t.equal(afterRestart.status, 201, 'after a restart the repeat still answers the first answer');
  t.same(afterRestart.body, first.body);
  t.equal(await auditCount(n), before, 'and wrote nothing');
});

t.test('PostgreSQL: two nodes, concurrent duplicates, restart', { skip: skipWithoutPostgres() }, async (t) => {
  const db = await freshPostgresDatabase();
  t.teardown(db.drop);
  const a = await startTestNode(t, { databaseUrl: db.url, env });
  const b = await startTestNode(t, { databaseUrl: db.url, env, adminKey: a.adminKey });
  const first = await post(a, '/api/flags', flagBody('pg-a'), 'k1');
  t.equal(first.status, 201);
  const events = await auditCount(a);
  const onB = await post(b, '/api/flags', flagBody('pg-a'), 'k1');
  t.equal(onB.status, 201, 'the other node answers the first answer');
  t.same(onB.body, first.body);
  expectProblem(t, await post(b, '/api/flags', flagBody('pg-other'), 'k1'), 409, 'CONFLICT', 'another body on the other node');
  t.equal(await auditCount(a), events, 'nothing written');

  // Concurrent duplicates on both nodes: one writes, every answer is the same 201.
  for (let i = 0; i < 5; i++) {
    const name = `pg-race-${i}`;
    const all = await Promise.all([a, b, a, b].map((n) => post(n, '/api/flags', flagBody(name), `race-${i}`)));
    t.same(all.map((r) => r.status), [201, 201, 201, 201], `race ${i}: every duplicate answers 201 (${all.map((r) => r.text.slice(0, 80)).join(' | ')})`);
    for (const r of all.slice(1)) t.same(r.body, all[0].body, 'the same body');
  }
  t.equal(await auditCount(a), events + 5, 'each race wrote one flag and one audit event');

  // A node that stopped between a write's commit and recording its answer leaves a record without
  // one (the chaos test meets it: test/chaos). Past any statement's time, a repeat says so and
  // writes nothing; it is never run again.
  const keyId = (await a.req('GET', '/api/keys/self', { key: a.adminKey })).body.id as string;
  const lostBody = flagBody('pg-lost');
  const fingerprint = createHash('sha256').update(`POST\n/api/flags\n`).update(JSON.stringify(lostBody)).digest('hex');
  const sql = postgres(db.url, { max: 1, onnotice: () => {} });
  await sql`insert into idempotency_keys (scope, idem_key, fingerprint, created_at)
            values (${`key:${keyId}`}, 'lost-answer', ${fingerprint}, now() - interval '1 minute')`;
  await sql.end();
  const lost = await post(b, '/api/flags', lostBody, 'lost-answer');
  expectProblem(t, lost, 409, 'CONFLICT', 'a committed write whose answer was never recorded');
  t.match(lost.body.detail, /node stopped before recording the answer/, 'says what happened');
  t.equal((await b.req('GET', '/api/flags/pg-lost', { key: a.adminKey })).status, 404, 'and does not write it again');

  await a.close();
  const c = await startTestNode(t, { databaseUrl: db.url, env, adminKey: a.adminKey });
  const afterRestart = await post(c, '/api/flags', flagBody('pg-a'), 'k1');
  t.equal(afterRestart.status, 201, 'after a restart too');
  t.same(afterRestart.body, first.body);
});
