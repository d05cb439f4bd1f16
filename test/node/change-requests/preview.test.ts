/**
 * A change request's preview is exact (docs/change-requests.md, "Previewing"): for thousands of
 * generated contexts, its per-flag transitions equal what evaluation answers before and after the
 * apply, across every condition operator, segments, rollouts, the kill switch and a dependant.
 */
import t from 'tap';
import fc from 'fast-check';
import { createOrg, evalKey, expectProblem, makeKey, must, postConfig, postFlag, startNode } from '../../helpers/flags.js';
import { act, apply, propose, upsert } from '../../helpers/change-requests.js';
import type { TestNode } from '../../helpers/node.js';

t.setTimeout(240_000);

const COUNTRIES = ['DE', 'FR', 'US', 'GB', 'JP'];
const PLANS = ['free', 'pro', 'team'];
const contextArb = fc.record({
  userId: fc.string({ minLength: 1, maxLength: 12 }),
  context: fc.record(
    {
      country: fc.constantFrom(...COUNTRIES),
      plan: fc.constantFrom(...PLANS),
      age: fc.integer({ min: 0, max: 99 }),
      email: fc.constantFrom('a@corp.example', 'b@mail.example', 'corp@x.example', 'zed@corp.example'),
      beta: fc.boolean(),
    },
    { requiredKeys: [] },
  ),
});
const variants = ['a', 'b', 'c'].map((k) => ({ key: k, value: k, valueType: 'string' }));
const rule = (priority: number, conditions: unknown[], variantKey: string, segments: string[] = []) => ({ priority, conditions, segments, allocations: [{ variantKey, percentage: 100 }] });
const RULES_BEFORE = [
  rule(1, [{ field: 'country', operator: '==', value: 'DE' }], 'a'),
  rule(2, [{ field: 'plan', operator: 'in', value: ['pro', 'team'] }, { field: 'age', operator: '>=', value: 30 }], 'b'),
  rule(3, [{ field: 'email', operator: 'ends_with', value: '@corp.example' }], 'c'),
  rule(4, [], 'b', ['adults']),
];
const RULES_AFTER = [
  rule(1, [{ field: 'country', operator: '!=', value: 'DE' }, { field: 'age', operator: '<', value: 20 }], 'c'),
  rule(2, [{ field: 'plan', operator: 'not_in', value: ['free'] }, { field: 'age', operator: '<=', value: 50 }], 'a'),
  rule(3, [{ field: 'email', operator: 'starts_with', value: 'corp' }], 'b'),
  rule(4, [{ field: 'email', operator: 'contains', value: 'mail' }, { field: 'age', operator: '>', value: 10 }], 'c'),
  rule(5, [], 'a', ['adults']),
];

/** Real evaluation over GraphQL, 100 aliased `evaluate` fields (the per-document limit) per document (the same engine as REST). */
async function evalAll(n: TestNode, key: string, flag: string, stage: string, contexts: { userId: string; context: object }[]): Promise<(string | null)[]> {
  const out: (string | null)[] = [];
  for (let i = 0; i < contexts.length; i += 100) {
    const chunk = contexts.slice(i, i + 100);
    const vars = Object.fromEntries(chunk.flatMap((c, j) => [[`u${j}`, c.userId], [`c${j}`, c.context]]));
    const decl = chunk.map((_, j) => `$u${j}: String!, $c${j}: Any`).join(', ');
    const fields = chunk.map((_, j) => `e${j}: evaluate(key: "${flag}", userId: $u${j}, stage: "${stage}", context: $c${j}) { key }`).join(' ');
    const r = await n.req('POST', '/api/graphql', { key, body: { query: `query(${decl}) { ${fields} }`, variables: vars } });
    if (r.status !== 200 || r.body.errors) throw new Error(`evaluate ${flag}: ${r.status} ${r.text.slice(0, 300)}`);
    chunk.forEach((_, j) => out.push(r.body.data[`e${j}`]?.key ?? null));
  }
  return out;
}

const transitions = (from: (string | null)[], to: (string | null)[]) => {
  const m = new Map<string, number>();
  from.forEach((f, i) => m.set(`${f}>${to[i]}`, (m.get(`${f}>${to[i]}`) ?? 0) + 1));
  return Object.fromEntries([...m].sort());
};

t.test('preview', async (t) => {
  const n = await startNode(t, { env: { VEXIL_RATE_LIMIT_EVAL: '100000000' } });
  const org = await createOrg(n);
  const admin = org.adminKey;
  const ek = await evalKey(n, admin, 'web');
  must(t, await n.req('POST', '/api/segments', { key: admin, body: { name: 'adults', application: 'web', conditions: [{ field: 'age', operator: '>=', value: 18 }] } }), 201, 'segment');
  must(t, await postFlag(n, admin, 'p', { type: 'string', variants }), 201, 'p');
  must(t, await postConfig(n, admin, 'p', { defaultVariantKey: 'a', rolloutPercentage: 100, rules: RULES_BEFORE }), 200, 'p production');
  must(t, await postConfig(n, admin, 'p', { stage: 'development', defaultVariantKey: 'c', rolloutPercentage: 60, rules: RULES_BEFORE }), 200, 'p development');
  must(t, await postFlag(n, admin, 'child', { dependencies: [{ flag: 'p', variants: ['b'] }] }), 201, 'child');
  must(t, await postConfig(n, admin, 'child', { defaultVariantKey: 'on' }), 200, 'child production');
  must(t, await postConfig(n, admin, 'child', { stage: 'development', defaultVariantKey: 'on' }), 200, 'child development');
  must(t, await postFlag(n, admin, 'other'), 201, 'an unrelated flag');
  must(t, await postConfig(n, admin, 'other', { defaultVariantKey: 'on' }), 200, 'other production');
  const cr = must(t, await propose(n, admin, [
    upsert('p', { defaultVariantKey: 'b', rolloutPercentage: 70, rules: RULES_AFTER }),
    { op: 'upsertSegment', segment: 'adults', input: { conditions: [{ field: 'age', operator: '>=', value: 21 }, { field: 'beta', operator: '==', value: true }] } },
    { op: 'setConfigEnabled', flag: 'p', stage: 'development', enabled: false },
  ]), 201, 'propose').body;
  const contexts = fc.sample(contextArb, { numRuns: 2000, seed: 42 });

  t.test('counts equal evaluation before and after the apply, dependants included, in every environment touched', async (t) => {
    const r = await n.req('POST', `/api/change-requests/${cr.id}/preview`, { key: admin, body: { contexts } });
    t.equal(r.status, 200, r.text.slice(0, 200));
    const pv = r.body;
    t.same(pv.flags.map((f: any) => `${f.flag} ${f.stage}`), ['child development', 'child production', 'p development', 'p production'], 'p and its dependant in both environments; not the unrelated flag');
    const before: Record<string, (string | null)[]> = {};
    for (const f of pv.flags) before[`${f.flag} ${f.stage}`] = await evalAll(n, ek, f.flag, f.stage, contexts);
    must(t, await apply(n, admin, cr), 200, 'apply');
    let changed = 0;
    for (const f of pv.flags) {
      const after = await evalAll(n, ek, f.flag, f.stage, contexts);
      const want = transitions(before[`${f.flag} ${f.stage}`], after);
      const got = Object.fromEntries(f.transitions.map((x: any) => [`${x.from}>${x.to}`, x.count]).sort());
      t.same(got, want, `${f.flag} in ${f.stage}: the preview's transitions are evaluation's`);
      const c = after.filter((v, i) => v !== before[`${f.flag} ${f.stage}`][i]).length;
      t.equal(f.changed, c, `${f.flag} in ${f.stage}: ${c} changed`);
      t.equal(f.evaluated, contexts.length);
      changed += c;
    }
    t.ok(changed > 100, `the change moves many answers (${changed})`);
    t.equal(pv.changed, changed);
    t.equal(pv.evaluated, contexts.length * 4);
    t.ok(pv.examples.length === 20 && pv.examples.every((e: any) => e.from !== e.to), 'twenty examples, each a change');
  });

  t.test('bad previews: 400; unknown request 404; CanRead is enough', async (t) => {
    const reader = await makeReader(n, admin);
    const open = must(t, await propose(n, admin, [upsert('other', { defaultVariantKey: 'off' })]), 201, 'another').body;
    const ok = must(t, await n.req('POST', `/api/change-requests/${open.id}/preview`, { key: reader, body: { contexts: [{ userId: 'u' }] } }), 200, 'reader previews').body;
    t.match(ok, { evaluated: 1, changed: 1, flags: [{ flag: 'other', stage: 'production', transitions: [{ from: 'on', to: 'off', count: 1 }] }] });
    const pv = (body: unknown) => n.req('POST', `/api/change-requests/${open.id}/preview`, { key: admin, body });
    expectProblem(t, await pv({}), 400, 'BAD_REQUEST', /contexts/);
    expectProblem(t, await pv({ contexts: 'x' }), 400, 'BAD_REQUEST', /contexts/);
    expectProblem(t, await pv({ contexts: [{}] }), 400, 'BAD_REQUEST', /contexts\[0\].*userId/);
    expectProblem(t, await pv({ contexts: [{ userId: 'u', stage: 'production' }] }), 400, 'BAD_REQUEST', /stage/);
    expectProblem(t, await pv({ contexts: Array.from({ length: 10_001 }, (_, i) => ({ userId: `u${i}` })) }), 400, 'BAD_REQUEST', /10000/);
    expectProblem(t, await pv({ sample: true }), 400, 'BAD_REQUEST', /sample/);
    expectProblem(t, await n.req('POST', '/api/change-requests/cr_0000000000aaaaaaaaaa/preview', { key: admin, body: { contexts: [] } }), 404, 'NOT_FOUND');
    t.equal((await n.req('GET', `/api/flags/other`, { key: admin })).body.configs[0].defaultVariantKey, 'on', 'a preview writes nothing');
    must(t, await act(n, admin, open.id, 'close'), 200, 'close');
  });

  t.test('GraphQL previewChangeRequest with given contexts answers as REST (the example of docs/change-requests.md)', async (t) => {
    const reader = await makeReader(n, admin);
    // German users keep 'on', the others turn 'off': the answer depends on each given context.
    const open = must(t, await propose(n, admin, [upsert('other', { defaultVariantKey: 'off', rules: [rule(1, [{ field: 'country', operator: '==', value: 'DE' }], 'on')] })]), 201, 'another').body;
    const contexts = [{ userId: 'u-1', context: { country: 'DE', plan: 'pro' } }, { userId: 'u-2', clientId: 'ios-app', context: { country: 'FR' } }];
    const rest = must(t, await n.req('POST', `/api/change-requests/${open.id}/preview`, { key: reader, body: { contexts } }), 200, 'REST').body;
    const q = `mutation {
      previewChangeRequest(id: "${open.id}", contexts: [
        {userId: "u-1", context: {country: "DE", plan: "pro"}}
        {userId: "u-2", clientId: "ios-app", context: {country: "FR"}}
      ]) {
        evaluated changed
        flags { flag stage evaluated changed transitions { from to count } }
        examples { userId flag stage from to }
      }
    }`;
    const g = must(t, await n.req('POST', '/api/graphql', { key: reader, body: { query: q } }), 200, 'GraphQL');
    t.same(g.body.errors, undefined, 'no error');
    t.same(g.body.data.previewChangeRequest, rest, 'the same answer as REST');
    t.same(rest.flags, [{ flag: 'other', stage: 'production', evaluated: 2, changed: 1, transitions: [{ from: 'on', to: 'on', count: 1 }, { from: 'on', to: 'off', count: 1 }] }]);
    t.same(rest.examples, [{ userId: 'u-2', flag: 'other', stage: 'production', from: 'on', to: 'off' }]);
    must(t, await act(n, admin, open.id, 'close'), 200, 'close');
  });

  t.test('a scoped reader previews only its own application and environment', async (t) => {
    const open = must(t, await propose(n, admin, [upsert('other', { defaultVariantKey: 'off' })]), 201, 'another').body;
    const preview = async (key: string) => must(t, await n.req('POST', `/api/change-requests/${open.id}/preview`, { key, body: { contexts: [{ userId: 'u' }] } }), 200, 'preview').body;
    const billing = await makeKey(n, admin, { permissions: ['CanRead'], application: 'billing' });
    const webDev = await makeKey(n, admin, { permissions: ['CanRead'], application: 'web', environment: 'development' });
    const webProd = await makeKey(n, admin, { permissions: ['CanRead'], application: 'web', environment: 'production' });
    t.same(await preview(billing), { evaluated: 0, changed: 0, flags: [], examples: [] }, 'another application: nothing of web is shown');
    t.same(await preview(webDev), { evaluated: 0, changed: 0, flags: [], examples: [] }, 'another environment: nothing of production is shown');
    t.match(await preview(webProd), { evaluated: 1, changed: 1, flags: [{ flag: 'other', stage: 'production' }] }, 'its own application and environment');
    must(t, await act(n, admin, open.id, 'close'), 200, 'close');
  });

  t.test('a request touching two applications: a key scoped to one previews only its own', async (t) => {
    must(t, await postFlag(n, admin, 'bill', { project: 'billing' }), 201, 'a billing flag');
    must(t, await postConfig(n, admin, 'bill', { defaultVariantKey: 'on' }), 200, 'bill production');
    const two = must(t, await propose(n, admin, [upsert('other', { defaultVariantKey: 'off' }), upsert('bill', { defaultVariantKey: 'off' })]), 201, 'web and billing').body;
    const preview = async (key: string) => must(t, await n.req('POST', `/api/change-requests/${two.id}/preview`, { key, body: { contexts: [{ userId: 'u' }] } }), 200, 'preview').body;
    const flagsOf = (pv: any) => pv.flags.map((f: any) => f.flag);
    const billing = await makeKey(n, admin, { permissions: ['CanRead'], application: 'billing' });
    const web = await makeKey(n, admin, { permissions: ['CanRead'], application: 'web' });
    t.same(flagsOf(await preview(admin)), ['bill', 'other'], 'an organization-wide key sees both');
    const b = await preview(billing);
    t.same(flagsOf(b), ['bill'], 'billing sees billing only');
    t.ok(b.examples.every((e: any) => e.flag === 'bill') && b.evaluated === 1 && b.changed === 1, 'its counts and examples are its own');
    t.same(flagsOf(await preview(web)), ['other'], 'web sees web only');
    must(t, await act(n, admin, two.id, 'close'), 200, 'close');
  });
});

async function makeReader(n: TestNode, admin: string): Promise<string> {
  const r = await n.req('POST', '/api/keys', { key: admin, body: { name: 'reader', permissions: ['CanRead'] } });
  return r.body.key;
}
