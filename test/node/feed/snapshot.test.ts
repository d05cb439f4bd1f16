/**
 * `GET /sdk/v1/snapshot` (docs/feed.md, "The snapshot") over real HTTP: exactly the key's
 * application's flags in the stage (configurations of that stage only, every clientId), the
 * segments their rules name, the parents of dependencies (recursively, of any application), the
 * kill-switch rules that can match; the key rules of an evaluation (401, 402, 403 scopes, 400, 404,
 * 429 through the one admission path); ETag and 304; and the decoded feed evaluates as the server.
 */
import t from 'tap';
import { decodeFeed } from '../../../src/engine/feed-decode.js';
import { evaluateFlag } from '../../../src/engine/index.js';
import { createOrg, OPERATOR_TOKEN, evalFlag, evalKey, expectProblem, makeKey, must, postConfig, postFlag, putFlag, setKillSwitch, startNode } from '../../helpers/flags.js';
import type { TestNode } from '../../helpers/node.js';

const snapshot = (n: TestNode, key: string | null, query = '?stage=production', headers: Record<string, string> = {}) =>
  n.req('GET', `/sdk/v1/snapshot${query}`, { ...(key === null ? {} : { key }), headers });

t.test('the snapshot feed', async (t) => {
  const n = await startNode(t);
  const org = await createOrg(n, ['development', 'production'], ['web', 'other']);
  const admin = org.adminKey;
  const seg = (name: string, conditions: unknown[]) => n.req('POST', '/api/segments', { key: admin, body: { name, conditions } });
  must(t, await seg('beta', [{ field: 'plan', operator: '==', value: 'beta' }]), 201, 'segment beta');
  must(t, await seg('devonly', [{ field: 'plan', operator: '==', value: 'dev' }]), 201, 'segment devonly');
  must(t, await seg('unused', []), 201, 'segment unused');
  const both = { environments: ['development', 'production'] };
  must(t, await postFlag(n, admin, 'p2', { project: 'other', ...both }), 201, 'p2');
  must(t, await postFlag(n, admin, 'p1', { project: 'other', ...both, dependencies: [{ flag: 'p2', variants: null }] }), 201, 'p1');
  must(t, await postFlag(n, admin, 'w1', both), 201, 'w1');
  must(t, await postFlag(n, admin, 'w2', { ...both, dependencies: [{ flag: 'p1', variants: ['on'] }] }), 201, 'w2');
  must(t, await postFlag(n, admin, 'o1', { project: 'other', ...both }), 201, 'o1');
  const rule = (segments: string[]) => ({ id: 'r1', priority: 1, conditions: [], segments, allocations: [{ variantKey: 'on', percentage: 100 }] });
  must(t, await postConfig(n, admin, 'w1', { rules: [rule(['beta'])] }), 200, 'w1 production');
  must(t, await postConfig(n, admin, 'w1', { clientId: 'web:ios', defaultVariantKey: 'on' }), 200, 'w1 production web:ios');
  must(t, await postConfig(n, admin, 'w1', { stage: 'development', rules: [rule(['devonly'])] }), 200, 'w1 development');
  for (const f of ['w2', 'p1', 'p2', 'o1']) must(t, await postConfig(n, admin, f, { defaultVariantKey: 'on' }), 200, `${f} production`);
  await setKillSwitch(n, admin, [
    { flag: 'o1' },
    { environment: 'development' },
    { application: 'other', environment: 'production', flag: 'p2' },
    { application: 'web', flag: 'w9' },
    { application: 'web', flag: 'w1' },
  ]);
  const web = await evalKey(n, admin, 'web');

  t.test('contents: the application, its dependency parents, that stage, the segments used, the kill switch that can match', async (t) => {
    const r = await snapshot(n, web);
    t.equal(r.status, 200, r.text.slice(0, 300));
    t.match(r.headers.get('content-type'), /^application\/json/);
    const body = r.body;
    t.equal(body.format, 1);
    t.type(body.version, 'number');
    t.equal(body.stage, 'production');
    t.equal(body.application, 'web');
    t.same(Object.keys(body), ['format', 'version', 'stage', 'application', 'organization', 'flags', 'segments']);
    t.same(body.flags.map((f: any) => f.flag.name), ['p1', 'p2', 'w1', 'w2'], "web's flags and the parents of w2 (p1, then p1's parent p2), not o1");
    for (const f of body.flags) t.ok(f.configs.every((c: any) => c.stage === 'production'), `${f.flag.name}: production configurations only`);
    const w1 = body.flags.find((f: any) => f.flag.name === 'w1');
    t.same(w1.configs.map((c: any) => c.clientId), [null, 'web:ios'], 'every clientId variant of the stage');
    t.same(Object.keys(w1.flag).sort(), ['createdAt', 'dependencies', 'description', 'environments', 'isArchived', 'name', 'project', 'tags', 'type', 'updatedAt', 'variants']);
    t.same(body.segments.map((s: any) => s.name), ['beta'], 'the segment production rules name; not devonly (development), not unused');
    t.same(body.organization.environments, ['development', 'production']);
    t.same(body.organization.applications, ['web', 'other']);
    t.same(
      body.organization.killSwitch,
      [
        { flag: 'p2', application: 'other', environment: 'production' },
        { flag: 'w1', application: 'web', environment: null },
      ],
      'only rules that can match a flag of the feed in production, in order',
    );
    const dev = await snapshot(n, web, '?stage=Development');
    t.equal(dev.status, 200);
    t.equal(dev.body.stage, 'development', "the organization's spelling");
    t.same(dev.body.segments.map((s: any) => s.name), ['devonly']);
    t.same(dev.body.organization.killSwitch, [
      { flag: null, application: null, environment: 'development' },
      { flag: 'w1', application: 'web', environment: null },
    ]);
    for (const header of [{ 'x-api-key': web }, { authorization: `Bearer ${web}` }]) {
      const r2 = await snapshot(n, null, '?stage=production', header);
      t.equal(r2.status, 200, `key in ${Object.keys(header)[0]}`);
    }
  });

  t.test('the decoded feed evaluates as the server', async (t) => {
    const snap = decodeFeed((await snapshot(n, web)).body);
    const now = Date.now();
    for (const flag of ['w1', 'w2']) {
      for (const [userId, clientId, context] of [
        ['u1', null, { plan: 'beta' }],
        ['u2', null, { plan: 'free' }],
        ['u3', 'web:ios', null],
        ['u4', 'other:x', null],
      ] as const) {
        const server = await evalFlag(n, web, flag, { userId, stage: 'production', clientId, context }, true);
        const local = evaluateFlag(snap, snap.flags.get(flag)!, { userId, stage: 'production', clientId, context }, now);
        t.same({ key: local.key, variant: local.variant, code: local.reason.code }, { key: server.body.key, variant: server.body.variant, code: server.body.reason.code }, `${flag} ${userId} ${clientId}`);
      }
    }
  });

  t.test('key rules: 401, 403, 400, 404 as an evaluation; the environment scope is the default stage', async (t) => {
    expectProblem(t, await snapshot(n, null), 401, 'UNAUTHENTICATED', 'no key');
    expectProblem(t, await snapshot(n, 'f'.repeat(64)), 401, 'UNAUTHENTICATED', 'unknown key');
    expectProblem(t, await snapshot(n, admin), 403, 'FORBIDDEN', 'organization-wide key');
    const reader = await makeKey(n, admin, { permissions: ['CanRead'], application: 'web' });
    expectProblem(t, await snapshot(n, reader), 403, 'FORBIDDEN', 'no CanEvaluate');
    expectProblem(t, await snapshot(n, web, ''), 400, 'BAD_REQUEST', 'no stage and no environment scope');
    expectProblem(t, await snapshot(n, web, '?stage=staging'), 404, 'NOT_FOUND', 'not an environment');
    expectProblem(t, await snapshot(n, web, '?stage=production&x=1'), 400, 'BAD_REQUEST', 'unknown parameter');
    const prodOnly = await evalKey(n, admin, 'web', 'production');
    const d = await snapshot(n, prodOnly, '');
    t.equal(d.status, 200);
    t.equal(d.body.stage, 'production', "the key's environment scope");
    expectProblem(t, await snapshot(n, prodOnly, '?stage=development'), 403, 'FORBIDDEN', 'outside the environment scope');
  });

  t.test('ETag: 304 on If-None-Match; another application moves the version, not the ETag; a change of the feed does', async (t) => {
    const first = await snapshot(n, web);
    const etag = first.headers.get('etag')!;
    t.match(etag, /^W\/"[A-Za-z0-9_-]{27}"$/);
    const again = await snapshot(n, web, '?stage=production', { 'if-none-match': etag });
    t.equal(again.status, 304);
    t.equal(again.text, '');
    t.equal(again.headers.get('etag'), etag);
    must(t, await postConfig(n, admin, 'o1', { defaultVariantKey: 'off' }), 200, 'o1 changes');
    const other = await snapshot(n, web);
    t.ok(other.body.version > first.body.version, 'the version moved');
    t.equal(other.headers.get('etag'), etag, 'the ETag did not: the content is the same');
    t.equal((await snapshot(n, web, '?stage=production', { 'if-none-match': etag })).status, 304);
    must(t, await putFlag(n, admin, 'w1', { description: 'changed' }), 200, 'w1 changes');
    const changed = await snapshot(n, web, '?stage=production', { 'if-none-match': etag });
    t.equal(changed.status, 200, 'a change of the feed: 200');
    t.not(changed.headers.get('etag'), etag);
    t.equal(changed.body.flags.find((f: any) => f.flag.name === 'w1').flag.description, 'changed');
  });

  t.test('402 without an active subscription', async (t) => {
    const r = await n.req('PATCH', `/api/operator/organizations/${org.name}`, { headers: { 'x-operator-token': OPERATOR_TOKEN }, body: { subscriptionActive: false } });
    t.equal(r.status, 200, r.text);
    expectProblem(t, await snapshot(n, web), 402, 'PAYMENT_REQUIRED');
    expectProblem(t, await n.req('GET', '/sdk/v1/stream?stage=production', { key: web }), 402, 'PAYMENT_REQUIRED', 'the stream too');
  });
});

t.test('429: one evaluation token per request', async (t) => {
  const n = await startNode(t, { env: { VEXIL_RATE_LIMIT_EVAL: '1' } });
  const org = await createOrg(n, ['production'], ['web']);
  must(t, await postFlag(n, org.adminKey, 'w1'), 201, 'w1');
  const key = await evalKey(n, org.adminKey, 'web');
  t.equal((await snapshot(n, key)).status, 200, 'the first takes the token');
  const r = await snapshot(n, key);
  expectProblem(t, r, 429, 'RATE_LIMITED');
  t.ok(Number(r.headers.get('retry-after')) >= 1, 'Retry-After');
  expectProblem(t, await n.req('GET', '/sdk/v1/stream?stage=production', { key }), 429, 'RATE_LIMITED', 'the stream shares the bucket');
});
