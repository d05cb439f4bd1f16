/**
 * Large management answers are compressed by the management actor in a coding the client accepts
 * (src/http/content-encoding.ts): brotli before gzip, none when the client asks for none or refuses
 * both with q=0; every answer of COMPRESS_MIN_BYTES or more says `Vary: Accept-Encoding`; smaller
 * answers go as they are. The bytes decode to exactly the uncompressed answer. A large flag list
 * goes gzip-coded to any client that accepts gzip, br or not (assembled from kept chunks,
 * src/features/flags/list-body.ts flagListGzip), with the same headers as the uncompressed one,
 * and shows a write at once; a kept large list is kept per coding. Both fronts.
 */
import { randomBytes } from 'node:crypto';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import t from 'tap';
import { acceptsCoding, chooseEncoding, COMPRESS_MIN_BYTES } from '../../../src/http/content-encoding.js';
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

t.test('chooseEncoding and acceptsCoding', async (t) => {
  t.equal(chooseEncoding('gzip, deflate, br'), 'br');
  t.equal(chooseEncoding('gzip, deflate'), 'gzip');
  t.equal(chooseEncoding('br;q=0, gzip'), 'gzip');
  t.equal(chooseEncoding('deflate'), 'identity');
  t.equal(chooseEncoding('*'), 'gzip', '* stands for gzip');
  t.equal(chooseEncoding('gzip;q=0, *'), 'identity', 'a coding refused by name is refused whatever * says');
  t.ok(acceptsCoding('gzip, br', 'gzip'));
  t.ok(acceptsCoding('br, *;q=0.5', 'gzip'));
  t.notOk(acceptsCoding('br', 'gzip'));
  t.notOk(acceptsCoding('gzip;q=0, br', 'gzip'));
  t.notOk(acceptsCoding('GZIP;Q=0', 'gzip'), 'case-insensitive');
  t.notOk(acceptsCoding('identity', 'gzip'));
  t.notOk(acceptsCoding('', 'gzip'));
});

for (const front of native ? ['uws', 'node'] : ['node']) {
  t.test(`${front} front`, async (t) => {
    const n = await startTestNode(t, { env: { VEXIL_RATE_LIMIT_MGMT: '100000', VEXIL_MAX_VALUE_BYTES: '200000', ...(front === 'node' ? { VEXIL_HTTP_FRONT: 'node' } : {}) } });
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

    // A flag list: gzip whenever gzip is accepted, br or not.
    const gzBr = await rawGet(n, '/api/flags', 'gzip, deflate, br');
    t.equal(gzBr.status, 200);
    t.equal(gzBr.headers.get('content-encoding'), 'gzip', 'a large list: gzip even when br is accepted');
    t.match(gzBr.headers.get('vary') ?? '', /accept-encoding/i);
    t.equal(Number(gzBr.headers.get('content-length')), gzBr.body.length, 'Content-Length of the compressed bytes');
    t.ok(gzBr.body.length * 5 < plain.body.length, `compressed: ${gzBr.body.length} of ${plain.body.length} bytes`);
    t.ok(gunzipSync(gzBr.body).equals(plain.body), 'decodes to exactly the uncompressed answer');
    t.equal(gzBr.headers.get('x-total-count'), String(FLAGS), "the route's own headers stay");

    const gz = await rawGet(n, '/api/flags', 'gzip');
    t.equal(gz.headers.get('content-encoding'), 'gzip', 'gzip alone');
    t.ok(gz.body.equals(gzBr.body), 'the same bytes');

    const br = await rawGet(n, '/api/flags', 'br');
    t.equal(br.headers.get('content-encoding'), 'br', 'a client that accepts br and not gzip: br, by the actor');
    t.match(br.headers.get('vary') ?? '', /accept-encoding/i);
    t.ok(brotliDecompressSync(br.body).equals(plain.body), 'decodes to exactly the uncompressed answer');
    const again = await rawGet(n, '/api/flags', 'br');
    t.ok(again.body.equals(br.body), 'a repeat at the same version: the same bytes');

    for (const refusing of ['br;q=0, gzip;q=0', 'gzip;q=0', 'identity', 'gzip;q=0, *']) {
      const refused = await rawGet(n, '/api/flags', refusing);
      t.notOk(refused.headers.has('content-encoding'), `${refusing}: no coding`);
      t.ok(refused.body.equals(plain.body), `${refusing}: the list as it is`);
    }

    // A page of the list over COMPRESS_MIN_BYTES: gzip, with the same X-Total-Count and Link.
    const pagePlain = await rawGet(n, '/api/flags?limit=40&after=wide-005', null);
    const pageGz = await rawGet(n, '/api/flags?limit=40&after=wide-005', 'gzip, br');
    t.ok(pagePlain.body.length >= COMPRESS_MIN_BYTES, `a page of ${pagePlain.body.length} bytes`);
    t.equal(pageGz.headers.get('content-encoding'), 'gzip', 'a large page: gzip');
    t.ok(gunzipSync(pageGz.body).equals(pagePlain.body), 'decodes to exactly the uncompressed page');
    t.equal(pageGz.headers.get('x-total-count'), pagePlain.headers.get('x-total-count'), 'X-Total-Count unchanged');
    t.match(pageGz.headers.get('link') ?? '', /after=wide-045/, 'Link');
    t.equal(pageGz.headers.get('link'), pagePlain.headers.get('link'), 'Link unchanged');

    const small = await rawGet(n, '/api/flags?limit=2', 'br, gzip');
    t.equal(small.status, 200);
    t.notOk(small.headers.has('content-encoding'), 'a small answer goes as it is');
    t.notOk(small.headers.has('vary'), 'and does not vary');
    t.equal((JSON.parse(small.body.toString('utf8')) as unknown[]).length, 2);

    // A write gives a new version: the gzip list holds it, and is again exactly the uncompressed one.
    const put = await n.req('PUT', '/api/flags/wide-030', { key: n.adminKey, body: { description: 'written: é € 𝄞' } });
    t.equal(put.status, 200);
    const afterPut = await rawGet(n, '/api/flags', 'gzip, deflate, br');
    const afterPutPlain = await rawGet(n, '/api/flags', null);
    t.equal(afterPut.headers.get('content-encoding'), 'gzip');
    t.ok(gunzipSync(afterPut.body).equals(afterPutPlain.body), 'after a write: exactly the uncompressed list');
    const written = (JSON.parse(afterPutPlain.body.toString('utf8')) as { name: string; description: string }[]).find((f) => f.name === 'wide-030');
    t.equal(written?.description, 'written: é € 𝄞', 'which holds the write');
    const created = await createFlag(n, 'wide-new');
    t.equal(created.status, 201);
    const after = await rawGet(n, '/api/flags', 'gzip, br');
    const names = (JSON.parse(gunzipSync(after.body).toString('utf8')) as { name: string }[]).map((f) => f.name);
    t.ok(names.includes('wide-new'), 'the list after a create holds it');
    t.equal(after.headers.get('x-total-count'), String(FLAGS + 1));

    // A list large enough to be kept (list-cache.ts, over 1 MiB even gzip-coded: incompressible
    // values): kept per coding, so neither client is sent the other's bytes.
    for (let i = 0; i < 12; i++) {
      const r = await createFlag(n, `zz-noise-${i}`, {
        type: 'string',
        variants: [{ key: 'a', value: randomBytes(120_000).toString('base64'), valueType: 'string' }, { key: 'b', value: 'b', valueType: 'string' }],
      });
      t.equal(r.status, 201);
    }
    const keptPlain = await rawGet(n, '/api/flags', null);
    const keptGz = await rawGet(n, '/api/flags', 'gzip, br');
    const keptPlain2 = await rawGet(n, '/api/flags', null);
    const keptGz2 = await rawGet(n, '/api/flags', 'gzip, br');
    t.ok(keptGz.body.length > 1 << 20, `the gzip list (${keptGz.body.length} bytes) is large enough to be kept`);
    t.equal(keptGz.headers.get('content-encoding'), 'gzip');
    t.ok(gunzipSync(keptGz.body).equals(keptPlain.body), 'gzip after identity: the same list');
    t.notOk(keptPlain2.headers.has('content-encoding'), 'identity after gzip: no coding');
    t.ok(keptPlain2.body.equals(keptPlain.body), 'identity after gzip: the list as it is');
    t.equal(keptGz2.headers.get('content-encoding'), 'gzip');
    t.ok(keptGz2.body.equals(keptGz.body), 'a repeat: the same gzip bytes');

    // A one-flag write near the list's start: the answer is assembled from kept chunks (each a
    // byte-aligned deflate piece), so the chunks after the written one are sent as the same bytes
    // as before. A list compressed whole again would share (almost) nothing after the change:
    // deflate is a bit stream, and the written flag's new length shifts everything after it.
    const putEarly = await n.req('PUT', '/api/flags/wide-010', { key: n.adminKey, body: { description: 'written again: a shorter one' } });
    t.equal(putEarly.status, 200);
    const writtenGz = await rawGet(n, '/api/flags', 'gzip, br');
    const writtenPlain = await rawGet(n, '/api/flags', null);
    t.equal(writtenGz.headers.get('content-encoding'), 'gzip');
    t.notOk(writtenGz.body.equals(keptGz.body), 'the write changed the gzip body');
    t.ok(gunzipSync(writtenGz.body).equals(writtenPlain.body), 'which is again exactly the uncompressed list');
    t.equal((JSON.parse(writtenPlain.body.toString('utf8')) as { name: string; description: string }[]).find((f) => f.name === 'wide-010')?.description, 'written again: a shorter one');
    const before = keptGz.body.subarray(0, -8); // without the trailer (CRC-32 and length of the whole)
    const now = writtenGz.body.subarray(0, -8);
    let shared = 0;
    while (shared < before.length && shared < now.length && before[before.length - 1 - shared] === now[now.length - 1 - shared]) shared++;
    t.ok(shared > now.length / 2, `the chunks after the written one are the same bytes: the last ${shared} of ${now.length} compressed bytes unchanged`);

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
    t.equal(data.data.flags.length, FLAGS + 13, 'and fetch decodes it');
    const gqBr = await fetch(`${n.url}/api/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-management-key': n.adminKey, 'accept-encoding': 'gzip, br' },
      body: JSON.stringify({ query }),
    });
    t.equal(gqBr.headers.get('content-encoding'), 'br', 'other large answers: brotli when accepted');
  });
}
