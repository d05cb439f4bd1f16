/**
 * Thousands of half-open connections (docs/limits.md, "Slow clients"), one front per suite (half-open-uws and
 * half-open-node, each within the per-file time limit): 2,000 sockets that sent half a request
 * head, and 200 that sent a head and half a body, are held while evaluations go on; each
 * evaluation is still answered promptly (a generous bound, not a benchmark), and the head and body
 * timeouts then close every held connection.
 */
import type { Socket } from 'node:net';
import t from 'tap';
import { loadNativeUws } from '../../../src/http/uws.js';
import { createFlag, createKey, evaluate, startTestNode, upsertConfig } from '../../helpers/node.js';
import { openSocket, watch, type WatchedSocket } from '../../helpers/raw-http.js';

const native = loadNativeUws().ok;
const HALF_HEADS = 2000;
const HALF_BODIES = 200;
/** Connections opened at once (under the listen backlog). */
const BATCH = 100;
/** An evaluation slower than this while the connections are held fails the test. */
const PROMPT_MS = 1000;

async function openMany(url: string, count: number, send: (s: Socket) => void): Promise<WatchedSocket[]> {
  const out: WatchedSocket[] = [];
  for (let i = 0; i < count; i += BATCH) {
    const batch = await Promise.all(Array.from({ length: Math.min(BATCH, count - i) }, () => openSocket(url)));
    for (const s of batch) {
      const w = watch(s);
      send(s);
      out.push(w);
    }
  }
  return out;
}

export function halfOpenSuite(front: 'uws' | 'node'): void {
  t.test(`${front} front`, { skip: front === 'uws' && !native && 'no native uWebSockets.js binary loads here' }, async (t) => {
    // Heads: the default 10 s on both fronts; bodies: 5 s instead of 30 s, so that the suite is shorter.
    const headMs = 10_000;
    const bodyMs = 5000;
    const n = await startTestNode(t, { env: { VEXIL_HTTP_FRONT: front === 'node' ? 'node' : 'auto', VEXIL_BODY_TIMEOUT_MS: String(bodyMs) } });
    t.teardown(() => n.close());
    await createFlag(n, 'f');
    await upsertConfig(n, 'f', {});
    const key = await createKey(n, { permissions: ['CanEvaluate'], application: 'default' });
    const body = { userId: 'u1', stage: 'production' };

    const started = performance.now();
    const heads = await openMany(n.url, HALF_HEADS, (s) => s.write('POST /flags/f HTTP/1.1\r\nHost: x\r\nContent-Le'));
    const bodyText = JSON.stringify(body);
    const bodies = await openMany(n.url, HALF_BODIES, (s) =>
      s.write(`POST /flags/f HTTP/1.1\r\nHost: x\r\nX-Management-Key: ${key}\r\nContent-Type: application/json\r\nContent-Length: ${bodyText.length}\r\n\r\n{"user`),
    );
    const held = [...heads, ...bodies];
    t.teardown(() => held.forEach((w) => w.socket.destroy()));
    t.comment(`${held.length} connections opened in ${Math.round(performance.now() - started)} ms`);
    const stillOpen = held.filter((w) => !w.isClosed).length;
    t.equal(stillOpen, held.length, 'every half-open connection is held (none closed yet)');

    const times: number[] = [];
    for (let i = 0; i < 50; i++) {
      const t0 = performance.now();
      const r = await evaluate(n, key, 'f', { ...body, userId: `u${i}` });
      times.push(performance.now() - t0);
      if (r.status !== 200) t.fail(`evaluation ${i}: ${r.status} ${r.text}`);
    }
    const slowest = Math.max(...times);
    t.ok(slowest < PROMPT_MS, `50 evaluations answered while ${held.length} connections are held; slowest ${Math.round(slowest)} ms`);
    t.equal(held.filter((w) => !w.isClosed).length, held.length, 'and the half-open connections were still held meanwhile');

    // uSockets runs its timers on a 4 s tick; node:http checks deadlines a few times per head timeout.
    const bound = Math.max(headMs, bodyMs) + 5000;
    const allClosed = await Promise.race([Promise.all(held.map((w) => w.closed)).then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), bound))]);
    t.ok(allClosed, `every held connection is closed by the head and body timeouts (${held.filter((w) => w.isClosed).length}/${held.length} within ${Math.round((performance.now() - started) / 1000)} s of opening)`);
    t.notOk(held.some((w) => /HTTP\/1\.1 200/.test(w.received)), 'none of them was answered');
    const after = await evaluate(n, key, 'f', body);
    t.equal(after.status, 200, 'the node still answers afterwards');
  });
}
