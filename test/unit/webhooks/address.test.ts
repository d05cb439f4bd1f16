/**
 * Where webhooks may go (docs/webhooks.md, "Safety"): the blocked ranges, the URL checks when an
 * endpoint is saved, and the check on the address actually connected to: a resolver that answers a
 * public address the first time and loopback the second (DNS rebinding) reaches nothing.
 */
import t from 'tap';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { checkEndpointUrl, isBlockedAddress, type Resolve } from '../../../src/features/webhooks/address.js';
import { send } from '../../../src/features/webhooks/send.js';
import { isVexilError } from '../../../src/domain/errors.js';

t.test('blocked addresses', async (t) => {
  for (const a of [
    '127.0.0.1', '127.1.2.3', '10.0.0.1', '172.16.0.1', '172.31.255.255', '192.168.1.1', '169.254.169.254', '169.254.0.1', '100.64.0.1', '100.127.255.254',
    '0.0.0.0', '224.0.0.1', '255.255.255.255', '198.18.0.1', '::1', '::', 'fe80::1', 'fc00::1', 'fd12:3456::1', 'ff02::1',
    '::ffff:127.0.0.1', '::ffff:169.254.169.254', '::ffff:7f00:1', '::ffff:a9fe:a9fe', '64:ff9b::7f00:1', '64:ff9b::127.0.0.1', 'fe80::1%eth0', 'not-an-ip',
  ]) t.ok(isBlockedAddress(a), `${a} is refused`);
  for (const a of ['8.8.8.8', '1.1.1.1', '172.32.0.1', '100.128.0.1', '93.184.216.34', '2606:4700:4700::1111', '::ffff:8.8.8.8']) t.notOk(isBlockedAddress(a), `${a} is allowed`);
});

t.test('endpoint URLs when saved', async (t) => {
  const strict = { allowHttp: false, allowPrivate: false };
  t.equal(checkEndpointUrl('https://hooks.example.com/x?y=1', strict), 'https://hooks.example.com/x?y=1');
  const refused = (url: string, rules = strict) => {
    try {
      checkEndpointUrl(url, rules);
      t.fail(`${url} accepted`);
    } catch (e) {
      t.ok(isVexilError(e) && e.code === 'BAD_REQUEST', `${url}: 400 (${(e as Error).message})`);
    }
  };
  for (const u of ['http://hooks.example.com/', 'ftp://x.example/', 'notaurl', '/relative', 'https://user:pw@x.example/', 'https://127.0.0.1/', 'https://localhost/',
    'https://169.254.169.254/latest/meta-data', 'https://[::1]/', 'https://[::ffff:127.0.0.1]/', 'https://10.1.2.3/', 'https://x.example/#frag', `https://x.example/${'a'.repeat(2100)}`]) refused(u);
  t.equal(checkEndpointUrl('http://127.0.0.1:9/x', { allowHttp: true, allowPrivate: true }), 'http://127.0.0.1:9/x');
  refused('http://127.0.0.1:9/x', { allowHttp: true, allowPrivate: false });
  refused('http://8.8.8.8/x', { allowHttp: false, allowPrivate: true });
});

t.test('DNS rebinding: checked on the address connected to, not on an earlier answer', async (t) => {
  let hits = 0;
  const server = createServer((req, res) => {
    hits++;
    res.writeHead(204).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise((r) => server.close(r)));
  const port = (server.address() as AddressInfo).port;
  // Public the first time (when the endpoint was saved, say), loopback the second.
  let calls = 0;
  const rebinding: Resolve = async () => (++calls === 1 ? [{ address: '93.184.216.34', family: 4 }] : [{ address: '127.0.0.1', family: 4 }]);
  t.same(await rebinding('hooks.example'), [{ address: '93.184.216.34', family: 4 }], 'first answer: public');
  const url = `http://hooks.example:${port}/x`;
  const r = await send({ url, headers: {}, body: '{}', timeoutMs: 2000, allowPrivate: false, resolve: rebinding });
  t.equal(r.status, null);
  t.match(r.error, /refused address \(127\.0\.0\.1\)/);
  t.equal(hits, 0, 'nothing reached the loopback server');
  // A metadata address, and one blocked answer among public ones.
  for (const answers of [[{ address: '169.254.169.254', family: 4 }], [{ address: '8.8.8.8', family: 4 }, { address: '::1', family: 6 }]]) {
    const r2 = await send({ url, headers: {}, body: '{}', timeoutMs: 2000, allowPrivate: false, resolve: async () => answers });
    t.match(r2.error, /refused address/, JSON.stringify(answers));
  }
  // IP literals are checked without a lookup.
  const r3 = await send({ url: `http://127.0.0.1:${port}/x`, headers: {}, body: '{}', timeoutMs: 2000, allowPrivate: false });
  t.match(r3.error, /refused address 127\.0\.0\.1/);
  const r4 = await send({ url: `http://[::ffff:127.0.0.1]:${port}/x`, headers: {}, body: '{}', timeoutMs: 2000, allowPrivate: false });
  t.match(r4.error, /refused address/);
  t.equal(hits, 0, 'still nothing');
  // With VEXIL_WEBHOOK_ALLOW_PRIVATE the same resolver's answer is used: the request arrives.
  const ok = await send({ url, headers: {}, body: '{}', timeoutMs: 2000, allowPrivate: true, resolve: async () => [{ address: '127.0.0.1', family: 4 }] });
  t.equal(ok.status, 204);
  t.equal(hits, 1);
});

t.test('send: redirects not followed, at most 64 KiB read, a timeout', async (t) => {
  const server = createServer((req, res) => {
    if (req.url === '/redirect') res.writeHead(302, { location: '/elsewhere' }).end();
    else if (req.url === '/big') {
      res.writeHead(500);
      const chunk = Buffer.alloc(16 * 1024, 120);
      // An endless answer: only 64 KiB are read.
      const timer = setInterval(() => res.write(chunk), 1);
      res.on('close', () => clearInterval(timer));
    } else if (req.url === '/hang') {
      /* never answers */
    } else if (req.url === '/elsewhere') res.writeHead(200).end('should not be reached');
    else res.writeHead(200).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => {
    server.closeAllConnections();
    return new Promise((r) => server.close(r));
  });
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const go = (path: string, timeoutMs = 2000) => send({ url: base + path, headers: {}, body: '{}', timeoutMs, allowPrivate: true });
  const redirect = await go('/redirect');
  t.equal(redirect.status, 302);
  t.match(redirect.error, /redirects are not followed/);
  const big = await go('/big');
  t.equal(big.status, 500);
  t.equal(big.responseBytes, 64 * 1024, 'read up to 64 KiB');
  const hang = await go('/hang', 300);
  t.equal(hang.status, null);
  t.match(hang.error, /timeout after 300 ms/);
  t.ok(hang.durationMs >= 290 && hang.durationMs < 1500, `${hang.durationMs} ms`);
});
