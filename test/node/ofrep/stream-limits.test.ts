/**
 * OFREP event stream limits (docs/ofrep.md, "The event stream"), on both fronts: past VEXIL_SSE_MAX_STREAMS_PER_KEY
 * open streams of one key on a node, one more is 429 RATE_LIMITED (in OFREP's `{errorDetails}`
 * shape, as every error of the OFREP routes, docs/ofrep.md, "Answers"; Retry-After);
 * a closed stream frees its place; other keys are not affected. Every open stream's key is read
 * again from the database every VEXIL_SSE_KEY_RECHECK_MS, so a key disabled, rotated or deleted in the
 * database without its message reaching the node (here: written straight to the database, past
 * the management API and the bus) ends its streams. Nothing else would end them: no key event
 * reaches the node, and the key cache ends no stream by expiring.
 */
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { loadNativeUws } from '../../../src/http/uws.js';
import type { TestNode } from '../../helpers/node.js';
import { createOrg, evalKey, expectProblem, must, postConfig, postFlag, startNode } from '../../helpers/flags.js';
import { openSse, within, type SseStream } from '../../helpers/sse.js';

const native = loadNativeUws().ok;
const MAX = 3;
const RECHECK_MS = 500;

async function streamUrl(n: TestNode, key: string): Promise<string> {
  const r = await n.req('POST', '/ofrep/v1/evaluate/flags', { key, body: { context: { targetingKey: 'u1', stage: 'production' } } });
  if (r.status !== 200) throw new Error(`bulk failed: ${r.status} ${r.text}`);
  return r.body.eventStreams[0].url as string;
}

const keyIdOf = (url: string): string => new URL(url).searchParams.get('token')!.split('.')[0];

for (const front of ['uws', 'node'] as const) {
  t.test(`${front} front`, { skip: front === 'uws' && !native && 'no native uWebSockets.js binary loads here' }, async (t) => {
    const frontEnv = { VEXIL_HTTP_FRONT: front === 'node' ? 'node' : 'auto' };
    const n = await startNode(t, { env: { ...frontEnv, VEXIL_SSE_MAX_STREAMS_PER_KEY: String(MAX), VEXIL_SSE_KEY_RECHECK_MS: String(RECHECK_MS) } });
    t.teardown(() => n.close());
    t.equal(n.node.front.kind, front);
    const org = await createOrg(n, ['production'], ['web']);
    must(t, await postFlag(n, org.adminKey, 'w1'), 201, 'w1');
    must(t, await postConfig(n, org.adminKey, 'w1'), 200, 'w1 config');
    const open: SseStream[] = [];
    t.teardown(() => open.forEach((s) => s.close()));
    const connect = async (url: string) => {
      const s = await openSse(url);
      open.push(s);
      return s;
    };

    t.test(`at most ${MAX} streams per key: one more is 429 RATE_LIMITED`, async (t) => {
      const url = await streamUrl(n, await evalKey(n, org.adminKey, 'web'));
      const streams: SseStream[] = [];
      for (let i = 0; i < MAX; i++) streams.push(await connect(url));
      t.same(streams.map((s) => s.status), Array(MAX).fill(200), `${MAX} streams open`);
      const over = await openSse(url);
      t.equal(over.status, 429, `stream ${MAX + 1}: 429`);
      // RATE_LIMITED in OFREP's error shape, as every error of the OFREP routes (docs/ofrep.md, "Answers").
      t.match(over.headers.get('content-type') ?? '', /^application\/json/, 'JSON');
      const error = JSON.parse(over.text);
      t.same(Object.keys(error), ['errorDetails'], "OFREP's {errorDetails}");
      t.match(error.errorDetails, /VEXIL_SSE_MAX_STREAMS_PER_KEY/, 'naming the limit');
      t.ok(Number(over.headers.get('retry-after')) >= 1, 'Retry-After');

      const other = await connect(await streamUrl(n, await evalKey(n, org.adminKey, 'web')));
      t.equal(other.status, 200, "another key's stream is not affected");

      streams[0].close();
      // The node learns of the close from its socket: retry until the place is free.
      let again: SseStream | null = null;
      for (let i = 0; i < 20 && again?.status !== 200; i++) {
        await new Promise((r) => setTimeout(r, 100));
        again = await openSse(url);
      }
      open.push(again!);
      t.equal(again!.status, 200, 'a closed stream frees its place');
      t.equal((await openSse(url)).status, 429, 'and the cap holds again');
      t.ok(streams.slice(1).every((s) => !s.isEnded), 'the other streams stay open');
    });

    t.test('a key disabled, rotated or deleted in the database alone ends its streams at the next re-check', async (t) => {
      for (const change of ['disabled', 'rotated', 'deleted'] as const) {
        const key = await evalKey(n, org.adminKey, 'web');
        const url = await streamUrl(n, key);
        const s = await connect(url);
        t.equal(s.status, 200, `${change}: stream open`);
        // Straight to the database: no key event on this node, as when the bus lost the message.
        const sql = {
          disabled: 'update management_keys set disabled = true where id = $1',
          rotated: `update management_keys set key_hash = '${randomBytes(32).toString('hex')}' where id = $1`,
          deleted: 'delete from management_keys where id = $1',
        }[change];
        await n.node.db.query(sql, [keyIdOf(url)]);
        t.ok(await within(s.ended, RECHECK_MS * 2 + 1500), `${change}: the stream ends within the re-check period`);
        const again = await openSse(url);
        t.equal(again.status, 401, `${change}: reconnecting gets 401`);
      }
    });
  });
}
