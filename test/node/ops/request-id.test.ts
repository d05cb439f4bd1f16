/** x-request-id (docs/api.md, "Operations"; README.md, "Logs"): every answer carries one; a sane client id is honoured. */
import t from 'tap';
import { startTestNode } from '../../helpers/node.js';

t.test('x-request-id: echoed on every answer, a sane client id honoured', async (t) => {
  const n = await startTestNode(t);
  const ids = new Set<string>();
  for (const [method, path] of [['GET', '/livez'], ['GET', '/api/flags'], ['GET', '/nowhere'], ['DELETE', '/livez'], ['POST', '/flags/x']]) {
    const r = await n.req(method, path);
    const id = r.headers.get('x-request-id') ?? '';
    t.match(id, /^[0-9a-f]{8}-[0-9a-z]+$/, `${method} ${path} (${r.status}) carries a generated request id`);
    ids.add(id);
  }
  t.equal(ids.size, 5, 'each request gets its own id');
  const own = await n.req('GET', '/api/flags', { key: n.adminKey, headers: { 'x-request-id': 'client-trace-42.abc' } });
  t.equal(own.headers.get('x-request-id'), 'client-trace-42.abc', 'a sane client id is echoed');
  for (const bad of ['x'.repeat(200), 'has space', '<script>']) {
    const r = await n.req('GET', '/livez', { headers: { 'x-request-id': bad } });
    t.not(r.headers.get('x-request-id'), bad, `an unsafe id (${bad.slice(0, 12)}) is replaced`);
    t.match(r.headers.get('x-request-id') ?? '', /^[0-9a-f]{8}-/);
  }
  const big = await n.req('POST', '/api/flags', { key: n.adminKey, raw: 'x'.repeat((1 << 20) + 10), headers: { 'content-type': 'application/json', 'x-request-id': 'big-1' } });
  t.equal(big.status, 413);
  t.equal(big.headers.get('x-request-id'), 'big-1', 'a 413 carries it too');
});
