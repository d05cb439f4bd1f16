/**
 * Webhook delivery (CONTRACT.md 19, docs/webhooks.md) against real HTTP receivers: every message
 * signed (verified with the `standardwebhooks` package), in commit order per endpoint, the same
 * webhook-id on every attempt; a failed write sends nothing; rotation signs with both secrets;
 * a receiver down then up, Retry-After, 410 disables, redirects refused; a hanging endpoint
 * delays no other; Send test, replay, the deliveries log and its pages; /metrics.
 */
import t from 'tap';
import { createServer } from 'node:http';
import { createFlag, startTestNode, upsertConfig, type TestNode } from '../../helpers/node.js';
import { freePort, until } from '../../helpers/cluster.js';
import { scrape } from '../../helpers/metrics.js';
import { expectFieldError, gql } from '../../helpers/graphql.js';
import { createEndpoint, deliveries, Receiver, verify, WEBHOOK_ENV, type Received } from '../../helpers/webhooks.js';

t.setTimeout(120_000);

t.test('webhook delivery', async (t) => {
  const rx = await new Receiver().start();
  t.teardown(() => rx.close());
  const n: TestNode = await startTestNode(t, { env: { ...WEBHOOK_ENV, VEXIL_METRICS: '1', VEXIL_WEBHOOK_TIMEOUT_MS: '4000' } });
  let flags = 0;
  const flag = async () => {
    const name = `f${flags++}`;
    t.equal((await createFlag(n, name)).status, 201);
    return name;
  };
  const endpoint = async (path: string, events: string[], url = `${rx.url}${path}`) => {
    const r = await createEndpoint(n, { url, events });
    if (r.status !== 201) throw new Error(r.text);
    return r.body as { id: string; secret: string };
  };
  const remove = async (id: string) => t.equal((await n.req('DELETE', `/api/webhooks/${id}`, { key: n.adminKey })).status, 204);
  const waitFor = (path: string, count: number, ms = 8000) => until(async () => rx.at(path).length, (c) => c >= count, ms);

  t.test('every change delivered once, signed, in commit order; a failed write sends nothing', async (t) => {
    const e = await endpoint('/order', ['flag.*', 'config.*']);
    const names: string[] = [];
    for (let i = 0; i < 8; i++) names.push(await flag());
    t.equal((await upsertConfig(n, names[0], { defaultVariantKey: 'on' })).status, 200);
    // A refused write (the flag exists): no event, no message.
    t.equal((await createFlag(n, names[1])).status, 409);
    t.equal((await waitFor('/order', 9)).valueOf(), 9);
    await new Promise((r) => setTimeout(r, 300));
    const got = rx.at('/order');
    t.equal(got.length, 9, 'nine messages, none for the refused write');
    const bodies = got.map((r) => verify(e.secret, r));
    t.same(bodies.map((b) => b.type), [...Array(8).fill('flag.create'), 'config.upsert']);
    t.same(bodies.slice(0, 8).map((b) => b.data.target.name), names, 'commit order');
    const ids = bodies.map((b) => Number(b.data.id));
    t.same(ids, [...ids].sort((a, b) => a - b), 'audit ids increase');
    t.equal(new Set(got.map((r) => r.headers['webhook-id'])).size, 9, 'one webhook-id per message');
    const b0 = bodies[0];
    t.same(Object.keys(b0), ['type', 'timestamp', 'organization', 'data']);
    t.equal(b0.organization, 'default');
    t.equal(b0.timestamp, b0.data.at);
    t.match(b0.data, { action: 'flag.create', target: { type: 'flag', name: names[0] }, before: null, after: { name: names[0] } });
    t.equal(got[0].headers['content-type'], 'application/json');
    // `data` is the event exactly as GET /api/audit shows it (the body is written with the message).
    const events = (await n.req('GET', '/api/audit?limit=100', { key: n.adminKey })).body as any[];
    for (const b of bodies) t.strictSame(b.data, events.find((ev: any) => ev.id === b.data.id), `message of event ${b.data.id} carries it as the audit log shows it`);
    // Kept alive: the nine messages, one after the other, came over one connection (two at most,
    // should an idle one have been closed between two of them).
    const ports = new Set(got.map((r) => r.port));
    t.ok(ports.size <= 2, `${ports.size} connection(s) for 9 messages`);
    await remove(e.id);
  });

  t.test('rotation: two signatures during the overlap, both verify', async (t) => {
    const e = await endpoint('/rot', ['flag.create']);
    const r = await n.req('POST', `/api/webhooks/${e.id}/rotate-secret`, { key: n.adminKey });
    t.equal(r.status, 200);
    await flag();
    await waitFor('/rot', 1);
    const m = rx.at('/rot')[0];
    t.equal(m.headers['webhook-signature'].split(' ').length, 2, 'two signatures');
    t.equal(verify(e.secret, m).type, 'flag.create', 'the old secret verifies');
    t.equal(verify(r.body.secret, m).type, 'flag.create', 'the new secret verifies');
    t.throws(() => verify('whsec_' + Buffer.alloc(32, 1).toString('base64'), m), 'another secret does not');
    await remove(e.id);
  });

  t.test('a receiver down, then up: retried with the same webhook-id, the later message waits its turn', async (t) => {
    const port = await freePort();
    const e = await endpoint('/down', ['flag.create'], `http://127.0.0.1:${port}/down`);
    const first = await flag();
    const second = await flag();
    // Connection refused, a few times.
    await until(async () => (await deliveries(n, e.id)).length, (c) => c >= 3, 8000);
    const got: Received[] = [];
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        got.push({ path: req.url ?? '', headers: req.headers as Record<string, string>, body: Buffer.concat(chunks).toString(), at: Date.now() });
        res.writeHead(200).end('ok');
      });
    });
    await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
    t.teardown(() => new Promise((r) => server.close(r)));
    await until(async () => got.length, (c) => c >= 2, 8000);
    t.same(got.map((r) => verify(e.secret, r).data.target.name), [first, second], 'in commit order');
    const log = await deliveries(n, e.id);
    const firstId = got[0].headers['webhook-id'];
    const ofFirst = log.filter((d) => d.messageId === firstId);
    t.ok(ofFirst.length >= 4, `${ofFirst.length} attempts of the first message`);
    t.same(ofFirst.map((d) => d.attempt), ofFirst.map((_, i) => i + 1), 'attempts numbered');
    t.ok(ofFirst.slice(0, -1).every((d) => d.status === null && /ECONNREFUSED/.test(d.error)), 'refused while down');
    t.match(ofFirst[ofFirst.length - 1], { status: 200, error: null });
    const ofSecond = log.filter((d) => d.messageId === got[1].headers['webhook-id']);
    t.equal(ofSecond.length, 1, 'the second message was not tried before the first was delivered');
    t.ok(Date.parse(ofSecond[0].at) >= Date.parse(ofFirst[ofFirst.length - 1].at));
    for (const d of log) t.same(Object.keys(d).sort(), ['at', 'attempt', 'durationMs', 'error', 'id', 'messageId', 'status', 'type']);
    await remove(e.id);
  });

  t.test('Retry-After is honoured', async (t) => {
    const e = await endpoint('/ra', ['flag.create']);
    let calls = 0;
    rx.on('/ra', (_req, res) => (++calls === 1 ? res.writeHead(503, { 'retry-after': '1' }).end() : res.writeHead(204).end()));
    await flag();
    await waitFor('/ra', 2, 5000);
    const [a, b] = rx.at('/ra');
    t.ok(b.at - a.at >= 950, `retried ${b.at - a.at} ms later (Retry-After: 1; the backoff alone is 100 ms)`);
    t.equal(a.headers['webhook-id'], b.headers['webhook-id']);
    verify(e.secret, b);
    await remove(e.id);
  });

  t.test('410 Gone disables the endpoint; redirects are not followed', async (t) => {
    const gone = await endpoint('/gone', ['flag.create']);
    rx.on('/gone', (_req, res) => res.writeHead(410).end());
    const redir = await endpoint('/redir', ['flag.create']);
    rx.on('/redir', (_req, res) => res.writeHead(302, { location: `${rx.url}/elsewhere` }).end());
    await flag();
    await waitFor('/gone', 1);
    await waitFor('/redir', 2);
    const g = await until(async () => (await n.req('GET', `/api/webhooks/${gone.id}`, { key: n.adminKey })).body, (b) => b.enabled === false, 3000);
    t.equal(g.enabled, false);
    t.match(g.disabledReason, /410/);
    await flag();
    await new Promise((r) => setTimeout(r, 500));
    t.equal(rx.at('/gone').length, 1, 'nothing more sent to a disabled endpoint');
    t.equal(rx.at('/elsewhere').length, 0, 'the redirect was not followed');
    const log = await deliveries(n, redir.id);
    t.ok(log.length >= 2 && log.every((d) => d.status === 302 && /redirects are not followed/.test(d.error)), 'a 3xx is a failed attempt');
    t.match((await deliveries(n, gone.id))[0], { status: 410 });
    await remove(gone.id);
    await remove(redir.id);
  });

  t.test('a hanging endpoint delays no other', async (t) => {
    const hang = await endpoint('/hang', ['flag.create']);
    // Held until the test lets go (the node's attempt timeout is 4 s here).
    const held: (() => void)[] = [];
    rx.on('/hang', (_req, res) => (held.length === 0 ? held.push(() => res.writeHead(204).end()) : res.writeHead(204).end()));
    const fast = await endpoint('/fast', ['flag.create']);
    await flag();
    await flag();
    await flag();
    await waitFor('/fast', 3, 3500);
    t.equal(rx.at('/fast').length, 3, 'three messages delivered to the other endpoint...');
    t.equal(rx.at('/hang').length, 1, '...while the first attempt to the hanging one is still in flight');
    t.same(await deliveries(n, hang.id), [], 'no attempt of the hanging endpoint has ended');
    verify(fast.secret, rx.at('/fast')[2]);
    for (const release of held) release();
    await waitFor('/hang', 3, 5000);
    t.same(rx.at('/hang').map((r) => verify(hang.secret, r).data.target.name), rx.at('/fast').map((r) => verify(fast.secret, r).data.target.name), 'then the rest, in order');
    await remove(hang.id);
    await remove(fast.id);
  });

  t.test('Send test, replay (same webhook-id and body), the deliveries log in pages', async (t) => {
    const e = await endpoint('/test', ['flag.create']);
    const r = await n.req('POST', `/api/webhooks/${e.id}/test`, { key: n.adminKey });
    t.equal(r.status, 202);
    t.match(r.body.messageId, /^msg_[0-9a-f]{32}$/);
    await waitFor('/test', 1);
    const m = verify(e.secret, rx.at('/test')[0]);
    t.equal(m.type, 'webhook.test');
    t.equal(rx.at('/test')[0].headers['webhook-id'], r.body.messageId);
    const replay = await n.req('POST', `/api/webhooks/${e.id}/messages/${r.body.messageId}/replay`, { key: n.adminKey });
    t.equal(replay.status, 202);
    await waitFor('/test', 2);
    const [a, b] = rx.at('/test');
    t.equal(b.headers['webhook-id'], a.headers['webhook-id']);
    t.equal(b.body, a.body);
    verify(e.secret, b);
    await flag();
    await flag();
    await waitFor('/test', 4);
    // Recorded once the receiver has answered: wait for the fourth record too.
    const all = await until(() => deliveries(n, e.id), (d) => d.length >= 4, 5000);
    t.equal(all.length, 4);
    t.same(all.map((d) => d.attempt), [1, 2, 1, 1]);
    const p1 = await n.req('GET', `/api/webhooks/${e.id}/deliveries?limit=3`, { key: n.adminKey });
    t.equal(p1.body.length, 3);
    const link = p1.headers.get('link');
    t.match(link, /after=\d+.*rel="next"/);
    const next = /<([^>]+)>/.exec(link!)![1];
    const p2 = await n.req('GET', next, { key: n.adminKey });
    t.same([...p1.body, ...p2.body], all);
    t.equal(p2.headers.get('link'), null);
    await remove(e.id);
  });

  t.test('GraphQL mirrors REST', async (t) => {
    const E = 'id url events description enabled disabledReason createdAt updatedAt';
    const c = await gql(n, n.adminKey, `mutation($i: WebhookEndpointInput!) { createWebhook(input: $i) { secret endpoint { ${E} } } }`, { i: { url: `${rx.url}/gql`, events: ['flag.create'] } });
    t.equal(c.status, 200);
    t.notOk(c.body.errors, JSON.stringify(c.body.errors));
    const { secret, endpoint } = c.body.data.createWebhook;
    t.match(secret, /^whsec_/);
    t.match(endpoint, { url: `${rx.url}/gql`, events: ['flag.create'], enabled: true, description: '' });
    const bad = await gql(n, n.adminKey, `mutation { createWebhook(input: {url: "ftp://x", events: ["*"]}) { secret } }`);
    expectFieldError(t, bad, ['createWebhook'], 'BAD_REQUEST');
    const test = await gql(n, n.adminKey, `mutation { sendWebhookTest(id: "${endpoint.id}") }`);
    const messageId = test.body.data.sendWebhookTest;
    t.match(messageId, /^msg_/);
    await waitFor('/gql', 1);
    t.equal(verify(secret, rx.at('/gql')[0]).type, 'webhook.test');
    const replay = await gql(n, n.adminKey, `mutation { replayWebhookMessage(id: "${endpoint.id}", messageId: "${messageId}") }`);
    t.equal(replay.body.data.replayWebhookMessage, messageId);
    await waitFor('/gql', 2);
    const q = await gql(n, n.adminKey, `{ webhooks { id } webhook(id: "${endpoint.id}") { ${E} deliveries(first: 1) { id messageId type attempt at status durationMs error } } }`);
    t.notOk(q.body.errors);
    t.ok(q.body.data.webhooks.some((w: any) => w.id === endpoint.id));
    t.same(q.body.data.webhook.deliveries.map((d: any) => [d.messageId, d.type, d.attempt, d.status]), [[messageId, 'webhook.test', 1, 204]]);
    t.notOk(JSON.stringify(q.body).includes(secret.slice(6)), 'no secret in a read');
    const r = await gql(n, n.adminKey, `mutation { rotateWebhookSecret(id: "${endpoint.id}") { id secret } }`);
    t.match(r.body.data.rotateWebhookSecret, { id: endpoint.id, secret: /^whsec_/ });
    const u = await gql(n, n.adminKey, `mutation { updateWebhook(id: "${endpoint.id}", input: {url: "${rx.url}/gql2", events: ["*"], enabled: false}) { url enabled } }`);
    t.same(u.body.data.updateWebhook, { url: `${rx.url}/gql2`, enabled: false });
    const d = await gql(n, n.adminKey, `mutation { deleteWebhook(id: "${endpoint.id}") }`);
    t.equal(d.body.data.deleteWebhook, true);
    expectFieldError(t, await gql(n, n.adminKey, `{ webhook(id: "${endpoint.id}") { id } }`), ['webhook'], 'NOT_FOUND');
  });

  t.test('/metrics: deliveries by result, pending, oldest pending', async (t) => {
    const s = await scrape(n);
    t.ok(s.value('vexil_webhook_deliveries_total', { result: 'success' }) >= 15, 'successes counted');
    t.ok(s.value('vexil_webhook_deliveries_total', { result: 'retry' }) >= 3, 'retries counted');
    t.equal(s.value('vexil_webhook_deliveries_total', { result: 'disabled' }), 1);
    t.ok(s.families.has('vexil_webhook_pending'));
    t.ok(s.families.has('vexil_webhook_oldest_pending_seconds'));
    // A message stuck behind a failing receiver shows as pending, and ages.
    const port = await freePort();
    const e = await endpoint('/stuck', ['flag.create'], `http://127.0.0.1:${port}/`);
    await flag();
    await new Promise((r) => setTimeout(r, 1200));
    const s2 = await scrape(n);
    t.equal(s2.value('vexil_webhook_pending'), 1);
    t.ok(s2.value('vexil_webhook_oldest_pending_seconds') >= 1, `${s2.value('vexil_webhook_oldest_pending_seconds')} s`);
    await remove(e.id);
    t.equal((await scrape(n)).value('vexil_webhook_pending'), 0);
  });
});
