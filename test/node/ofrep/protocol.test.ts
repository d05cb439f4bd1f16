/**
 * OFREP on the wire (docs/ofrep.md), with real requests to a live node: OFREP error shapes (never
 * problem+json), the permission / subscription / rate-limit rules of POST /flags/{name}, the bulk
 * answer's contents, and its ETag (what changes it and what does not).
 */
import t from 'tap';
import { operatorRequest, type Res, type TestNode } from '../../helpers/node.js';
import { createOrg, evalKey, makeKey, must, postConfig, postFlag, putFlag, startNode } from '../../helpers/flags.js';

const SINGLE = '/ofrep/v1/evaluate/flags/';
const BULK = '/ofrep/v1/evaluate/flags';

/** An OFREP error: status, JSON (not problem+json), and exactly the given fields. */
function expectOfrepError(t: Tap, r: Res, status: number, body: Record<string, string | undefined>, what: string) {
  t.equal(r.status, status, `${what}: HTTP ${status} (got ${r.status} ${r.text.slice(0, 200)})`);
  t.match(r.headers.get('content-type') ?? '', /^application\/json/, `${what}: application/json, not problem+json`);
  const { errorDetails, ...rest } = r.body ?? {};
  const { errorDetails: _d, ...expected } = body;
  t.same(rest, expected, `${what}: fields ${JSON.stringify(Object.keys(body))}`);
  t.type(errorDetails, 'string', `${what}: errorDetails`);
}
type Tap = Parameters<Parameters<typeof t.test>[0]>[0];

t.test('OFREP protocol', async (t) => {
  const n = await startNode(t);
  const org = await createOrg(n, ['development', 'production'], ['web', 'other']);
  const admin = org.adminKey;
  const ek = await evalKey(n, admin, 'web');
  must(t, await postFlag(n, admin, 'a-on'), 201, 'a-on');
  must(t, await postConfig(n, admin, 'a-on', { defaultVariantKey: 'on' }), 200, 'a-on config');
  must(t, await postFlag(n, admin, 'b-disabled'), 201, 'b-disabled');
  must(t, await postConfig(n, admin, 'b-disabled', { enabled: false }), 200, 'b-disabled config');
  must(t, await postFlag(n, admin, 'c-unconfigured'), 201, 'c-unconfigured');
  must(t, await postFlag(n, admin, 'd-dev-only'), 201, 'd-dev-only');
  must(t, await postConfig(n, admin, 'd-dev-only', { stage: 'development' }), 200, 'd-dev-only config');
  must(t, await postFlag(n, admin, 'e-ios-only'), 201, 'e-ios-only');
  must(t, await postConfig(n, admin, 'e-ios-only', { clientId: 'web:ios', defaultVariantKey: 'on' }), 200, 'e-ios-only config');
  must(t, await postFlag(n, admin, 'z-other-app', { project: 'other' }), 201, 'z-other-app');
  must(t, await postConfig(n, admin, 'z-other-app', {}), 200, 'z-other-app config');
  const ctx = { targetingKey: 'user-1', stage: 'production' };
  const single = (flag: string, body: unknown, key = ek) => n.req('POST', SINGLE + flag, { key, body });
  const bulk = (body: unknown, key = ek, headers: Record<string, string> = {}) => n.req('POST', BULK, { key, body, headers });

  t.test('bad requests answer OFREP error shapes', async (t) => {
    expectOfrepError(t, await n.req('POST', SINGLE + 'a-on', { key: ek, raw: '{not json', headers: { 'content-type': 'application/json' } }), 400, { key: 'a-on', errorCode: 'PARSE_ERROR' }, 'single, not JSON');
    expectOfrepError(t, await n.req('POST', BULK, { key: ek, raw: '[1]', headers: { 'content-type': 'application/json' } }), 400, { errorCode: 'PARSE_ERROR' }, 'bulk, not an object');
    expectOfrepError(t, await single('a-on', { context: 'x' }), 400, { key: 'a-on', errorCode: 'INVALID_CONTEXT' }, 'context not an object');
    expectOfrepError(t, await bulk({ context: [1] }), 400, { errorCode: 'INVALID_CONTEXT' }, 'bulk, context an array');
    expectOfrepError(t, await single('a-on', { context: { stage: 'production' } }), 400, { key: 'a-on', errorCode: 'TARGETING_KEY_MISSING' }, 'no targetingKey');
    expectOfrepError(t, await single('a-on', {}), 400, { key: 'a-on', errorCode: 'TARGETING_KEY_MISSING' }, 'no context');
    expectOfrepError(t, await n.req('POST', SINGLE + 'a-on', { key: ek }), 400, { key: 'a-on', errorCode: 'TARGETING_KEY_MISSING' }, 'empty body');
    expectOfrepError(t, await bulk({ context: { stage: 'production' } }), 400, { errorCode: 'TARGETING_KEY_MISSING' }, 'bulk, no targetingKey');
    expectOfrepError(t, await single('a-on', { context: { targetingKey: 7, stage: 'production' } }), 400, { key: 'a-on', errorCode: 'INVALID_CONTEXT' }, 'targetingKey not a string');
    expectOfrepError(t, await single('a-on', { context: { targetingKey: 'u', stage: 3 } }), 400, { key: 'a-on', errorCode: 'INVALID_CONTEXT' }, 'stage not a string');
    expectOfrepError(t, await single('a-on', { context: { targetingKey: 'u', stage: 'production', clientId: {} } }), 400, { key: 'a-on', errorCode: 'INVALID_CONTEXT' }, 'clientId not a string');
    expectOfrepError(t, await single('a-on', { context: { targetingKey: 'u' } }), 400, { key: 'a-on', errorCode: 'INVALID_CONTEXT' }, 'no stage, key without environment scope');
    expectOfrepError(t, await bulk({ context: { targetingKey: 'u', stage: 'moon' } }), 400, { errorCode: 'INVALID_CONTEXT' }, 'bulk, unknown stage');
    expectOfrepError(t, await single('nope', { context: ctx }), 404, { key: 'nope', errorCode: 'FLAG_NOT_FOUND' }, 'unknown flag');
    expectOfrepError(t, await n.req('POST', SINGLE + 'a-on', { key: ek, raw: JSON.stringify({ context: ctx }), headers: { 'content-type': 'text/plain' } }), 415, {}, 'not JSON content type');
    expectOfrepError(t, await n.req('GET', SINGLE + 'a-on', { key: ek }), 405, {}, 'GET');
    // 413 comes from the front before the route runs (the uWS front answers it as problem+json).
    t.equal((await n.req('POST', SINGLE + 'a-on', { key: ek, raw: Buffer.alloc((1 << 20) + 10, 32), headers: { 'content-type': 'application/json' } })).status, 413, 'over 1 MiB: 413');
  });

  t.test('authentication, permission, scope and subscription as POST /flags/{name}', async (t) => {
    for (const [path, body] of [[SINGLE + 'a-on', { context: ctx }], [BULK, { context: ctx }]] as const) {
      expectOfrepError(t, await n.req('POST', path, { body }), 401, {}, `${path}: no key`);
      expectOfrepError(t, await n.req('POST', path, { key: 'f'.repeat(64), body }), 401, {}, `${path}: unknown key`);
      expectOfrepError(t, await n.req('POST', path, { key: admin, body }), 403, {}, `${path}: organization-wide key`);
      const reader = await makeKey(n, admin, { permissions: ['CanRead'], application: 'web' });
      expectOfrepError(t, await n.req('POST', path, { key: reader, body }), 403, {}, `${path}: no CanEvaluate`);
      const devKey = await evalKey(n, admin, 'web', 'development');
      expectOfrepError(t, await n.req('POST', path, { key: devKey, body }), 403, {}, `${path}: stage outside the environment scope`);
    }
    expectOfrepError(t, await single('z-other-app', { context: ctx }), 403, {}, 'flag of another application');
    // 402: an organization without subscription.
    const org2 = await createOrg(n, ['production'], ['web']);
    const k2 = await evalKey(n, org2.adminKey, 'web');
    must(t, await operatorRequest(n, 'PATCH', `/organizations/${org2.name}`, { subscriptionActive: false }), 200, 'subscription off');
    expectOfrepError(t, await single('a-on', { context: ctx }, k2), 402, {}, 'single without subscription');
    expectOfrepError(t, await bulk({ context: ctx }, k2), 402, {}, 'bulk without subscription');
  });

  t.test('the key in X-API-Key, Authorization: Bearer or x-management-key', async (t) => {
    const body = { context: ctx };
    for (const [what, headers] of [
      ['X-API-Key', { 'X-API-Key': ek }],
      ['Authorization: Bearer', { Authorization: `Bearer ${ek}` }],
      ['authorization: bearer (any case)', { authorization: `bearer ${ek}` }],
    ] as const) {
      const s = await n.req('POST', SINGLE + 'a-on', { body, headers });
      t.equal(s.status, 200, `single, ${what}`);
      t.equal(s.body.key, 'a-on');
      const b = await n.req('POST', BULK, { body, headers });
      t.equal(b.status, 200, `bulk, ${what}`);
    }
    expectOfrepError(t, await n.req('POST', SINGLE + 'a-on', { body, headers: { 'X-API-Key': 'f'.repeat(64) } }), 401, {}, 'unknown key in X-API-Key');
    expectOfrepError(t, await n.req('POST', SINGLE + 'a-on', { body, headers: { Authorization: `Basic ${ek}` } }), 401, {}, 'not a Bearer credential');
  });

  t.test('If-None-Match: 304 with no body for the current ETag, 200 otherwise', async (t) => {
    const first = await bulk({ context: ctx });
    const etag = first.headers.get('etag')!;
    const same = await bulk({ context: ctx }, ek, { 'if-none-match': etag });
    t.equal(same.status, 304, 'current ETag: 304');
    t.equal(same.text, '', 'no body');
    t.equal(same.headers.get('etag'), etag, 'the 304 repeats the ETag');
    t.equal((await bulk({ context: ctx }, ek, { 'if-none-match': `W/${etag}` })).status, 304, 'weak form matches');
    t.equal((await bulk({ context: ctx }, ek, { 'if-none-match': `"other", ${etag}` })).status, 304, 'a list matches');
    t.equal((await bulk({ context: ctx }, ek, { 'if-none-match': '"stale"' })).status, 200, 'another ETag: 200');
    const otherCtx = await bulk({ context: { ...ctx, targetingKey: 'user-9' } }, ek, { 'if-none-match': etag });
    t.equal(otherCtx.status, 200, 'an ETag issued for another context never earns a 304');
    const ek3 = await evalKey(n, admin, 'web');
    t.equal((await bulk({ context: ctx }, ek3, { 'if-none-match': etag })).status, 200, 'nor one issued for another key');
    // Errors come before the ETag: a bad key with a good ETag is still 401.
    expectOfrepError(t, await bulk({ context: ctx }, 'f'.repeat(64), { 'if-none-match': etag }), 401, {}, 'bad key with a current ETag');
  });

  t.test('bulk answers advertise the SSE stream; its URL holds no key value', async (t) => {
    const r = await bulk({ context: ctx });
    t.equal(r.body.eventStreams.length, 1);
    const es = r.body.eventStreams[0];
    t.equal(es.type, 'sse');
    const url = new URL(es.url);
    t.equal(url.origin, n.url, 'absolute, built from the Host header');
    t.equal(url.pathname, '/ofrep/v1/events');
    t.notOk(es.url.includes(ek), 'no key value in the URL');
    t.notMatch(es.url, /[0-9a-f]{64}/, 'no 64-hex value at all');
    t.equal((await bulk({ context: ctx })).body.eventStreams[0].url, es.url, 'the same URL on the next answer (the provider keeps its connection)');
  });

  t.test('bulk: every flag of the key application with a configuration for the stage', async (t) => {
    const r = await bulk({ context: ctx });
    t.equal(r.status, 200);
    t.same(Object.keys(r.body), ['flags', 'eventStreams'], 'flags and eventStreams');
    t.same(r.body.flags, [
      { key: 'a-on', value: true, variant: 'on', reason: 'STATIC', metadata: { reasonCode: 'default' } },
      { key: 'b-disabled', value: false, variant: 'off', reason: 'DISABLED', metadata: { reasonCode: 'config_disabled' } },
    ], 'configured flags of web in production, the disabled one included; no unconfigured, other stage, other client or other application');
    const ios = await bulk({ context: { ...ctx, clientId: 'web:ios' } });
    t.same(ios.body.flags.map((f: { key: string }) => f.key), ['a-on', 'b-disabled', 'e-ios-only'], 'a clientId adds the flags configured for it');
    const dev = await bulk({ context: { ...ctx, stage: 'development' } });
    t.same(dev.body.flags.map((f: { key: string }) => f.key), ['d-dev-only'], 'the stage selects the flags');
    // Each answer equals the single evaluation of the same flag.
    for (const f of ios.body.flags) {
      const s = await single(f.key, { context: { ...ctx, clientId: 'web:ios' } });
      t.same(s.body, f, `${f.key}: bulk answer = single answer`);
    }
  });

  t.test('bulk ETag: same data, key and context give the same tag; any change of them another', async (t) => {
    const etagOf = async (body: unknown, key = ek) => {
      const r = await bulk(body, key);
      t.equal(r.status, 200);
      const tag = r.headers.get('etag');
      t.match(tag, /^"[A-Za-z0-9_-]{27}"$/, 'a strong ETag');
      return tag as string;
    };
    const first = await etagOf({ context: ctx });
    t.equal(await etagOf({ context: ctx }), first, 'repeated request: same ETag');
    t.not(await etagOf({ context: { ...ctx, targetingKey: 'user-2' } }), first, 'another user: another ETag');
    t.not(await etagOf({ context: { ...ctx, plan: 'gold' } }), first, 'another context property: another ETag');
    const ek2 = await evalKey(n, admin, 'web');
    t.not(await etagOf({ context: ctx }, ek2), first, 'another key with the same scope: another ETag');
    must(t, await postConfig(n, admin, 'a-on', { defaultVariantKey: 'off' }), 200, 'change a-on');
    const changed = await etagOf({ context: ctx });
    t.not(changed, first, 'a configuration change: another ETag');
    t.equal((await bulk({ context: ctx })).body.flags[0].value, false, 'and the new answer');
    must(t, await putFlag(n, admin, 'z-other-app', { description: 'x' }), 200, 'change another application');
    t.not(await etagOf({ context: ctx }), changed, 'a change elsewhere in the organization may change it too (documented)');

    // A time boundary changes answers without a write: the ETag follows.
    must(t, await postFlag(n, admin, 'f-soon'), 201, 'f-soon');
    must(t, await postConfig(n, admin, 'f-soon', { defaultVariantKey: 'on', activeFrom: new Date(Date.now() + 1500).toISOString() }), 200, 'f-soon config');
    const before = await bulk({ context: ctx });
    t.equal(before.body.flags.find((f: { key: string }) => f.key === 'f-soon').metadata.reasonCode, 'not_yet_active');
    await new Promise((r) => setTimeout(r, 1700));
    const after = await bulk({ context: ctx });
    t.equal(after.body.flags.find((f: { key: string }) => f.key === 'f-soon').metadata.reasonCode, 'default', 'active now');
    t.not(after.headers.get('etag'), before.headers.get('etag'), 'activeFrom passed: another ETag');
  });
});

t.test('a bulk request costs one rate-limit token; 429 carries Retry-After', async (t) => {
  const n: TestNode = await startNode(t, { env: { VEXIL_RATE_LIMIT_EVAL: '2' } });
  const org = await createOrg(n, ['production'], ['web']);
  for (const f of ['x1', 'x2', 'x3', 'x4', 'x5']) {
    must(t, await postFlag(n, org.adminKey, f), 201, f);
    must(t, await postConfig(n, org.adminKey, f), 200, `${f} config`);
  }
  const ek = await evalKey(n, org.adminKey, 'web');
  const body = { context: { targetingKey: 'u', stage: 'production' } };
  const a = await n.req('POST', BULK, { key: ek, body });
  t.equal(a.body.flags.length, 5, 'five flags in one bulk');
  const b = await n.req('POST', BULK, { key: ek, body });
  t.equal(b.status, 200, 'a second bulk still fits a bucket of 2');
  const c = await n.req('POST', BULK, { key: ek, body });
  expectOfrepError(t, c, 429, {}, 'third bulk');
  t.equal(c.headers.get('retry-after'), '1', 'Retry-After');
});

t.test('single evaluation through the worker pool answers as on the front thread', async (t) => {
  const front = await startNode(t);
  const pooled = await startNode(t, { env: { VEXIL_EVAL_WORKERS: '1', VEXIL_EVAL_HANDOFF: 'always' } });
  const answers: unknown[][] = [];
  for (const n of [front, pooled]) {
    const org = await createOrg(n, ['production'], ['web']);
    must(t, await postFlag(n, org.adminKey, 'p-split'), 201, 'p-split');
    must(t, await postConfig(n, org.adminKey, 'p-split', { rules: [{ id: 'half', priority: 1, conditions: [], allocations: [{ variantKey: 'on', percentage: 50 }, { variantKey: 'off', percentage: 50 }] }] }), 200, 'p-split config');
    must(t, await postFlag(n, org.adminKey, 'p-match'), 201, 'p-match');
    must(t, await postConfig(n, org.adminKey, 'p-match', { rules: [{ id: 'all', priority: 1, conditions: [{ field: 'tier', operator: '==', value: 'gold' }], allocations: [{ variantKey: 'on', percentage: 100 }] }] }), 200, 'p-match config');
    const ek = await evalKey(n, org.adminKey, 'web');
    const list: unknown[] = [];
    for (const [flag, extra] of [['p-split', {}], ['p-match', { tier: 'gold' }], ['p-match', { tier: 'iron' }]] as const) {
      for (const user of ['a', 'b', 'c']) {
        const r = await n.req('POST', SINGLE + flag, { key: ek, body: { context: { targetingKey: user, stage: 'production', ...extra } } });
        t.equal(r.status, 200);
        list.push(r.body);
      }
    }
    answers.push(list);
  }
  t.same(answers[1], answers[0], 'the same answers, reasons included (SPLIT, TARGETING_MATCH, STATIC)');
  t.same(new Set(answers[0].map((a) => (a as { reason: string }).reason)), new Set(['SPLIT', 'TARGETING_MATCH', 'STATIC']));
  t.ok(pooled.node.runtime.pool!.itemsSent > 0, 'the pooled node evaluated in its workers');
});

t.test('VEXIL_PUBLIC_URL is the base of the event-stream URL', async (t) => {
  const n = await startNode(t, { env: { VEXIL_PUBLIC_URL: 'https://flags.example.com/' } });
  const org = await createOrg(n, ['development', 'production'], ['web']);
  const ek = await evalKey(n, org.adminKey, 'web');
  must(t, await postFlag(n, org.adminKey, 'a-on'), 201, 'a-on');
  must(t, await postConfig(n, org.adminKey, 'a-on', { defaultVariantKey: 'on' }), 200, 'a-on config');
  const r = await n.req('POST', BULK, { key: ek, body: { context: { targetingKey: 'u', stage: 'production' } } });
  t.equal(r.status, 200);
  const url = new URL(r.body.eventStreams[0].url);
  t.equal(url.origin, 'https://flags.example.com', 'the public URL, not the Host header');
  t.equal(url.pathname, '/ofrep/v1/events', 'without a doubled slash');
});
