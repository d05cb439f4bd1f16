/**
 * Front threads (CONTRACT 20, docs/threads.md), with connections spread over them: every request
 * below goes on a connection of its own (`connection: close`), which the kernel hands to one of the
 * threads listening on the port (SO_REUSEPORT); the thread that answered is told by the prefix of
 * its `x-request-id` (each thread numbers its own requests). Each check insists that at least two
 * threads answered, so it cannot pass on one thread alone.
 *
 * - evaluation on every thread, with the same answers; /healthz and /readyz report `frontThreads`;
 * - management from every thread reaches the one actor (its errors keep their shape);
 * - a key disabled or deleted stops on every thread at once;
 * - the failed-authentication budget and a key's rate limit hold whichever thread serves;
 * - server-sent-event streams work on every thread and end with their key;
 * - /metrics speaks for the node: every thread's requests, counted once;
 * - the node:http fallback runs one thread.
 */
import t from 'tap';
import { boolVariants, randomKey, type Res, type TestNode } from '../../helpers/node.js';
import { createOrg, evalKey, must, OPERATOR_TOKEN, postConfig, postFlag, startNode } from '../../helpers/flags.js';
import { delta, REQS, scrape } from '../../helpers/metrics.js';
import { openSse, type SseStream } from '../../helpers/sse.js';
import { loadNativeUws } from '../../../src/http/uws.js';

const THREADS = 3;
/** Several threads need the native front (the node:http fallback runs one: tested at the end). */
const nativeMissing = loadNativeUws().ok && process.env.VEXIL_HTTP_FRONT !== 'node' ? false : 'no native uWebSockets.js front here (VEXIL_HTTP_FRONT=node, or no binary loads)';
const ctx = { userId: 'u1', stage: 'production' };

const CONFIG = { stage: 'production', enabled: true, rolloutPercentage: 100 };

/** One request on a fresh connection; `thread` names the thread that answered. */
async function fresh(n: TestNode, method: string, path: string, opts: { key?: string; body?: unknown; headers?: Record<string, string> } = {}): Promise<Res & { thread: string }> {
  const r = await n.req(method, path, { ...opts, headers: { connection: 'close', ...opts.headers } });
  return { ...r, thread: threadOf(r.headers) };
}

const threadOf = (h: Headers): string => (h.get('x-request-id') ?? '').split('-')[0];

/** `count` requests on fresh connections; the answers, and the threads that gave them. */
async function spread(count: number, send: () => Promise<Res & { thread: string }>): Promise<{ answers: (Res & { thread: string })[]; threads: Set<string> }> {
  const answers = [];
  for (let i = 0; i < count; i++) answers.push(await send());
  return { answers, threads: new Set(answers.map((a) => a.thread)) };
}

t.test('front threads', { skip: nativeMissing }, async (t) => {
  // Revocations are checked by 90 refused requests in a second: a budget of failed authentications that does not run out.
  const n = await startNode(t, { env: { VEXIL_FRONT_THREADS: String(THREADS), VEXIL_RATE_LIMIT_AUTH_FAILURES: '1000' } });
  const org = await createOrg(n, ['production'], ['web']);
  const admin = org.adminKey;
  must(t, await postFlag(n, admin, 'f1'), 201, 'flag');
  must(t, await postConfig(n, admin, 'f1', { defaultVariantKey: 'on' }), 200, 'config');

  t.test('/healthz and /readyz report the threads serving', async (t) => {
    const h = await fresh(n, 'GET', '/healthz');
    t.equal(h.body.frontThreads, THREADS, '/healthz');
    const r = await fresh(n, 'GET', '/readyz');
    t.equal(r.body.frontThreads, THREADS, '/readyz');
  });

  t.test('evaluation on every thread, the same answer', async (t) => {
    const key = await evalKey(n, admin, 'web');
    const { answers, threads } = await spread(40, () => fresh(n, 'POST', '/flags/f1', { key, body: ctx }));
    t.ok(threads.size >= 2, `answered by ${threads.size} threads`);
    t.same(new Set(answers.map((a) => `${a.status} ${a.text}`)), new Set(['200 {"variant":true,"key":"on"}']), 'every answer 200, the same');
    const ofrep = await spread(20, () => fresh(n, 'POST', '/ofrep/v1/evaluate/flags/f1', { key, body: { context: { targetingKey: 'u1', stage: 'production' } } }));
    t.ok(ofrep.threads.size >= 2, `OFREP answered by ${ofrep.threads.size} threads`);
    t.same(new Set(ofrep.answers.map((a) => `${a.status} ${a.body.value}`)), new Set(['200 true']), 'OFREP: every answer 200, the same');
  });

  t.test('a change made through any thread is seen by every thread at once', async (t) => {
    const key = await evalKey(n, admin, 'web');
    for (const variant of ['off', 'on', 'off']) {
      const put = await fresh(n, 'POST', '/api/flags/f1/configs', { key: admin, body: { ...CONFIG, defaultVariantKey: variant } });
      must(t, put, 200, `set ${variant}`);
      const { answers, threads } = await spread(12, () => fresh(n, 'POST', '/flags/f1', { key, body: ctx }));
      t.same(new Set(answers.map((a) => a.body.key)), new Set([variant]), `${variant} on every thread (${threads.size} threads), right after the write was answered`);
    }
  });

  t.test('management from every thread reaches the one actor', async (t) => {
    const { answers, threads } = await spread(24, () => fresh(n, 'POST', '/api/flags', { key: admin, body: { name: `m-${Math.random().toString(36).slice(2)}`, project: 'web', type: 'boolean', variants: boolVariants } }));
    t.ok(threads.size >= 2, `created through ${threads.size} threads`);
    t.same(new Set(answers.map((a) => a.status)), new Set([201]), 'every create 201');
    const list = await fresh(n, 'GET', '/api/flags?limit=1000', { key: admin });
    for (const a of answers) t.ok((list.body as { name: string }[]).some((f) => f.name === a.body.name), `${a.body.name} listed`);
    const missing = await spread(10, () => fresh(n, 'GET', '/api/flags/no-such-flag', { key: admin }));
    t.ok(missing.threads.size >= 2, 'errors from several threads');
    for (const a of missing.answers) {
      t.equal(a.status, 404);
      t.match(a.headers.get('content-type'), /^application\/problem\+json/, 'problem+json');
    }
  });

  t.test('a small page of the flag list is answered on every thread, the same as the actor\'s', async (t) => {
    // `type=boolean` matches every flag here, and the front forwards a page with it to the actor:
    // its answer is the reference for the pages the front threads answer themselves (front-page.ts).
    const reference = await fresh(n, 'GET', '/api/flags?limit=5&type=boolean', { key: admin });
    must(t, reference, 200, 'the actor\'s page');
    const { answers, threads } = await spread(24, () => fresh(n, 'GET', '/api/flags?limit=5', { key: admin }));
    t.ok(threads.size >= 2, `pages answered by ${threads.size} threads`);
    for (const a of answers) {
      t.equal(a.status, 200);
      t.same(a.body, reference.body, `thread ${a.thread}: the same flags`);
      t.equal(a.headers.get('x-total-count'), reference.headers.get('x-total-count'), `thread ${a.thread}: the same total`);
      t.equal(a.headers.get('link')?.replace('&type=boolean', ''), reference.headers.get('link')?.replace('&type=boolean', ''), `thread ${a.thread}: the same next page`);
    }
  });

  t.test('a disabled, rotated or deleted key stops on every thread at once', async (t) => {
    for (const how of ['disable', 'rotate', 'delete'] as const) {
      const created = await fresh(n, 'POST', '/api/keys', { key: admin, body: { name: `k-${how}`, permissions: ['CanEvaluate'], application: 'web' } });
      must(t, created, 201, 'key');
      const key = created.body.key as string;
      // Every thread serves the key itself first (it learns it on its first request).
      const warm = await spread(30, () => fresh(n, 'POST', '/flags/f1', { key, body: ctx }));
      t.ok(warm.threads.size >= 2, `${how}: served by ${warm.threads.size} threads`);
      t.same(new Set(warm.answers.map((a) => a.status)), new Set([200]));
      const id = created.body.id as string;
      const gone = how === 'delete' ? await fresh(n, 'DELETE', `/api/keys/${id}`, { key: admin }) : await fresh(n, 'POST', `/api/keys/${id}/${how}`, { key: admin });
      t.ok(gone.status === 200 || gone.status === 204, `${how}: ${gone.status}`);
      const after = await spread(30, () => fresh(n, 'POST', '/flags/f1', { key, body: ctx }));
      t.ok(after.threads.size >= 2, `${how}: tried on ${after.threads.size} threads`);
      t.same(new Set(after.answers.map((a) => a.status)), new Set([401]), `${how}: every request after the answer is 401, on every thread`);
    }
  });

  t.test('an organization whose subscription lapses gets 402 on every thread at once', async (t) => {
    const org2 = await createOrg(n, ['production'], ['web']);
    must(t, await postFlag(n, org2.adminKey, 'g1'), 201, 'flag');
    must(t, await postConfig(n, org2.adminKey, 'g1'), 200, 'config');
    const key = await evalKey(n, org2.adminKey, 'web');
    const warm = await spread(30, () => fresh(n, 'POST', '/flags/g1', { key, body: ctx }));
    t.ok(warm.threads.size >= 2, `served by ${warm.threads.size} threads`);
    t.same(new Set(warm.answers.map((a) => a.status)), new Set([200]));
    const patch = (active: boolean) => fresh(n, 'PATCH', `/api/operator/organizations/${org2.name}`, { headers: { 'x-operator-token': OPERATOR_TOKEN }, body: { subscriptionActive: active } });
    must(t, await patch(false), 200, 'subscription off');
    const off = await spread(30, () => fresh(n, 'POST', '/flags/g1', { key, body: ctx }));
    t.ok(off.threads.size >= 2, `tried on ${off.threads.size} threads`);
    t.same(new Set(off.answers.map((a) => a.status)), new Set([402]), 'every request after the answer is 402, on every thread');
    must(t, await patch(true), 200, 'subscription on');
    const on = await spread(20, () => fresh(n, 'POST', '/flags/g1', { key, body: ctx }));
    t.same(new Set(on.answers.map((a) => a.status)), new Set([200]), 'and 200 again on every thread');
  });

  t.test('/metrics counts every thread’s requests, once', async (t) => {
    const key = await evalKey(n, admin, 'web');
    const before = await scrape(n);
    const { threads } = await spread(30, () => fresh(n, 'POST', '/flags/f1', { key, body: ctx }));
    t.ok(threads.size >= 2, `${threads.size} threads`);
    const after = await scrape(n);
    t.equal(delta(before, after, REQS, { route: '/flags/:name', method: 'POST', status: '200' }), 30, '30 evaluations counted');
  });

  t.test('server-sent events on every thread, ended with their key', async (t) => {
    const created = await fresh(n, 'POST', '/api/keys', { key: admin, body: { name: 'sse', permissions: ['CanEvaluate'], application: 'web' } });
    const key = created.body.key as string;
    const bulk = await fresh(n, 'POST', '/ofrep/v1/evaluate/flags', { key, body: { context: { targetingKey: 'u1', stage: 'production' } } });
    must(t, bulk, 200, 'bulk');
    const url = bulk.body.eventStreams[0].url as string;
    const streams = new Map<string, SseStream>();
    for (let i = 0; i < 30 && streams.size < 2; i++) {
      const s = await openSse(url, { connection: 'close' });
      t.equal(s.status, 200, 'stream opened');
      const thread = threadOf(s.headers);
      if (streams.has(thread)) s.close();
      else streams.set(thread, s);
    }
    t.teardown(() => {
      for (const s of streams.values()) s.close();
    });
    t.equal(streams.size, 2, 'streams open on two threads');
    must(t, await fresh(n, 'POST', '/api/flags/f1/configs', { key: admin, body: { ...CONFIG, defaultVariantKey: 'on' } }), 200, 'change');
    for (const [thread, s] of streams) t.equal(await s.next(1500), '{"type":"refetchEvaluation"}', `refetchEvaluation on thread ${thread}`);
    must(t, await fresh(n, 'POST', `/api/keys/${created.body.id}/disable`, { key: admin }), 200, 'disable the key');
    for (const [thread, s] of streams) {
      await Promise.race([s.ended, new Promise((r) => setTimeout(r, 2000))]);
      t.ok(s.isEnded, `the stream on thread ${thread} ended with its key`);
    }
  });
});

t.test('limits hold whichever thread serves', { skip: nativeMissing }, async (t) => {
  const n = await startNode(t, { env: { VEXIL_FRONT_THREADS: String(THREADS), VEXIL_RATE_LIMIT_AUTH_FAILURES: '5', VEXIL_RATE_LIMIT_EVAL: '5' } });
  const org = await createOrg(n, ['production'], ['web']);
  must(t, await postFlag(n, org.adminKey, 'f1'), 201, 'flag');
  must(t, await postConfig(n, org.adminKey, 'f1'), 200, 'config');

  // First: the budget's test leaves this client's address past its budget for a while.
  t.test("a key's rate limit: one bucket for the node", async (t) => {
    const key = await evalKey(n, org.adminKey, 'web');
    const started = performance.now();
    const { answers, threads } = await spread(25, () => fresh(n, 'POST', '/flags/f1', { key, body: ctx }));
    const seconds = (performance.now() - started) / 1000;
    t.ok(threads.size >= 2, `${threads.size} threads`);
    const ok = answers.filter((a) => a.status === 200).length;
    // Burst 5 (one second's worth), plus 5 a second while the requests were sent.
    t.ok(ok >= 5 && ok <= 5 + Math.ceil(seconds * 5), `${ok} admitted in ${seconds.toFixed(2)} s (burst 5 + 5/s), not one bucket per thread`);
    t.equal(answers.filter((a) => a.status === 429).length, 25 - ok, 'the rest 429');
  });
  t.test('failed-authentication budget: 5 failures, then 429, on every thread', async (t) => {
    const started = performance.now();
    const { answers, threads } = await spread(20, () => fresh(n, 'POST', '/flags/f1', { key: randomKey(), body: ctx }));
    const seconds = (performance.now() - started) / 1000;
    t.ok(threads.size >= 2, `${threads.size} threads`);
    const statuses = answers.map((a) => a.status);
    const refused = statuses.filter((s) => s === 401).length;
    // Budget 5 (one second's worth), plus 5 a second while the requests were sent.
    t.ok(refused >= 5 && refused <= 5 + Math.ceil(seconds * 5), `${refused} × 401 in ${seconds.toFixed(2)} s (${statuses.join(' ')}), not a budget per thread`);
    t.equal(statuses.filter((s) => s === 429).length, 20 - refused, 'the rest 429');
    t.same(statuses.slice(0, 5), [401, 401, 401, 401, 401], 'the first 5 are 401s');
  });
});

t.test('the node:http fallback serves on one thread', async (t) => {
  const n = await startNode(t, { env: { VEXIL_FRONT_THREADS: '4', VEXIL_HTTP_FRONT: 'node' } });
  const h = await n.req('GET', '/healthz');
  t.equal(h.body.http, 'node');
  t.equal(h.body.frontThreads, 1, 'one thread');
  const org = await createOrg(n, ['production'], ['web']);
  must(t, await postFlag(n, org.adminKey, 'f1'), 201, 'flag');
  must(t, await postConfig(n, org.adminKey, 'f1'), 200, 'config');
  const key = await evalKey(n, org.adminKey, 'web');
  const r = await n.req('POST', '/flags/f1', { key, body: ctx });
  t.equal(r.status, 200, 'evaluates');
});
