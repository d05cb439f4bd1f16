/**
 * Cross-origin OFREP (VEXIL_CORS_ORIGINS, src/http/cors.ts) over real HTTP, on both fronts:
 * preflight answers for allowed and other origins, CORS headers on answers and on errors (a browser
 * must be able to read a 401 or a 429), exposed ETag, `*`, and nothing at all without the setting.
 * The same flows in a real browser from another origin are in web-sdk.test.ts.
 */
import t from 'tap';
import { expectProblem, startTestNode, type Res } from '../../helpers/node.js';

const APP = 'https://app.example.com';
const BULK = '/ofrep/v1/evaluate/flags';
const SINGLE = '/ofrep/v1/evaluate/flags/f';
const body = { context: { targetingKey: 'u', stage: 'production' } };

const preflight = (n: { req: (m: string, p: string, o?: object) => Promise<Res> }, path: string, origin: string | null, method = 'POST') =>
  n.req('OPTIONS', path, {
    headers: {
      ...(origin === null ? {} : { origin }),
      'access-control-request-method': method,
      'access-control-request-headers': 'authorization, content-type, if-none-match',
    },
  });

for (const front of ['auto', 'node']) {
  t.test(`VEXIL_CORS_ORIGINS on the ${front === 'node' ? 'node:http' : 'native'} front`, async (t) => {
    const n = await startTestNode(t, { env: { VEXIL_CORS_ORIGINS: `${APP}, http://localhost:5173`, VEXIL_HTTP_FRONT: front } });
    await n.req('POST', '/api/flags', { key: n.adminKey, body: { name: 'f', project: 'default', type: 'boolean', variants: [{ key: 'on', value: true, valueType: 'boolean' }, { key: 'off', value: false, valueType: 'boolean' }] } });
    await n.req('POST', '/api/flags/f/configs', { key: n.adminKey, body: { stage: 'production', enabled: true, defaultVariantKey: 'on' } });
    const key = (await n.req('POST', '/api/keys', { key: n.adminKey, body: { name: 'web', permissions: ['CanEvaluate'], application: 'default' } })).body.key as string;

    for (const path of [SINGLE, BULK]) {
      const p = await preflight(n, path, APP);
      t.equal(p.status, 204, `${path}: preflight from an allowed origin is 204`);
      t.equal(p.headers.get('access-control-allow-origin'), APP, 'the origin is echoed');
      t.equal(p.headers.get('vary'), 'Origin', 'Vary: Origin');
      t.equal(p.headers.get('access-control-allow-methods'), 'POST', 'the route\'s methods');
      const allowed = (p.headers.get('access-control-allow-headers') ?? '').split(/,\s*/);
      for (const h of ['authorization', 'content-type', 'if-none-match', 'x-api-key']) t.ok(allowed.includes(h), `request header ${h} allowed`);
      t.equal(p.headers.get('access-control-max-age'), '600', 'cached for 10 minutes');
      t.equal(p.text, '', 'no body');
    }
    const other = await preflight(n, BULK, 'https://evil.example.net');
    expectProblem(t, other, 403, 'FORBIDDEN', 'preflight from another origin');
    t.equal(other.headers.get('access-control-allow-origin'), null, 'no CORS headers for it');
    t.equal((await preflight(n, '/ofrep/v1/events', 'http://localhost:5173', 'GET')).headers.get('access-control-allow-methods'), 'GET', 'the event stream\'s preflight names GET');
    t.equal((await preflight(n, '/flags/f', APP)).status, 405, 'routes outside OFREP are not cross-origin: 405 as before');

    const ok = await n.req('POST', BULK, { headers: { origin: APP, authorization: `Bearer ${key}` }, body });
    t.equal(ok.status, 200, 'bulk from the allowed origin');
    t.equal(ok.headers.get('access-control-allow-origin'), APP, 'answer carries Access-Control-Allow-Origin');
    t.match(ok.headers.get('access-control-expose-headers') ?? '', /etag/, 'ETag is exposed (304 polling)');
    t.match(ok.headers.get('access-control-expose-headers') ?? '', /retry-after/, 'Retry-After is exposed (429)');
    const denied = await n.req('POST', SINGLE, { headers: { origin: APP, 'x-api-key': '0'.repeat(64) }, body });
    t.equal(denied.status, 401, 'a bad key');
    t.equal(denied.headers.get('access-control-allow-origin'), APP, 'errors carry CORS headers too, so the browser can read them');
    const elsewhere = await n.req('POST', SINGLE, { headers: { origin: 'https://evil.example.net', 'x-api-key': key }, body });
    t.equal(elsewhere.status, 200, 'another origin still gets its answer (the key is what authorises)');
    t.equal(elsewhere.headers.get('access-control-allow-origin'), null, 'but no CORS headers: its browser will not hand it over');
    t.equal((await n.req('POST', SINGLE, { headers: { 'x-api-key': key }, body })).headers.get('access-control-allow-origin'), null, 'no Origin: no CORS headers');
    t.equal((await n.req('DELETE', BULK, { headers: { origin: APP } })).headers.get('access-control-allow-origin'), APP, 'a 405 on a cross-origin route carries them too');
  });
}

t.test('VEXIL_CORS_ORIGINS=*', async (t) => {
  const n = await startTestNode(t, { env: { VEXIL_CORS_ORIGINS: '*' } });
  const p = await preflight(n, BULK, 'https://anywhere.example');
  t.equal(p.status, 204);
  t.equal(p.headers.get('access-control-allow-origin'), '*', 'any origin: *');
  t.equal(p.headers.get('vary'), null, 'the answer does not vary by origin');
  const r = await n.req('POST', BULK, { headers: { origin: 'https://anywhere.example', 'x-api-key': '0'.repeat(64) }, body });
  t.equal(r.headers.get('access-control-allow-origin'), '*');
});

t.test('without VEXIL_CORS_ORIGINS nothing changes', async (t) => {
  const n = await startTestNode(t);
  const p = await preflight(n, BULK, APP);
  t.equal(p.status, 405, 'OPTIONS is a 405, in OFREP\'s error shape as before');
  t.type(p.body?.errorDetails, 'string');
  t.equal(p.headers.get('allow'), 'POST');
  t.equal(p.headers.get('access-control-allow-origin'), null);
  const r = await n.req('POST', BULK, { headers: { origin: APP, 'x-api-key': '0'.repeat(64) }, body });
  t.equal(r.headers.get('access-control-allow-origin'), null, 'no CORS headers');
});

t.test('the setting is checked at start-up', async (t) => {
  const { loadConfig } = await import('../../../src/config.js');
  t.same(loadConfig({ VEXIL_CORS_ORIGINS: ' https://a.example , http://localhost:3000 ' }).corsOrigins, ['https://a.example', 'http://localhost:3000']);
  t.same(loadConfig({}).corsOrigins, [], 'unset: none');
  t.throws(() => loadConfig({ VEXIL_CORS_ORIGINS: 'https://a.example/path' }), /Invalid setting VEXIL_CORS_ORIGINS/, 'an origin has no path');
  t.throws(() => loadConfig({ VEXIL_CORS_ORIGINS: 'a.example' }), /Invalid setting VEXIL_CORS_ORIGINS/, 'an origin has a scheme');
});
