/**
 * Failure behaviour (docs/cluster.md, "When NATS is down", "When PostgreSQL is down") and the
 * cluster-wide rate limit ("Rate limits across nodes"), on real PostgreSQL
 * with a private nats-server that the test may stop and restart.
 */
import t from 'tap';
import { NATS_BIN, postgresBehindProxy, PrivateNats, until } from '../helpers/cluster.js';
import { createFlag, createKey, evaluate, freshPostgresDatabase, randomKey, request, startTestNode, upsertConfig } from '../helpers/node.js';
import { spawnNode } from '../helpers/process.js';

const skip = !process.env.DATABASE_URL ? 'DATABASE_URL is not set: cluster failure suite skipped' : !NATS_BIN ? 'nats-server not installed' : false;

t.test('NATS stopped and restarted under load: no wrong answers, convergence by polling, resync', { skip }, async (t) => {
  const db = await freshPostgresDatabase();
  t.teardown(db.drop);
  const nats = await PrivateNats.start();
  t.teardown(() => nats.stop());
  const env = { NATS_URL: nats.url, VEXIL_SYNC_POLL_MS: '200', VEXIL_SYNC_SAFETY_POLL_MS: '600000' };
  const a = await startTestNode(t, { databaseUrl: db.url, env });
  const b = await startTestNode(t, { databaseUrl: db.url, adminKey: a.adminKey, env });
  t.equal((await createFlag(a, 'f')).status, 201);
  t.equal((await upsertConfig(a, 'f', { defaultVariantKey: 'off' })).status, 200);
  const ek = await createKey(a, { permissions: ['CanEvaluate'], application: 'default' });
  const body = { userId: 'u', stage: 'production' };
  t.equal((await until(() => evaluate(b, ek, 'f', body), (r) => r.body?.key === 'off')).body.key, 'off');

  // Background load on B for the whole test: every answer must be 200 with a known variant.
  let stop = false;
  const bad: string[] = [];
  let served = 0;
  const load = (async () => {
    while (!stop) {
      const r = await evaluate(b, ek, 'f', body);
      served++;
      if (r.status !== 200 || (r.body.key !== 'on' && r.body.key !== 'off')) bad.push(`${r.status} ${r.text}`);
    }
  })();

  await nats.stop();
  t.equal((await upsertConfig(a, 'f', { defaultVariantKey: 'on' })).status, 200, 'writes work without NATS');
  const viaPoll = await until(() => evaluate(b, ek, 'f', body), (r) => r.body?.key === 'on', 5000);
  t.equal(viaPoll.body.key, 'on', 'B converges by polling PostgreSQL while NATS is down');

  await nats.restart();
  const health = await until(() => request(b.url, 'GET', '/healthz'), (r) => r.body?.bus === 'up', 10_000, 100);
  t.equal(health.body.bus, 'up', 'B reconnects to NATS');
  // A publishes the next change: it must be back on the bus too (on a busy machine it may reconnect later than B).
  const healthA = await until(() => request(a.url, 'GET', '/healthz'), (r) => r.body?.bus === 'up', 10_000, 100);
  t.equal(healthA.body.bus, 'up', 'A reconnects to NATS');
  t.equal((await upsertConfig(a, 'f', { defaultVariantKey: 'off' })).status, 200);
  const after = await until(() => evaluate(b, ek, 'f', body), (r) => r.body?.key === 'off', 3000);
  t.equal(after.body.key, 'off', 'B converges after NATS is back');

  stop = true;
  await load;
  t.ok(served > 50, `served ${served} evaluations during the outage`);
  t.same(bad, [], 'no wrong answers and no errors under load');
});

t.test('PostgreSQL unreachable: evaluations keep serving, writes answer 503, nothing half-written', { skip }, async (t) => {
  const { proxy, databaseUrl } = await postgresBehindProxy(t);
  const n = await startTestNode(t, { databaseUrl });
  t.equal((await createFlag(n, 'f')).status, 201);
  t.equal((await upsertConfig(n, 'f', { defaultVariantKey: 'on' })).status, 200);
  const ek = await createKey(n, { permissions: ['CanEvaluate'], application: 'default' });
  const before = await n.req('GET', '/api/flags', { key: n.adminKey });
  // The key has been used (and cached) before the outage, as any live client's has.
  t.equal((await evaluate(n, ek, 'f', { userId: 'warm', stage: 'production' })).status, 200);

  proxy.cut();
  for (let i = 0; i < 20; i++) {
    const r = await evaluate(n, ek, 'f', { userId: `u${i}`, stage: 'production' });
    if (r.status !== 200 || r.body.key !== 'on') t.fail(`evaluation during outage: ${r.status} ${r.text}`);
  }
  t.pass('evaluations served from the snapshot while PostgreSQL is unreachable');
  const w = await createFlag(n, 'g');
  t.equal(w.status, 503, 'a write answers 503');
  t.equal(w.body?.code, 'UNAVAILABLE');
  t.match(w.headers.get('content-type') ?? '', /application\/problem\+json/);
  t.same((await n.req('GET', '/api/flags', { key: n.adminKey })).body, before.body, 'reads still answer, unchanged');

  proxy.restore();
  const ok = await until(() => createFlag(n, 'g'), (r) => r.status === 201, 15_000, 200);
  t.equal(ok.status, 201, 'writes work again once PostgreSQL is back');
  const names = (await n.req('GET', '/api/flags', { key: n.adminKey })).body.map((f: { name: string }) => f.name);
  t.same(names, ['f', 'g'], 'exactly the flags that were acknowledged');
});

t.test('PostgreSQL unreachable for longer than VEXIL_KEY_STALE_MAX_MS: a key that cannot be re-checked is refused', { skip }, async (t) => {
  const { proxy, databaseUrl } = await postgresBehindProxy(t);
  const n = await startTestNode(t, {
    databaseUrl,
    env: { VEXIL_KEY_CACHE_TTL_MS: '300', VEXIL_KEY_STALE_MAX_MS: '2000', VEXIL_DB_STATEMENT_TIMEOUT_MS: '1000' },
  });
  t.equal((await createFlag(n, 'f')).status, 201);
  t.equal((await upsertConfig(n, 'f', { defaultVariantKey: 'on' })).status, 200);
  const ek = await createKey(n, { permissions: ['CanEvaluate'], application: 'default' });
  const warmAt = Date.now();
  t.equal((await evaluate(n, ek, 'f', { userId: 'warm', stage: 'production' })).status, 200);
  proxy.cut();
  const cutAt = Date.now();
  await new Promise((r) => setTimeout(r, 600)); // past the key's 300 ms lifetime
  const stale = await evaluate(n, ek, 'f', { userId: 'u1', stage: 'production' });
  t.equal(stale.status, 200, 'within lifetime + VEXIL_KEY_STALE_MAX_MS: the key still serves');
  t.equal(stale.body.key, 'on');
  const refused = await until(() => evaluate(n, ek, 'f', { userId: 'u2', stage: 'production' }), (r) => r.status !== 200, 10_000, 200);
  const after = Date.now() - cutAt;
  t.equal(refused.status, 503, `past it (${after} ms after the cut): 503`);
  t.equal(refused.body?.code, 'UNAVAILABLE');
  t.ok(refused.headers.get('retry-after') !== null, 'with Retry-After');
  t.ok(Date.now() - warmAt >= 2000, 'not before lifetime + VEXIL_KEY_STALE_MAX_MS (from when the key was cached)');
  proxy.restore();
  const back = await until(() => evaluate(n, ek, 'f', { userId: 'u3', stage: 'production' }), (r) => r.status === 200, 15_000, 200);
  t.equal(back.status, 200, 'served again once PostgreSQL is back');
});

t.test('a node killed mid-load: the other node keeps serving', { skip }, async (t) => {
  const db = await freshPostgresDatabase();
  t.teardown(db.drop);
  const adminKey = randomKey();
  const startChild = () => spawnNode(t, { env: { DATABASE_URL: db.url, VEXIL_BOOTSTRAP_ADMIN_KEY: adminKey }, stderr: 'inherit' });
  const a = await startChild();
  const b = await startChild();
  const mk = (url: string) => ({ url, adminKey, req: (m: string, p: string, o?: object) => request(url, m, p, o), node: null as never, close: async () => {} });
  const na = mk(a.url);
  const nb = mk(b.url);
  t.equal((await createFlag(na, 'f')).status, 201);
  t.equal((await upsertConfig(na, 'f', { defaultVariantKey: 'on' })).status, 200);
  const ek = await createKey(na, { permissions: ['CanEvaluate'], application: 'default' });
  await until(() => evaluate(nb, ek, 'f', { userId: 'u', stage: 'production' }), (r) => r.body?.key === 'on', 20_000, 200);

  let stop = false;
  let bOk = 0;
  const bBad: string[] = [];
  const loadB = (async () => {
    while (!stop) {
      const r = await evaluate(nb, ek, 'f', { userId: 'u', stage: 'production' });
      if (r.status === 200 && r.body.key === 'on') bOk++;
      else bBad.push(`${r.status}`);
    }
  })();
  const loadA = (async () => {
    while (!stop) {
      try {
        await evaluate(na, ek, 'f', { userId: 'u', stage: 'production' });
      } catch {
        return; // node A is gone
      }
    }
  })();
  await new Promise((r) => setTimeout(r, 300));
  a.child.kill('SIGKILL');
  const okBefore = bOk;
  await new Promise((r) => setTimeout(r, 700));
  stop = true;
  await Promise.all([loadA, loadB]);
  t.ok(bOk > okBefore, `node B kept answering after A was killed (${bOk - okBefore} answers)`);
  t.same(bBad, [], 'node B never failed');
});

t.test('two nodes together hold a key to its rate limit', { skip }, async (t) => {
  const db = await freshPostgresDatabase();
  t.teardown(db.drop);
  const nats = await PrivateNats.start();
  t.teardown(() => nats.stop());
  const rate = 20;
  const env = { NATS_URL: nats.url, VEXIL_RATE_LIMIT_EVAL: String(rate) };
  const a = await startTestNode(t, { databaseUrl: db.url, env });
  const b = await startTestNode(t, { databaseUrl: db.url, adminKey: a.adminKey, env });
  for (const n of [a, b]) {
    const h = await until(() => request(n.url, 'GET', '/healthz'), (r) => r.body?.nodes === 2, 5000, 100);
    t.equal(h.body.nodes, 2, 'each node counts two live nodes');
  }
  t.equal((await createFlag(a, 'f')).status, 201);
  t.equal((await upsertConfig(a, 'f', {})).status, 200);
  const ek = await createKey(a, { permissions: ['CanEvaluate'], application: 'default' });
  await until(() => evaluate(b, ek, 'f', { userId: 'u', stage: 'production' }), (r) => r.status === 200 || r.status === 429);
  // Wait for the buckets to fill again after the probe above.
  await new Promise((r) => setTimeout(r, 1200));

  const started = performance.now();
  const results = await Promise.all(
    Array.from({ length: 200 }, (_, i) => evaluate(i % 2 === 0 ? a : b, ek, 'f', { userId: `u${i}`, stage: 'production' })),
  );
  const elapsedS = (performance.now() - started) / 1000;
  const admitted = results.filter((r) => r.status === 200).length;
  const limited = results.filter((r) => r.status === 429);
  // Documented bound (docs/cluster.md): one second's burst plus the refill over the elapsed time.
  const bound = Math.ceil(rate * (1 + elapsedS)) + 1;
  t.ok(admitted <= bound, `admitted ${admitted} of 200 in ${elapsedS.toFixed(2)} s across two nodes (bound ${bound})`);
  t.ok(admitted >= rate / 2, 'the key is not starved');
  t.equal(admitted + limited.length, 200, 'everything else is 429');
  t.ok(limited.every((r) => r.headers.get('retry-after') !== null), 'every 429 carries Retry-After');
});
