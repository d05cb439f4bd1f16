/**
 * Both HTTP fronts (native uWebSockets.js and the node:http fallback) serve the same exchange:
 * routing, 404/405 with Allow, declared headers, client address, bodies and the 1 MiB cap, 204,
 * streamed answers, and graceful shutdown (README.md, "Health checks"). Every check runs on each front.
 */
import t from 'tap';
import type { Route } from '../../../src/http/router.js';
import type { StreamSink } from '../../../src/http/handler.js';
import { loadNativeUws } from '../../../src/http/uws.js';
import { expectProblem, startTestNode, type TestNode } from '../../helpers/node.js';
import { openSocket, rawRequest } from '../../helpers/raw-http.js';

const native = loadNativeUws().ok;

interface Hold {
  release: () => void;
  started: Promise<void>;
}

function testRoutes(holds: Hold[], streams: StreamSink[]): () => Route[] {
  return () => [
    {
      method: 'get',
      pattern: '/t/echo/:a/:b',
      headers: ['x-test', 'if-none-match'],
      handler: (inc) => ({
        status: 200,
        body: { method: inc.method, path: inc.path, query: inc.query, params: inc.params, headers: inc.headers, remote: inc.remoteAddress(), key: inc.managementKey },
      }),
    },
    { method: 'post', pattern: '/t/echo/:a/:b', handler: (inc) => ({ status: 200, body: { size: inc.body.length, method: inc.method } }) },
    {
      // A lean handler still running when its body's callback returns: it reads inc.body later.
      method: 'post',
      pattern: '/t/lean-later',
      lean: true,
      handler: async (inc) => {
        await new Promise((r) => setTimeout(r, 30));
        return { status: 200, body: { body: inc.body.toString() } };
      },
    },
    {
      method: 'post',
      pattern: '/t/lean/:a',
      lean: true,
      handler: (inc) => ({
        status: 200,
        body: { path: inc.path, token: inc.operatorToken, query: inc.query, params: inc.params, key: inc.managementKey, type: inc.contentType, body: inc.body.toString() },
      }),
    },
    { method: 'del', pattern: '/t/empty', handler: () => ({ status: 204 }) },
    { method: 'get', pattern: '/t/unchanged', handler: () => ({ status: 304, headers: { etag: '"v1"' } }) },
    { method: 'get', pattern: '/t/files/*', handler: (inc) => ({ status: 200, raw: Buffer.from(`file ${inc.path}`), headers: { 'content-type': 'text/plain' } }) },
    {
      method: 'get',
      pattern: '/t/stream',
      handler: () => ({
        status: 200,
        headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-store' },
        stream: (sink) => {
          streams.push(sink);
          sink.write('data: one\n\n');
        },
      }),
    },
    {
      method: 'post',
      pattern: '/t/hold',
      handler: async () => {
        let release!: () => void;
        const released = new Promise<void>((r) => (release = r));
        let started!: () => void;
        const hold: Hold = { release, started: new Promise((r) => (started = r)) };
        holds.push(hold);
        started();
        await released;
        return { status: 200, body: { held: true } };
      },
    },
  ];
}

for (const front of ['uws', 'node'] as const) {
  t.test(`${front} front`, { skip: front === 'uws' && !native && 'no native uWebSockets.js binary loads here' }, async (t) => {
    const holds: Hold[] = [];
    const streams: StreamSink[] = [];
    const start = async (env: Record<string, string> = {}) =>
      startTestNode(t, { env: { VEXIL_HTTP_FRONT: front === 'node' ? 'node' : 'auto', ...env }, start: { routes: testRoutes(holds, streams) } });
    const n: TestNode = await start();
    t.equal(n.node.front.kind, front, `the node runs on the ${front} front`);
    const health = await n.req('GET', '/healthz');
    t.equal(health.body.http, front, '/healthz names the front');
    t.equal((await n.req('GET', '/readyz')).body.http, front, '/readyz names the front');

    t.test('routing, parameters, declared headers and the client address', async (t) => {
      const r = await n.req('GET', '/t/echo/a%20b/c%2Fd?x=1&y=2', { headers: { 'x-test': 'yes', 'x-other': 'no' }, key: 'k' });
      t.equal(r.status, 200);
      t.same(r.body, { method: 'GET', path: '/t/echo/a%20b/c%2Fd', query: 'x=1&y=2', params: ['a b', 'c/d'], headers: { 'x-test': 'yes', 'if-none-match': '' }, remote: '127.0.0.1', key: 'k' });
      const bad = await n.req('GET', '/t/echo/%E0%A4%A/x');
      expectProblem(t, bad, 400, 'BAD_REQUEST', 'malformed percent-encoding');
      const file = await n.req('GET', '/t/files/a/b.txt');
      t.equal(file.text, 'file /t/files/a/b.txt', 'a wildcard route sees the whole path');
      t.equal(file.headers.get('content-type'), 'text/plain', 'its content type');
    });

    t.test('a lean route (Route.lean) gets everything but the path and the operator token, which only the uws front leaves empty', async (t) => {
      const r = await n.req('POST', '/t/lean/a%20b?explain=1', { headers: { 'x-operator-token': 'secret' }, key: 'k', body: { x: 1 } });
      t.equal(r.status, 200);
      const skipped = front === 'uws' ? { path: '', token: '' } : { path: '/t/lean/a%20b', token: 'secret' };
      t.same(r.body, { ...skipped, query: 'explain=1', params: ['a b'], key: 'k', type: 'application/json', body: '{"x":1}' });
      // Bodies lent by uWS (Route.lean) to handlers that answer later are theirs, whatever arrives meanwhile.
      const bodies = Array.from({ length: 8 }, (_, i) => ({ n: i, pad: String(i).repeat(10 + i * 50) }));
      const later = await Promise.all(bodies.map((b) => n.req('POST', '/t/lean-later', { body: b })));
      t.same(later.map((x) => x.body.body), bodies.map((b) => JSON.stringify(b)), 'each later handler reads its own body');
    });

    t.test('404 for unknown paths, 405 with Allow for other methods', async (t) => {
      expectProblem(t, await n.req('GET', '/t/nope'), 404, 'NOT_FOUND', 'unknown path');
      expectProblem(t, await n.req('GET', '/t/echo/a'), 404, 'NOT_FOUND', 'too few segments');
      const r = await n.req('PUT', '/t/echo/a/b', { body: {} });
      expectProblem(t, r, 405, 'METHOD_NOT_ALLOWED', 'PUT');
      t.equal(r.headers.get('allow'), 'GET, POST', 'Allow lists the methods');
      const del = await n.req('DELETE', '/api/flags/x/configs');
      t.equal(del.status, 405);
      t.equal(del.headers.get('allow'), 'POST');
    });

    t.test('bodies, the 1 MiB cap, and 204', async (t) => {
      const r = await n.req('POST', '/t/echo/a/b', { raw: Buffer.alloc(300_000, 0x61), headers: { 'content-type': 'text/plain' } });
      t.same(r.body, { size: 300_000, method: 'POST' });
      const big = await n.req('POST', '/t/echo/a/b', { raw: Buffer.alloc((1 << 20) + 1, 0x61) });
      expectProblem(t, big, 413, 'PAYLOAD_TOO_LARGE', 'over 1 MiB');
      const empty = await n.req('DELETE', '/t/empty');
      t.equal(empty.status, 204);
      t.equal(empty.text, '', 'no body');
    });

    t.test('304: reason phrase, no Content-Length, and the connection stays usable', async (t) => {
      const sock = await openSocket(n.url);
      const both = await rawRequest(sock, 'GET /t/unchanged HTTP/1.1\r\nHost: x\r\n\r\nGET /livez HTTP/1.1\r\nHost: x\r\n\r\n', /"live"/);
      const [first] = both.split(/(?=HTTP\/1\.1 200)/);
      t.match(first, /^HTTP\/1\.1 304 Not Modified\r\n/, 'status line with its reason phrase');
      t.match(first, /etag: "v1"/i, 'headers kept');
      t.notMatch(first, /content-length/i, 'no Content-Length');
      t.match(both, /HTTP\/1\.1 200 OK[\s\S]*"live"/, 'a pipelined request after it is answered');
      sock.destroy();
    });

    t.test('streamed answers', async (t) => {
      const sock = await openSocket(n.url);
      const head = await rawRequest(sock, 'GET /t/stream HTTP/1.1\r\nHost: x\r\n\r\n', /data: one/);
      t.match(head, /^HTTP\/1\.1 200 OK\r\n/, 'status line');
      t.match(head, /content-type: text\/event-stream/i, 'event-stream content type');
      t.match(head, /data: one\n\n/, 'the first event arrives at once');
      const sink = streams.at(-1)!;
      const closed = new Promise<void>((r) => sink.onClose(r));
      sink.write('data: two\n\n');
      const more = await new Promise<string>((r) => sock.once('data', (d) => r(d.toString())));
      t.match(more, /data: two/, 'later events arrive');
      sock.destroy();
      await closed;
      t.ok(sink.closed, 'the sink learns that the client left');
      t.doesNotThrow(() => sink.write('data: three\n\n'), 'writing after close is harmless');
    });

    t.test('graceful shutdown: readiness, no new connections, in-flight answered with Connection: close', async (t) => {
      const m = await start({ VEXIL_SHUTDOWN_GRACE_MS: '5000' });
      const idle = await openSocket(m.url); // an open keep-alive connection
      t.match(await rawRequest(idle, 'GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n', /\r\n\r\n\{.*\}/s), /^HTTP\/1\.1 200/, 'ready before');
      const streamSock = await openSocket(m.url);
      await rawRequest(streamSock, 'GET /t/stream HTTP/1.1\r\nHost: x\r\n\r\n', /data: one/);
      const slow = await openSocket(m.url); // its body is still arriving when the shutdown starts
      const slowAnswer = rawRequest(slow, 'POST /t/echo/a/b HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n01234');
      const held = fetch(`${m.url}/t/hold`, { method: 'POST' });
      await new Promise((r) => setTimeout(r, 100));
      await holds.at(-1)!.started;

      // The stream's last chunk (chunked encoding's terminator) or the connection's end.
      const streamEnded = new Promise<void>((r) => streamSock.on('data', (d) => d.toString().includes('0\r\n\r\n') && r()).on('close', r));
      const closing = m.close();
      let closed = false;
      void closing.then(() => (closed = true));
      await streamEnded;
      t.pass('open event streams end at once');
      const ready = await rawRequest(idle, 'GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n', /\r\n\r\n\{.*\}/s);
      t.match(ready, /^HTTP\/1\.1 503/, '/readyz answers 503 at once');
      t.match(ready, /application\/problem\+json/, 'as problem+json');
      await t.rejects(fetch(`${m.url}/livez`), 'new connections are refused');

      slow.write('56789');
      const answer = await slowAnswer;
      t.match(answer, /^HTTP\/1\.1 200/, 'a request whose body was still arriving is answered');
      t.match(answer, /connection: close/i, 'with Connection: close');
      t.notOk(closed, 'shutdown waits for the held request');
      holds.at(-1)!.release();
      const res = await held;
      t.equal(res.status, 200, 'the in-flight request is answered');
      t.equal(res.headers.get('connection'), 'close', 'with Connection: close');
      await closing;
      t.pass('close() resolves once in-flight work is done');
    });

    t.test('graceful shutdown gives up after the grace time', async (t) => {
      const m = await start({ VEXIL_SHUTDOWN_GRACE_MS: '300' });
      const held = fetch(`${m.url}/t/hold`, { method: 'POST' }).then(
        (r) => r.status,
        () => 'cut',
      );
      await new Promise((r) => setTimeout(r, 100));
      await holds.at(-1)!.started;
      const t0 = Date.now();
      await m.close();
      const took = Date.now() - t0;
      t.ok(took >= 250, `close() waited for the grace time (${took} ms)`);
      t.equal(await held, 'cut', 'the request still running after the grace time is cut');
      holds.at(-1)!.release();
    });
  });
}
