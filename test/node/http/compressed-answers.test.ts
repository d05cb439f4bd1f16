/**
 * Large management answers are compressed by the management actor in a coding the client accepts
 * (src/http/content-encoding.ts): brotli before gzip, none when the client asks for none or refuses
 * both with q=0; every answer of COMPRESS_MIN_BYTES or more says `Vary: Accept-Encoding`; smaller
 * answers go as they are. The bytes decode to exactly the uncompressed answer. Both fronts.
 */
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import t from 'tap';
import { chooseEncoding, COMPRESS_MIN_BYTES } from '../../../src/http/content-encoding.js';
import { loadNativeUws } from '../../../src/http/uws.js';
import { createFlag, startTestNode, type TestNode } from '../../helpers/node.js';
import { openSocket } from '../../helpers/raw-http.js';

const native = loadNativeUws().ok;
/** Flags with a ~2 KB description: 60 of them make a list of about 130 KB. */
const FLAGS = 60;

/** One GET over a raw socket (no client-side decoding): the head's headers and the body's bytes. */
async function rawGet(n: TestNode, path: string, acceptEncoding: string | null): Promise<{ status: number; headers: Map<string, string>; body: Buffer }> {
  const s = await openSocket(n.url);
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    const ae = acceptEncoding === null ? '' : `accept-encoding: ${acceptEncoding}\r\n`;
    s.write(`GET ${path} HTTP/1.1\r\nhost: 127.0.0.1\r\nx-management-key: ${n.adminKey}\r\n${ae}connection: close\r\n\r\n`);
    s.on('data', (c: Buffer) => parts.push(c));
    s.on('close', () => {
      const all = Buffer.concat(parts);
      const at = all.indexOf('\r\n\r\n');
      const lines = all.subarray(0, at).toString('latin1').split('\r\n');
      const headers = new Map<string, string>();
      for (const line of lines.slice(1)) {
        const i = line.indexOf(':');
        headers.set(line.slice(0, i).trim().toLowerCase(), line.slice(i + 1).trim());
      }
      resolve({ status: Number(lines[0].split(' ')[1]), headers, body: all.subarray(at + 4) });
    });
    s.on('error', reject);
  });
}

t.test('chooseEncoding', async (t) => {
  t.equal(chooseEncoding('gzip, deflate, br'), 'br');
  t.equal(chooseEncoding('gzip, deflate'), 'gzip');
  t.equal(chooseEncoding('br;q=0, gzip'), 'gzip');
  t.equal(chooseEncoding('deflate'), 'identity');
});

for (const front of native ? ['uws', 'node'] : ['node']) {
  t.test(`${front} front`, async (t) => {
    const n = await startTestNode(t, { env: { VEXIL_RATE_LIMIT_MGMT: '100000', ...(front === 'node' ? { VEXIL_HTTP_FRONT: 'node' } : {}) } });
    for (let i = 0; i < FLAGS; i += 20) {
      await Promise.all(
        Array.from({ length: Math.min(20, FLAGS - i) }, (_, j) =>
          createFlag(n, `wide-${String(i + j).padStart(3, '0')}`, { description: `flag ${i + j} `.repeat(200).slice(0, 2000) }).then((r) => {
            if (r.status !== 201) throw new Error(`create: ${r.status} ${r.text}`);
          }),
        ),
      );
    }
    const plain = await rawGet(n, '/api/flags', null);
    t.equal(plain.status, 200);
    t.ok(plain.body.length >= COMPRESS_MIN_BYTES, `the list (${plain.body.length} bytes) is large enough to compress`);
    t.equal((JSON.parse(plain.body.toString('utf8')) as unknown[]).length, FLAGS, 'no Accept-Encoding: the list as it is');
    t.notOk(plain.headers.has('content-encoding'), 'no Content-Encoding');
    t.match(plain.headers.get('vary') ?? '', /accept-encoding/i, 'Vary: Accept-Encoding on the uncompressed answer too');

    const br = await rawGet(n, '/api/flags', 'gzip, deflate, br');
    t.equal(br.status, 200);
    t.equal(br.headers.get('content-encoding'), 'br', 'brotli when accepted');
    t.match(br.headers.get('vary') ?? '', /accept-encoding/i);
    t.equal(Number(br.headers.get('content-length')), br.body.length, 'Content-Length of the compressed bytes');
    t.ok(br.body.length * 5 < plain.body.length, `compressed: ${br.body.length} of ${plain.body.length} bytes`);
    t.ok(brotliDecompressSync(br.body).equals(plain.body), 'decodes to exactly the uncompressed answer');
    t.equal(br.headers.get('x-total-count'), String(FLAGS), "the route's own headers stay");

    const gz = await rawGet(n, '/api/flags', 'gzip');
    t.equal(gz.headers.get('content-encoding'), 'gzip', 'gzip when brotli is not accepted');
    t.ok(gunzipSync(gz.body).equals(plain.body), 'decodes to exactly the uncompressed answer');

    const again = await rawGet(n, '/api/flags', 'br');
    t.ok(again.body.equals(br.body), 'a repeat at the same version: the same bytes');

    const refused = await rawGet(n, '/api/flags', 'br;q=0, gzip;q=0');
    t.notOk(refused.headers.has('content-encoding'), 'q=0 refuses a coding');
    t.ok(refused.body.equals(plain.body));

    const small = await rawGet(n, '/api/flags?limit=2', 'br, gzip');
    t.equal(small.status, 200);
    t.notOk(small.headers.has('content-encoding'), 'a small answer goes as it is');
    t.notOk(small.headers.has('vary'), 'and does not vary');
    t.equal((JSON.parse(small.body.toString('utf8')) as unknown[]).length, 2);

    // A write gives a new version: the compressed list holds it.
    const created = await createFlag(n, 'wide-new');
    t.equal(created.status, 201);
    const after = await rawGet(n, '/api/flags', 'br');
    const names = (JSON.parse(brotliDecompressSync(after.body).toString('utf8')) as { name: string }[]).map((f) => f.name);
    t.ok(names.includes('wide-new'), 'the list after a write holds it');

    // GraphQL management documents too (the actor's answers, whatever the route).
    const query = '{ flags { name description } }';
    const gq = await fetch(`${n.url}/api/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-management-key': n.adminKey, 'accept-encoding': 'gzip' },
      body: JSON.stringify({ query }),
    });
    t.equal(gq.status, 200);
    t.equal(gq.headers.get('content-encoding'), 'gzip', 'a large GraphQL answer is compressed');
    const data = (await gq.json()) as { data: { flags: unknown[] } };
    t.equal(data.data.flags.length, FLAGS + 1, 'and fetch decodes it');
  });
}
