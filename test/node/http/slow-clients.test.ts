/**
 * Slow clients (docs/limits.md, "Slow clients") on both fronts, over raw sockets: a connection that has not sent a
 * whole head within the head timeout, or a whole body within the body timeout of its head, is
 * closed; an idle keep-alive connection is closed after the idle timeout. Requests in time, a
 * connection kept busy, and an open event stream are not.
 *
 * The node:http front runs with every bound shortened (VEXIL_HEAD/BODY/IDLE_TIMEOUT_MS, 1 s). On
 * uWebSockets.js only the body bound is ours (1 s here); heads and idle connections are bounded by
 * its compiled-in 10 s timer (src/http/client-timeouts.ts), which is what is measured there.
 */
import t from 'tap';
import type { Route } from '../../../src/http/router.js';
import { loadNativeUws } from '../../../src/http/uws.js';
import { createFlag, createKey, startTestNode, upsertConfig } from '../../helpers/node.js';
import { openSocket, watch, type WatchedSocket } from '../../helpers/raw-http.js';

const native = loadNativeUws().ok;
const UWS_TIMER_MS = 10_000;
/** How late a close may come: the fronts check deadlines on a coarse timer, and the machine is shared. */
const SLACK_MS = 3000;
// (uSockets runs its timers on a 4 s tick, so its 10 s is 8 to 12 s: lower bounds are halves.)

const streamRoute = (): Route[] => [
  {
    method: 'get',
    pattern: '/t/stream',
    handler: () => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, stream: (sink) => sink.write('data: open\n\n') }),
  },
];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

for (const front of ['uws', 'node'] as const) {
  t.test(`${front} front`, { skip: front === 'uws' && !native && 'no native uWebSockets.js binary loads here' }, async (t) => {
    const short = { VEXIL_HEAD_TIMEOUT_MS: '1000', VEXIL_BODY_TIMEOUT_MS: '1000', VEXIL_IDLE_TIMEOUT_MS: '1000' };
    const n = await startTestNode(t, { env: { VEXIL_HTTP_FRONT: front === 'node' ? 'node' : 'auto', ...short }, start: { routes: streamRoute } });
    t.teardown(() => n.close());
    t.equal(n.node.front.kind, front);
    const headMs = front === 'uws' ? UWS_TIMER_MS : 1000;
    const idleMs = front === 'uws' ? UWS_TIMER_MS : 1000;
    const bodyMs = 1000;

    await createFlag(n, 'f');
    await upsertConfig(n, 'f', {});
    const key = await createKey(n, { permissions: ['CanEvaluate'], application: 'default' });
    const body = JSON.stringify({ userId: 'u1', stage: 'production' });
    const head = `POST /flags/f HTTP/1.1\r\nHost: x\r\nX-Management-Key: ${key}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`;

    const sockets: WatchedSocket[] = [];
    t.teardown(() => sockets.forEach((s) => s.socket.destroy()));
    const open = async () => {
      const s = watch(await openSocket(n.url));
      sockets.push(s);
      return s;
    };

    // Every case starts at once: on uWS the longest waits are its 10 s timer.
    const silent = await open(); // sends nothing at all
    const halfHead = await open();
    halfHead.socket.write(head.slice(0, 40));
    const halfBody = await open();
    halfBody.socket.write(head + body.slice(0, 10));
    const idle = await open();
    idle.socket.write('GET /livez HTTP/1.1\r\nHost: x\r\n\r\n');
    const stream = await open();
    stream.socket.write('GET /t/stream HTTP/1.1\r\nHost: x\r\n\r\n');
    const streamOpened = performance.now();

    t.test('a body that arrives in time, in pieces, is answered', async (t) => {
      const s = await open();
      s.socket.write(head);
      await sleep(bodyMs / 2);
      s.socket.write(body.slice(0, 10));
      await sleep(bodyMs / 4);
      s.socket.write(body.slice(10));
      await sleep(300);
      t.match(s.received, /^HTTP\/1\.1 200 /, 'answered 200');
      t.match(s.received, /"variant"/, 'with the evaluation');
      s.socket.destroy();
    });

    t.test('a keep-alive connection kept busy stays open past the idle timeout', { skip: front === 'uws' && 'uWS: the idle timer is 10 s' }, async (t) => {
      const s = await open();
      for (let i = 0; i < 4; i++) {
        s.socket.write('GET /livez HTTP/1.1\r\nHost: x\r\n\r\n');
        await sleep(idleMs / 2);
      }
      t.notOk(s.isClosed, `open after ${2 * idleMs} ms of requests every ${idleMs / 2} ms`);
      t.equal(s.received.match(/HTTP\/1\.1 200/g)?.length, 4, 'every request answered');
      s.socket.destroy();
    });

    t.test('half a body: closed after the body timeout, unanswered', async (t) => {
      const ms = await halfBody.closed;
      t.ok(ms >= bodyMs / 2 && ms <= bodyMs + SLACK_MS, `closed after ${Math.round(ms)} ms (body timeout ${bodyMs} ms)`);
      t.notMatch(halfBody.received, /HTTP\/1\.1 200/, 'the request never reached its handler');
    });

    t.test('no head at all, or half a head: closed after the head timeout', async (t) => {
      for (const [what, s] of [['nothing sent', silent], ['half a head', halfHead]] as const) {
        const ms = await s.closed;
        t.ok(ms >= headMs / 2 && ms <= headMs + SLACK_MS, `${what}: closed after ${Math.round(ms)} ms (head timeout ${headMs} ms)`);
        t.notMatch(s.received, /HTTP\/1\.1 200/, `${what}: nothing answered`);
      }
    });

    t.test('an idle keep-alive connection: closed after the idle timeout', async (t) => {
      const ms = await idle.closed;
      t.match(idle.received, /^HTTP\/1\.1 200 /, 'its request was answered');
      // node:http adds its own second to keepAliveTimeout.
      t.ok(ms >= idleMs / 2 && ms <= idleMs + 1000 + SLACK_MS, `closed after ${Math.round(ms)} ms idle (idle timeout ${idleMs} ms)`);
    });

    t.test('an event stream outlives every timeout', async (t) => {
      const longest = Math.max(headMs, bodyMs, idleMs);
      await Promise.race([stream.closed, sleep(streamOpened + longest + 1500 - performance.now())]);
      t.notOk(stream.isClosed, `open after ${Math.round(performance.now() - streamOpened)} ms`);
      t.match(stream.received, /data: open/, 'its event arrived');
      stream.socket.destroy();
    });

    t.test('a closed slow request ends its exchange: shutdown does not wait for it', async (t) => {
      // The half body above was cut by its deadline; an exchange left counted would hold close()
      // for the whole grace time (VEXIL_SHUTDOWN_GRACE_MS, 10 s).
      for (const s of sockets) s.socket.destroy();
      const t0 = performance.now();
      await n.close();
      const ms = performance.now() - t0;
      t.ok(ms < 5000, `close() took ${Math.round(ms)} ms`);
    });
  });
}
