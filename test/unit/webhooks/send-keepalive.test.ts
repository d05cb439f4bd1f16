/**
 * send.ts with the dispatcher's keep-alive agents (docs/webhooks.md, "Pace of one endpoint"):
 * attempts to one endpoint reuse one connection; a reused connection the endpoint closed
 * meanwhile (reset before any answer) is retried once on a new connection within the attempt.
 * A real local HTTP server.
 */
import t from 'tap';
import http, { createServer } from 'node:http';
import https from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { send, type Agents } from '../../../src/features/webhooks/send.js';

t.test('keep-alive: one connection for many attempts; a stale reused one is retried once on a new one', async (t) => {
  const served = new WeakMap<Socket, number>();
  const ports: number[] = [];
  let dropReused = false;
  const server = createServer((req, res) => {
    const n = (served.get(req.socket) ?? 0) + 1;
    served.set(req.socket, n);
    req.resume();
    req.on('end', () => {
      // The endpoint closed this kept-alive connection just as the request came: reset, no answer.
      if (dropReused && n > 1) {
        req.socket.destroy();
        return;
      }
      ports.push(req.socket.remotePort ?? 0);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const agents: Agents = { http: new http.Agent({ keepAlive: true }), https: new https.Agent({ keepAlive: true }) };
  t.teardown(() => {
    agents.http.destroy();
    agents.https.destroy();
    server.closeAllConnections();
    server.close();
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  const attempt = () => send({ url, headers: {}, body: '{}', timeoutMs: 3000, allowPrivate: true, agents });

  for (let i = 0; i < 5; i++) t.match(await attempt(), { status: 204, error: null });
  t.equal(new Set(ports).size, 1, 'five attempts, one connection');

  dropReused = true;
  const r = await attempt();
  t.match(r, { status: 204, error: null }, 'the reset reused connection was retried on a new one and answered');
  t.equal(ports.length, 6);
  t.not(ports[5], ports[0], 'the answer came over a new connection');
});
