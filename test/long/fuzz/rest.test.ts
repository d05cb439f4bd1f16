/**
 * REST fuzzing against a running node (docs/limits.md, "Fuzzing"): generated methods, paths, query strings, headers
 * and bodies. Every answer keeps the invariants of harness.ts (no 5xx but a documented 503, every
 * error problem+json, no hang, the node alive), and a rejected write changes nothing: after each,
 * the organization's flags, configurations, keys and settings are read back and compared.
 */
import fc from 'fast-check';
import t from 'tap';
import { createFlag, createKey, startTestNode, upsertConfig, type TestNode } from '../../helpers/node.js';
import { abusiveJson, anyJson, bodyText, contentType, fuzz, keyHeader, pathSegment, queryString, scaled, send, violations, type Sent } from './harness.js';

const OPEN_LIMITS = { VEXIL_RATE_LIMIT_EVAL: '1000000000', VEXIL_RATE_LIMIT_MGMT: '1000000000', VEXIL_RATE_LIMIT_AUTH_FAILURES: '1000000000' };

async function organization(n: TestNode) {
  await createFlag(n, 'f');
  await upsertConfig(n, 'f', {
    rules: [{ priority: 1, conditions: [{ field: 'country', operator: '==', value: 'NL' }], allocations: [{ variantKey: 'on', percentage: 100 }] }],
  });
  const evalKey = await createKey(n, { permissions: ['CanEvaluate'], application: 'default' });
  const readKey = await createKey(n, { permissions: ['CanRead'] });
  return [n.adminKey, evalKey, readKey];
}

const variant = fc.record({ key: fc.oneof(fc.constantFrom('on', 'off', 'x'), fc.string()), value: anyJson, valueType: fc.constantFrom('boolean', 'string', 'number', 'json', 'other') }, { requiredKeys: [] });
const flagBody = fc.record(
  {
    name: fc.oneof(fc.constantFrom('f', 'g', 'new-flag', 'bad name', ''), fc.string({ maxLength: 140 })),
    project: fc.oneof(fc.constantFrom('default', 'missing'), fc.string()),
    type: fc.constantFrom('boolean', 'string', 'number', 'json', 'nope'),
    description: fc.oneof(fc.string(), fc.constant(null), fc.integer()),
    tags: fc.array(fc.string(), { maxLength: 5 }),
    variants: fc.array(variant, { maxLength: 4 }),
    environments: fc.array(fc.constantFrom('production', 'development', 'nope'), { maxLength: 3 }),
    dependencies: fc.array(fc.record({ flag: fc.constantFrom('f', 'g', 'zz'), variants: fc.array(fc.string(), { maxLength: 2 }) }), { maxLength: 2 }),
    isArchived: fc.oneof(fc.boolean(), fc.string()),
    extra: anyJson,
  },
  { requiredKeys: [] },
);
const configBody = fc.record(
  {
    stage: fc.constantFrom('production', 'development', 'PRODUCTION', 'nope', ''),
    clientId: fc.oneof(fc.constant(null), fc.constantFrom('default:web', 'other:web', 'web'), fc.string()),
    enabled: fc.oneof(fc.boolean(), fc.constant('yes')),
    defaultVariantKey: fc.constantFrom('on', 'off', 'nope'),
    rolloutPercentage: fc.oneof(fc.double(), fc.integer({ min: -10, max: 110 })),
    rules: fc.array(
      fc.record(
        {
          priority: fc.oneof(fc.integer({ min: -2, max: 5 }), fc.double()),
          conditions: fc.array(fc.record({ field: fc.oneof(fc.constantFrom('country', 'a.b', '', '..', 'userId'), fc.string()), operator: fc.constantFrom('==', '!=', 'in', '<', 'nope'), value: anyJson }, { requiredKeys: [] }), { maxLength: 3 }),
          allocations: fc.array(fc.record({ variantKey: fc.constantFrom('on', 'off', 'x'), percentage: fc.oneof(fc.constantFrom(100, 50, 0), fc.double()) }), { maxLength: 3 }),
        },
        { requiredKeys: [] },
      ),
      { maxLength: 3 },
    ),
    activeFrom: fc.oneof(fc.constant(null), fc.constantFrom('2020-01-01T00:00:00Z', 'yesterday', '2999-01-01T00:00:00+02:00'), fc.string()),
    enrollmentCutoff: fc.oneof(fc.constant(null), fc.double()),
  },
  { requiredKeys: [] },
);
const evalBody = fc.record({ userId: fc.oneof(fc.string(), anyJson), stage: fc.oneof(fc.constantFrom('production', 'development', 'nope'), anyJson), clientId: fc.oneof(fc.constant(null), fc.string()), context: abusiveJson, extra: anyJson }, { requiredKeys: [] });
const keyBody = fc.record({ name: fc.oneof(fc.string(), anyJson), permissions: fc.oneof(fc.array(fc.constantFrom('CanEvaluate', 'CanRead', 'CanWrite', 'Admin', 'Root')), anyJson), application: fc.oneof(fc.constantFrom('default', 'nope'), fc.constant(null), anyJson), environment: fc.oneof(fc.constantFrom('production', 'nope'), fc.constant(null)) }, { requiredKeys: [] });

function requests(keys: string[]): fc.Arbitrary<Sent> {
  const path = fc.oneof(
    fc.tuple(pathSegment, queryString).map(([n, q]) => `/flags/${n}${q}`),
    fc.constantFrom('/api/flags', '/api/keys', '/api/graphql', '/healthz', '/livez', '/readyz', '/', '/api', '/api/operator/organizations', '/nope', '//api/flags', '/api/flags/'),
    fc.tuple(pathSegment, fc.constantFrom('', '/configs', '/x')).map(([n, s]) => `/api/flags/${n}${s}`),
    fc.tuple(pathSegment, fc.constantFrom('', '/rotate', '/disable')).map(([n, s]) => `/api/keys/${n}${s}`),
  );
  const body = fc.oneof(bodyText(evalBody), bodyText(flagBody), bodyText(configBody), bodyText(keyBody), bodyText(abusiveJson));
  return fc
    // Mostly the methods the routes take (unrouted methods are rarer: each costs the front far more).
    .record({
      method: fc.oneof({ weight: 12, arbitrary: fc.constantFrom('GET', 'POST') }, { weight: 1, arbitrary: fc.constantFrom('PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS') }),
      path,
      key: keyHeader(keys),
      ct: contentType,
      body,
    })
    .map(({ method, path, key, ct, body }) => ({
      method,
      path,
      headers: { ...key, ...ct },
      ...(method === 'GET' || method === 'HEAD' ? {} : { body }),
    }));
}

/** Everything an organization holds, as the API shows it. */
async function fingerprint(n: TestNode): Promise<string> {
  const parts = await Promise.all([
    n.req('GET', '/api/flags', { key: n.adminKey }),
    ...['f', 'g', 'new-flag'].map((f) => n.req('GET', `/api/flags/${f}`, { key: n.adminKey })),
    n.req('GET', '/api/keys', { key: n.adminKey }),
    n.req('POST', '/api/graphql', { key: n.adminKey, body: { query: '{ environments applications killSwitch { flag application environment } }' } }),
  ]);
  return JSON.stringify(parts.map((p) => [p.status, p.body]));
}

t.test('REST fuzz', { timeout: 600_000 }, async (t) => {
  const n = await startTestNode(t, { env: { ...OPEN_LIMITS, VEXIL_EVAL_WORKERS: '1' } });
  const keys = await organization(n);
  const started = Date.now();
  const total = await fuzz(t, n.url, requests(keys), scaled(12_000), false);
  t.ok(total >= scaled(12_000), `${total} cases in ${Date.now() - started} ms`);
  t.equal((await n.req('GET', '/healthz')).status, 200, 'the node is alive');
});

t.test('rejected writes change nothing', { timeout: 600_000 }, async (t) => {
  const started = Date.now();
  const n = await startTestNode(t, { env: OPEN_LIMITS });
  const keys = await organization(n);
  const write = fc.oneof(
    bodyText(flagBody).map((body) => ({ method: 'POST', path: '/api/flags', body })),
    bodyText(flagBody).map((body) => ({ method: 'PUT', path: '/api/flags/f', body })),
    bodyText(configBody).map((body) => ({ method: 'POST', path: '/api/flags/f/configs', body })),
    bodyText(keyBody).map((body) => ({ method: 'POST', path: '/api/keys', body })),
    fc.constantFrom('f', 'nope', '%ZZ').map((f) => ({ method: 'DELETE', path: `/api/flags/${f}`, body: undefined as string | undefined })),
  );
  const arb = fc.record({ w: write, key: fc.constantFrom(...keys), ct: contentType }).map(({ w, key, ct }) => ({ ...w, headers: { 'x-management-key': key, ...ct } }));
  const samples = fc.sample(arb, { numRuns: scaled(500), seed: Number(process.env.VEXIL_FUZZ_SEED ?? 7) });
  let before = await fingerprint(n);
  let rejected = 0;
  let failures = 0;
  for (const s of samples) {
    const g = await send(n.url, s);
    const v = violations(s, g, false);
    if (v.length > 0 && failures++ < 5) t.fail(`${v.join('; ')} for ${JSON.stringify(s).slice(0, 400)}`);
    const after = await fingerprint(n);
    if (g.status >= 400) {
      rejected++;
      if (after !== before && failures++ < 5) t.fail(`rejected write (${g.status}) changed data: ${JSON.stringify(s).slice(0, 400)}`);
    }
    before = after;
  }
  t.comment(`${samples.length} writes in ${Date.now() - started} ms`);
  t.equal(failures, 0, `${samples.length} writes, ${rejected} rejected, none changed the organization`);
});
