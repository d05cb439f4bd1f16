/**
 * Previews over sampled contexts (CONTRACT 17 `sample: true`, VEXIL_CONTEXT_SAMPLE;
 * docs/change-requests.md, "Sampled contexts"), through real HTTP on a real node process: contexts
 * evaluated through REST, OFREP single (front threads and the evaluation pool) and GraphQL (the
 * pool, and the management actor for a document with a management field) are what
 * `preview {sample: true}` evaluates; its counts equal what evaluation answers before and after the
 * apply; at most VEXIL_CONTEXT_SAMPLE contexts per flag and stage are kept; no context reaches the
 * logs (debug level, every thread). Off (the default), `sample: true` is a 400 naming the setting.
 */
import t from 'tap';
import { rmSync } from 'node:fs';
import { createOrg, evalKey, expectProblem, makeKey, must, postConfig, postFlag, startNode } from '../../helpers/flags.js';
import { act, apply, propose, upsert } from '../../helpers/change-requests.js';
import { OPERATOR_TOKEN, pgliteCopy, request, type TestNode } from '../../helpers/node.js';
import { spawnNode } from '../../helpers/process.js';
import { loadNativeUws } from '../../../src/http/uws.js';

t.setTimeout(180_000);

const threaded = loadNativeUws().ok && process.env.VEXIL_HTTP_FRONT !== 'node';
/** Appears in every context and user id: it must never appear in a log line. */
const MARK = 'zq7731secret';
const N = 4;

const fresh = (n: TestNode, method: string, path: string, opts: { key?: string; body?: unknown } = {}) => n.req(method, path, { ...opts, headers: { connection: 'close' } });
const user = (i: number) => `${MARK}-u${i}`;
const COUNTRY = ['DE', 'FR', 'US', 'DE', 'FR', 'DE', 'US', 'FR'];
const ctx = (i: number) => ({ country: COUNTRY[i % COUNTRY.length], note: `${MARK}-${i}` });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

t.test('sample: true previews what this node evaluated, exactly and within its bound', async (t) => {
  const dir = await pgliteCopy();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  let logs = '';
  const p = await spawnNode(t, {
    env: {
      VEXIL_DATA_DIR: dir,
      VEXIL_OPERATOR_TOKEN: OPERATOR_TOKEN,
      VEXIL_RATE_LIMIT_MGMT: '1000000',
      VEXIL_RATE_LIMIT_EVAL: '1000000',
      VEXIL_LOG_LEVEL: 'debug',
      VEXIL_FRONT_THREADS: threaded ? '3' : '1',
      VEXIL_EVAL_WORKERS: '1',
      VEXIL_EVAL_HANDOFF: 'always',
      VEXIL_INSIGHTS_FLUSH_MS: '100',
      VEXIL_CONTEXT_SAMPLE: String(N),
    },
    onStderr: (s) => (logs += s),
  });
  p.child.stdout!.on('data', (d: Buffer) => (logs += d.toString()));
  const n = { url: p.url, adminKey: '', req: (m: string, path: string, o?: object) => request(p.url, m, path, o) } as unknown as TestNode;
  const org = await createOrg(n);
  const admin = org.adminKey;
  const key = await evalKey(n, admin, 'web');
  const reader = await makeKey(n, admin, { permissions: ['CanEvaluate', 'CanRead'], application: 'web' });
  must(t, await postFlag(n, admin, 'f'), 201, 'f');
  must(t, await postConfig(n, admin, 'f', { rules: [{ priority: 1, conditions: [{ field: 'country', operator: '==', value: 'DE' }], allocations: [{ variantKey: 'on', percentage: 100 }] }] }), 200, 'f production');
  must(t, await postFlag(n, admin, 'g', { dependencies: [{ flag: 'f', variants: ['on'] }] }), 201, 'g depends on f');
  // g answers its default 'off' while its dependency on f is unmet, and its rule's 'on' once it is met.
  must(t, await postConfig(n, admin, 'g', { defaultVariantKey: 'off', rules: [{ priority: 1, conditions: [], allocations: [{ variantKey: 'on', percentage: 100 }] }] }), 200, 'g production');

  // What evaluation answered, per flag and user.
  const answered: Record<string, string | null> = {};
  // f: users 0, 1, then (once their samples have arrived) 2, 3 through REST, then 4, 5 through
  // OFREP single, on fresh connections (spread over the front threads; the main thread's go to the pool).
  for (let i = 0; i < 4; i++) {
    const r = must(t, await fresh(n, 'POST', '/flags/f', { key, body: { userId: user(i), stage: 'production', context: ctx(i) } }), 200, 'REST');
    answered[`f ${i}`] = r.body.key ?? null;
    if (i % 2 === 1) await sleep(800);
  }
  for (let i = 4; i < 6; i++) {
    const r = must(t, await fresh(n, 'POST', '/ofrep/v1/evaluate/flags/f', { key, body: { context: { targetingKey: user(i), stage: 'production', ...ctx(i) } } }), 200, 'OFREP');
    answered[`f ${i}`] = r.body.variant ?? null;
  }
  // g: users 6 and 7 through GraphQL (the pool), user 2 in a document with a management field (the actor).
  for (const i of [6, 7]) {
    const r = must(t, await n.req('POST', '/api/graphql', { key, body: { query: 'query($u: String!, $c: Any) { e: evaluate(key: "g", userId: $u, stage: "production", context: $c) { key } }', variables: { u: user(i), c: ctx(i) } } }), 200, 'GraphQL');
    answered[`g ${i}`] = r.body.data.e.key;
  }
  const mixed = must(t, await n.req('POST', '/api/graphql', { key: reader, body: { query: 'query($u: String!, $c: Any) { e: evaluate(key: "g", userId: $u, stage: "production", context: $c) { key } flag(name: "g") { name } }', variables: { u: user(2), c: ctx(2) } } }), 200, 'a mixed document (the actor)');
  answered['g 2'] = mixed.body.data.e.key;

  const cr = must(t, await propose(n, admin, [upsert('f', { rules: [{ priority: 1, conditions: [{ field: 'country', operator: '==', value: 'FR' }], allocations: [{ variantKey: 'on', percentage: 100 }] }] })]), 201, 'propose').body;
  const preview = (body: unknown) => n.req('POST', `/api/change-requests/${cr.id}/preview`, { key: admin, body });
  // Samples reach the actor within insightsPostMs (25 ms here); wait until all have.
  let pv: any;
  for (let tries = 0; tries < 100; tries++) {
    pv = must(t, await preview({ sample: true }), 200, 'preview').body;
    const ev = Object.fromEntries(pv.flags.map((f: any) => [f.flag, f.evaluated]));
    if (ev.f === N && ev.g === 3) break;
    await sleep(100);
  }
  t.same(pv.flags.map((f: any) => `${f.flag} ${f.stage} ${f.evaluated}`), [`f production ${N}`, 'g production 3'], `f: 6 users evaluated, the last ${N} kept; g, the dependant: its 3`);
  const sampled: Record<string, number[]> = { f: [2, 3, 4, 5], g: [6, 7, 2] };
  t.ok(pv.examples.every((e: any) => sampled[e.flag].map(user).includes(e.userId)), 'examples come from the kept samples only (not users 0 and 1 of f)');

  const both = must(t, await preview({ sample: true, contexts: [{ userId: 'given', context: { country: 'DE' } }] }), 200, 'given and sampled').body;
  t.same(both.flags.map((f: any) => f.evaluated), [N + 1, 4], 'given contexts and samples together: each flag evaluates the given ones, then its samples');
  const gql = must(t, await n.req('POST', '/api/graphql', { key: admin, body: { query: `mutation { previewChangeRequest(id: "${cr.id}", sample: true) { evaluated changed } }` } }), 200, 'GraphQL preview');
  t.same(gql.body.data.previewChangeRequest, { evaluated: pv.evaluated, changed: pv.changed }, 'GraphQL previews the same samples');

  must(t, await apply(n, admin, cr), 200, 'apply');
  for (const [flag, users] of Object.entries(sampled)) {
    const f = pv.flags.find((x: any) => x.flag === flag);
    const want = new Map<string, number>();
    let changed = 0;
    for (const i of users) {
      const r = must(t, await n.req('POST', `/flags/${flag}`, { key, body: { userId: user(i), stage: 'production', context: ctx(i) } }), 200, 'evaluate after');
      const from = answered[`${flag} ${i}`];
      const to = r.body.key ?? null;
      want.set(`${from}>${to}`, (want.get(`${from}>${to}`) ?? 0) + 1);
      if (from !== to) changed++;
    }
    const got = Object.fromEntries(f.transitions.map((x: any) => [`${x.from}>${x.to}`, x.count]));
    t.same(got, Object.fromEntries(want), `${flag}: the preview's transitions are what evaluation answered before and after`);
    t.equal(f.changed, changed, `${flag}: ${changed} changed`);
  }
  t.same(pv.flags.map((f: any) => f.changed), [3, 1], 'f changes for three of its samples, and g, the dependant, for one of its own');

  await p.kill('SIGTERM');
  t.ok(logs.length > 1000, `the node logged at debug level (${logs.length} characters)`);
  t.notOk(logs.includes(MARK), 'no context and no user id in any log line');
});

t.test('sampling off (the default): sample: true is a 400 naming VEXIL_CONTEXT_SAMPLE', async (t) => {
  const n = await startNode(t);
  const org = await createOrg(n);
  must(t, await postFlag(n, org.adminKey, 'f'), 201, 'f');
  must(t, await postConfig(n, org.adminKey, 'f'), 200, 'f production');
  const cr = must(t, await propose(n, org.adminKey, [upsert('f', { defaultVariantKey: 'on' })]), 201, 'propose').body;
  const r = await n.req('POST', `/api/change-requests/${cr.id}/preview`, { key: org.adminKey, body: { sample: true } });
  expectProblem(t, r, 400, 'BAD_REQUEST', /VEXIL_CONTEXT_SAMPLE is off/);
  t.match(r.headers.get('content-type'), /application\/problem\+json/);
  const g = must(t, await n.req('POST', '/api/graphql', { key: org.adminKey, body: { query: `mutation { previewChangeRequest(id: "${cr.id}", sample: true) { evaluated } }` } }), 200, 'GraphQL');
  t.match(g.body.errors?.[0], { message: /VEXIL_CONTEXT_SAMPLE is off/, extensions: { code: 'BAD_REQUEST' } }, 'GraphQL: the same error');
  must(t, await act(n, org.adminKey, cr.id, 'close'), 200, 'close');
});
