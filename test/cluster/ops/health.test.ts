/**
 * /livez, /readyz, /healthz (README.md, "Health checks"): ready while the database answers, 503 problem+json
 * when PostgreSQL is cut (a real TCP cut, as the cluster failure suite does) and during shutdown;
 * the database check costs at most one query per second however often it is probed.
 */
import { rmSync } from 'node:fs';
import { connect } from 'node:net';
import t from 'tap';
import { postgresBehindProxy, until } from '../../helpers/cluster.js';
import { expectProblem, pgliteCopy, request, skipWithoutPostgres, startTestNode } from '../../helpers/node.js';
import { DbHealth } from '../../../src/ops/db-health.js';
import { openPGlite } from '../../../src/storage/pglite.js';

t.test('live, ready and health without a key; readyz 503 once shutdown begins', async (t) => {
  let release: () => void = () => {};
  const n = await startTestNode(t, {
    start: {
      routes: () => [{ method: 'get', pattern: '/test/slow', handler: () => new Promise((resolve) => (release = () => resolve({ status: 200, body: { slow: true } }))) }],
    },
  });
  const live = await n.req('GET', '/livez');
  t.equal(live.status, 200);
  t.same(live.body, { status: 'live' });
  const ready = await n.req('GET', '/readyz');
  t.equal(ready.status, 200);
  t.equal(ready.body.status, 'ready');
  t.equal(ready.body.database, 'up');
  const health = await n.req('GET', '/healthz');
  t.equal(health.status, 200);
  t.equal(health.body.status, 'ok');
  t.equal(health.body.bus, 'local');
  t.notOk(/[0-9a-f]{64}/.test(live.text + ready.text + health.text), 'no key value in any of them');

  // A keep-alive connection opened before shutdown, and a request in flight during it.
  const sock = connect(Number(new URL(n.url).port), '127.0.0.1');
  let buffered = '';
  sock.on('data', (d) => (buffered += d.toString()));
  const exchange = async (path: string): Promise<string> => {
    buffered = '';
    sock.write(`GET ${path} HTTP/1.1\r\nHost: localhost\r\n\r\n`);
    await until(async () => buffered, (b) => /\r\n\r\n[\s\S]*\}/.test(b), 5000);
    return buffered;
  };
  t.match(await exchange('/readyz'), /^HTTP\/1\.1 200/, 'ready before shutdown');
  const slow = request(n.url, 'GET', '/test/slow');
  await new Promise((r) => setTimeout(r, 100));

  const closing = n.node.close();
  const during = await exchange('/readyz');
  t.match(during, /^HTTP\/1\.1 503/, 'readyz answers 503 at once during shutdown');
  t.match(during, /content-type: application\/problem\+json/i, 'as problem+json');
  t.match(during, /"code":"UNAVAILABLE"/);
  t.match(during, /connection: close/i, 'and closes the connection');
  release();
  t.equal((await slow).status, 200, 'the in-flight request still finishes');
  await closing;
  sock.destroy();
});

t.test('the database check: one query per second at most, whatever the probe rate', async (t) => {
  const dir = await pgliteCopy();
  const db = await openPGlite(dir);
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  let queries = 0;
  const counted = { ...db, kind: db.kind, query: (text: string, params?: unknown[]) => (queries++, db.query(text, params)) } as typeof db;
  const ping = () => counted.query('select 1 as ok');
  const h = new DbHealth(ping, 1000, 1000);
  const answers = await Promise.all(Array.from({ length: 200 }, () => h.answers()));
  t.ok(answers.every((a) => a === true), '200 concurrent probes: the database answers');
  t.equal(queries, 1, 'they shared one query');
  let yes = 0;
  for (let i = 0; i < 500; i++) if ((await h.answers()) === true) yes++;
  t.equal(yes, 500, '500 more probes within the second: all ready');
  t.equal(queries, 1, '500 more probes within the second: still one query');
  await new Promise((r) => setTimeout(r, 1100));
  await h.answers();
  t.equal(queries, 2, 'after the cache time, one fresh query');
  await db.close();
  t.equal(await new DbHealth(ping, 1000, 1000).answers(), false, 'a closed database does not answer');
});

t.test('PostgreSQL cut: readyz 503 problem+json, livez 200; back to ready when it returns', { skip: skipWithoutPostgres() }, async (t) => {
  const { proxy, databaseUrl } = await postgresBehindProxy(t);
  const n = await startTestNode(t, { databaseUrl });
  t.equal((await n.req('GET', '/readyz')).status, 200, 'ready while PostgreSQL answers');

  proxy.cut();
  const down = await until(() => n.req('GET', '/readyz'), (r) => r.status === 503, 5000, 100);
  expectProblem(t, down, 503, 'UNAVAILABLE', /database/);
  t.equal(down.headers.get('retry-after'), '1');
  t.equal((await n.req('GET', '/livez')).status, 200, 'still live: the process runs');
  t.equal((await n.req('GET', '/healthz')).status, 200, '/healthz unchanged');

  proxy.restore();
  const up = await until(() => n.req('GET', '/readyz'), (r) => r.status === 200, 10_000, 100);
  t.equal(up.status, 200, 'ready again once PostgreSQL answers');
});
