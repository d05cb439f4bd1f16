/**
 * Webhook endpoints over REST (CONTRACT.md 19, docs/webhooks.md): Admin only, validated (bad
 * input is 400 and changes nothing), https and public addresses only by default, 20 per
 * organization, audited (webhook.create/update/delete/rotate), and the secret shown once: never
 * in a GET, the audit log, the database in clear (VEXIL_CLUSTER_SECRET set) or a log line.
 */
import t from 'tap';
import { createKey, expectProblem, startTestNode } from '../../helpers/node.js';
import { createLogger } from '../../../src/util/log.js';

t.test('webhook endpoints: CRUD, validation, limits, audit, secrets', async (t) => {
  const lines: string[] = [];
  const n = await startTestNode(t, {
    env: { VEXIL_RATE_LIMIT_MGMT: '100000', VEXIL_CLUSTER_SECRET: 'x'.repeat(40), VEXIL_LOG_LEVEL: 'debug' },
    start: { log: createLogger('debug', {}, (line) => lines.push(line)) },
  });
  const secrets: string[] = [];
  const audit = async () => (await n.req('GET', '/api/audit?limit=500', { key: n.adminKey })).body as any[];
  const list = async () => (await n.req('GET', '/api/webhooks', { key: n.adminKey })).body as any[];

  const c = await n.req('POST', '/api/webhooks', { key: n.adminKey, body: { url: 'https://hooks.example.com/vexil', events: ['flag.*', 'config.upsert'], description: 'chat' } });
  t.equal(c.status, 201, c.text);
  t.match(c.body, { url: 'https://hooks.example.com/vexil', events: ['flag.*', 'config.upsert'], description: 'chat', enabled: true, disabledReason: null });
  t.match(c.body.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
  t.same(Object.keys(c.body).sort(), ['createdAt', 'description', 'disabledReason', 'enabled', 'events', 'id', 'secret', 'updatedAt', 'url']);
  secrets.push(c.body.secret);
  const id = c.body.id;

  t.test('GET never shows the secret', async (t) => {
    const one = await n.req('GET', `/api/webhooks/${id}`, { key: n.adminKey });
    t.equal(one.status, 200);
    t.notOk('secret' in one.body);
    t.notOk(one.text.includes(secrets[0].slice(6)));
    const all = await n.req('GET', '/api/webhooks', { key: n.adminKey });
    t.equal(all.body.length, 1);
    t.notOk(all.text.includes(secrets[0].slice(6)));
  });

  t.test('stored encrypted under VEXIL_CLUSTER_SECRET', async (t) => {
    const rows = await n.node.db.query<{ secret: string }>('select secret from webhook_endpoints');
    t.match(rows[0].secret, /^v1:/);
    t.notOk(rows[0].secret.includes(secrets[0].slice(6)));
  });

  t.test('Admin only', async (t) => {
    const writer = await createKey(n, { permissions: ['CanRead', 'CanWrite'] });
    for (const [m, p, body] of [
      ['GET', '/api/webhooks'], ['GET', `/api/webhooks/${id}`], ['POST', '/api/webhooks', { url: 'https://a.example/', events: ['*'] }], ['PUT', `/api/webhooks/${id}`, { url: 'https://a.example/', events: ['*'] }],
      ['DELETE', `/api/webhooks/${id}`], ['POST', `/api/webhooks/${id}/rotate-secret`], ['POST', `/api/webhooks/${id}/test`], ['GET', `/api/webhooks/${id}/deliveries`],
    ] as const) {
      expectProblem(t, await n.req(m, p, { key: writer, ...(body ? { body } : {}) }), 403, 'FORBIDDEN');
    }
    t.equal((await list()).length, 1);
    // Webhook events are the Admin's, like key events.
    const events = (await n.req('GET', '/api/audit?limit=500', { key: writer })).body as any[];
    t.notOk(events.some((e) => e.target.type === 'webhook'), 'a non-Admin key does not read webhook events');
  });

  t.test('bad input: 400, problem+json, nothing changes', async (t) => {
    const before = await audit();
    const bodies: unknown[] = [
      { url: 'http://hooks.example.com/', events: ['*'] }, // https only
      { url: 'https://127.0.0.1/', events: ['*'] },
      { url: 'https://169.254.169.254/latest/meta-data/', events: ['*'] },
      { url: 'https://localhost:8080/', events: ['*'] },
      { url: 'https://[::1]/', events: ['*'] },
      { url: 'https://10.0.0.8/', events: ['*'] },
      { url: 'not a url', events: ['*'] },
      { url: 'https://u:p@hooks.example.com/', events: ['*'] },
      { url: 'https://hooks.example.com/', events: [] },
      { url: 'https://hooks.example.com/', events: ['flag*'] },
      { url: 'https://hooks.example.com/', events: ['*.create'] },
      { url: 'https://hooks.example.com/', events: ['*'], secret: 'whsec_mine' },
      { url: 'https://hooks.example.com/' },
      { url: 'https://hooks.example.com/', events: ['*'], enabled: 'no' },
      { url: 'https://hooks.example.com/\u0000', events: ['*'] },
    ];
    for (const body of bodies) {
      expectProblem(t, await n.req('POST', '/api/webhooks', { key: n.adminKey, body }), 400, 'BAD_REQUEST');
      expectProblem(t, await n.req('PUT', `/api/webhooks/${id}`, { key: n.adminKey, body }), 400, 'BAD_REQUEST');
    }
    t.equal((await n.req('POST', '/api/webhooks', { key: n.adminKey, raw: '{', headers: { 'content-type': 'application/json' } })).status, 400);
    t.equal((await n.req('POST', '/api/webhooks', { key: n.adminKey, raw: '{}', headers: { 'content-type': 'text/plain' } })).status, 415);
    t.same(await audit(), before, 'no audit event');
    const all = await list();
    t.equal(all.length, 1, 'no endpoint added');
    t.match(all[0], { url: 'https://hooks.example.com/vexil', events: ['flag.*', 'config.upsert'] }, 'unchanged');
    for (const [m, p] of [['GET', '/api/webhooks/nope'], ['PUT', '/api/webhooks/00000000-0000-0000-0000-000000000000'], ['DELETE', '/api/webhooks/nope'],
      ['POST', '/api/webhooks/00000000-0000-0000-0000-000000000000/rotate-secret'], ['GET', '/api/webhooks/nope/deliveries'],
      ['POST', `/api/webhooks/${id}/messages/msg_00000000000000000000000000000000/replay`], ['POST', `/api/webhooks/${id}/messages/nope/replay`]] as const) {
      expectProblem(t, await n.req(m, p, { key: n.adminKey, ...(m === 'PUT' ? { body: { url: 'https://a.example/', events: ['*'] } } : {}) }), 404, 'NOT_FOUND');
    }
    for (const q of ['limit=0', 'limit=1001', 'after=x', 'foo=1']) expectProblem(t, await n.req('GET', `/api/webhooks/${id}/deliveries?${q}`, { key: n.adminKey }), 400, 'BAD_REQUEST');
  });

  t.test('update, rotate, delete: audited, never with a secret', async (t) => {
    const u = await n.req('PUT', `/api/webhooks/${id}`, { key: n.adminKey, body: { url: 'https://hooks.example.com/v2', events: ['*'], enabled: false } });
    t.equal(u.status, 200);
    t.match(u.body, { url: 'https://hooks.example.com/v2', events: ['*'], description: '', enabled: false });
    expectProblem(t, await n.req('POST', `/api/webhooks/${id}/test`, { key: n.adminKey }), 409, 'CONFLICT');
    const r = await n.req('POST', `/api/webhooks/${id}/rotate-secret`, { key: n.adminKey });
    t.equal(r.status, 200);
    t.same(Object.keys(r.body).sort(), ['id', 'secret']);
    t.match(r.body.secret, /^whsec_/);
    t.not(r.body.secret, secrets[0]);
    secrets.push(r.body.secret);
    t.equal((await n.req('DELETE', `/api/webhooks/${id}`, { key: n.adminKey })).status, 204);
    expectProblem(t, await n.req('GET', `/api/webhooks/${id}`, { key: n.adminKey }), 404, 'NOT_FOUND');
    const events = (await audit()).filter((e) => e.target.type === 'webhook');
    t.same(events.map((e) => e.action), ['webhook.delete', 'webhook.rotate', 'webhook.update', 'webhook.create']);
    t.ok(events.every((e) => e.target.name === id));
    t.same(events[3].before, null);
    t.match(events[3].after, { id, url: 'https://hooks.example.com/vexil' });
    t.match(events[2].before, { url: 'https://hooks.example.com/vexil' });
    t.match(events[2].after, { url: 'https://hooks.example.com/v2', enabled: false });
    t.same(events[0].after, null);
    const text = JSON.stringify(await audit());
    for (const s of secrets) t.notOk(text.includes(s.slice(6)), 'no secret in the audit log');
    t.notOk(/whsec_/.test(text));
  });

  t.test('20 endpoints per organization (docs/limits.md)', async (t) => {
    for (let i = 0; i < 20; i++) {
      const r = await n.req('POST', '/api/webhooks', { key: n.adminKey, body: { url: `https://hooks.example.com/${i}`, events: ['flag.create'], enabled: false } });
      t.equal(r.status, 201, `endpoint ${i}`);
      secrets.push(r.body.secret);
    }
    const before = await audit();
    expectProblem(t, await n.req('POST', '/api/webhooks', { key: n.adminKey, body: { url: 'https://hooks.example.com/21', events: ['*'] } }), 409, 'QUOTA_EXCEEDED');
    t.equal((await list()).length, 20);
    t.same(await audit(), before);
  });

  t.test('Idempotency-Key: a secret is never kept for a repeat', async (t) => {
    await n.req('DELETE', `/api/webhooks/${(await list())[0].id}`, { key: n.adminKey });
    const headers = { 'idempotency-key': 'create-hook-1' };
    const body = { url: 'https://hooks.example.com/idem', events: ['*'] };
    const first = await n.req('POST', '/api/webhooks', { key: n.adminKey, body, headers });
    t.equal(first.status, 201);
    secrets.push(first.body.secret);
    const again = await n.req('POST', '/api/webhooks', { key: n.adminKey, body, headers });
    expectProblem(t, again, 409, 'CONFLICT');
    t.notOk(again.text.includes(first.body.secret.slice(6)));
    const r = await n.req('POST', `/api/webhooks/${first.body.id}/rotate-secret`, { key: n.adminKey, headers: { 'idempotency-key': 'rotate-hook-1' } });
    t.equal(r.status, 200);
    secrets.push(r.body.secret);
    const rows = await n.node.db.query<{ body: string | null }>('select body from idempotency_keys');
    const stored = JSON.stringify(rows);
    for (const s of secrets) t.notOk(stored.includes(s.slice(6)), 'no secret in the Idempotency-Key records');
    t.equal((await list()).filter((e) => e.url === 'https://hooks.example.com/idem').length, 1, 'created once');
  });

  t.test('no secret in any log line', async (t) => {
    t.ok(lines.length > 0, `${lines.length} log lines`);
    const all = lines.join('\n');
    for (const s of secrets) t.notOk(all.includes(s.slice(6)), 'secret absent');
    t.notOk(all.includes('whsec_'));
  });
});
