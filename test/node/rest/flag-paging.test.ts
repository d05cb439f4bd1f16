/**
 * Paging and search of the flag list (docs/api.md, "Listing and paging") over real HTTP: REST `GET /api/flags` with
 * `limit`, `after`, `q`, `application`, `type`, `archived`, its `X-Total-Count` and `Link`
 * headers, and GraphQL `flags(...)` / `flagConnection(...)`, which must answer the same.
 *
 * One node, one organization of varied flags (test/helpers/paging.ts). The property test
 * draws filters, page sizes and keys (org-wide or application-scoped) and walks every page both
 * ways; the list every walk must give is computed from what the writes answered.
 */
import t from 'tap';
import fc from 'fast-check';
import { request } from '../../helpers/node.js';
import { createOrg, deleteFlag, expectProblem, makeKey, must, postFlag, putFlag, startNode } from '../../helpers/flags.js';
import { APPLICATIONS, expected, gqlArgs, query, SEARCHES, seedFlags, TYPES, walkGraphql, walkRest, type ListParams, type SeenFlag } from '../../helpers/paging.js';
import { nextPageUrl } from '../../../src/features/flags/page.js';

const names = (list: { name: string }[]) => list.map((f) => f.name);

t.test('flag list paging and search', async (t) => {
  const n = await startNode(t);
  const org = await createOrg(n, ['development', 'production'], APPLICATIONS);
  const A = org.adminKey;
  const flags = await seedFlags(t, n, A, 70);
  const webReader = await makeKey(n, A, { permissions: ['CanRead'], application: 'WEB' });
  const keys: { key: string; scope: string | null }[] = [
    { key: A, scope: null },
    { key: webReader, scope: 'web' },
  ];

  t.test('without parameters: every flag, sorted by name in byte order, with X-Total-Count and no Link', async (t) => {
    const r = must(t, await n.req('GET', '/api/flags', { key: A }), 200, 'list');
    t.same(r.body, expected(flags, {}), 'the whole Flag objects, in byte order');
    t.equal(r.headers.get('x-total-count'), String(flags.length));
    t.equal(r.headers.get('link'), null);
    const s = must(t, await n.req('GET', '/api/flags', { key: webReader }), 200, 'scoped list');
    t.same(names(s.body), names(expected(flags, {}, 'web')), 'an application-scoped key lists its application only');
    t.equal(s.headers.get('x-total-count'), String(expected(flags, {}, 'web').length), 'and counts it only');
  });

  t.test('every page, any filter, any page size, org-wide or scoped key: REST and GraphQL give the full filtered list', async (t) => {
    const paramsArb: fc.Arbitrary<ListParams> = fc.record(
      {
        application: fc.constantFrom('web', 'WEB', 'billing', 'mobile', 'Mobile', 'unknown-app'),
        type: fc.constantFrom(...TYPES),
        archived: fc.constantFrom('true' as const, 'false' as const),
        q: fc.constantFrom(...SEARCHES),
      },
      { requiredKeys: [] },
    );
    let runs = 0;
    await fc.assert(
      fc.asyncProperty(paramsArb, fc.integer({ min: 2, max: 30 }), fc.constantFrom(0, 1), async (p, limit, k) => {
        const { key, scope } = keys[k];
        const want = names(expected(flags, p, scope));
        const rest = await walkRest(n, key, p, limit, want.length);
        const gql = await walkGraphql(n, key, p, limit, want.length);
        const problems = [...rest.problems, ...gql.problems];
        if (JSON.stringify(rest.names) !== JSON.stringify(want)) problems.push(`REST walk ${JSON.stringify(rest.names)} != ${JSON.stringify(want)}`);
        if (JSON.stringify(gql.names) !== JSON.stringify(want)) problems.push(`GraphQL walk ${JSON.stringify(gql.names)} != ${JSON.stringify(want)}`);
        // Without limit: the same list in one answer.
        const all = await n.req('GET', '/api/flags' + query({ ...p }), { key });
        if (JSON.stringify(names(all.body ?? [])) !== JSON.stringify(want) || all.headers.get('link') !== null) problems.push('the unpaged list differs');
        runs++;
        if (problems.length > 0) throw new Error(`${JSON.stringify({ p, limit, scope })}: ${problems.join('; ')}`);
      }),
      { numRuns: 30, seed: 1313 },
    );
    t.equal(runs, 30, '30 random walks agree');
  });

  t.test('page size 1 and page size 1000 over the whole organization', async (t) => {
    const want = names(expected(flags, {}));
    const one = await walkRest(n, A, {}, 1, want.length);
    t.same(one.problems, []);
    t.same(one.names, want, 'one flag per page');
    t.equal(one.pages.length, want.length, 'one request per flag, the last without Link');
    const big = await walkRest(n, A, {}, 1000, want.length);
    t.same(big.problems, []);
    t.equal(big.pages.length, 1);
    t.equal(big.pages[0].headers.get('link'), null, 'everything fits: no Link');
  });

  t.test('Link: present exactly while more flags follow; `after` need not name a flag', async (t) => {
    const want = names(expected(flags, {}));
    const r = await n.req('GET', `/api/flags?limit=${want.length - 1}`, { key: A });
    t.match(r.headers.get('link'), /^<http:\/\/127\.0\.0\.1:\d+\/api\/flags\?limit=\d+&after=[^>]+>; rel="next"$/, 'absolute URL on the request Host');
    const last = await n.req('GET', `/api/flags?limit=${want.length}`, { key: A });
    t.equal(last.headers.get('link'), null, 'a page that ends exactly at the last flag has no next page');
    t.equal(last.body.length, want.length);
    // `after` between two names, before all, after all.
    const cut = want[10] + '-';
    const between = await n.req('GET', '/api/flags' + query({ after: cut, limit: 3 }), { key: A });
    t.same(names(between.body), want.filter((x) => x > cut).slice(0, 3));
    t.same(names((await n.req('GET', '/api/flags?after=0&limit=2', { key: A })).body), want.filter((x) => x > '0').slice(0, 2));
    const end = await n.req('GET', '/api/flags?after=zzzzzz&limit=5', { key: A });
    t.same(end.body, []);
    t.equal(end.headers.get('x-total-count'), String(want.length), 'the total ignores after');
    t.equal(end.headers.get('link'), null);
  });

  t.test('X-Total-Count for each filter and for a scoped key', async (t) => {
    const cases: ListParams[] = [
      {},
      { application: 'billing' },
      { application: 'MOBILE' },
      { type: 'json' },
      { archived: 'true' },
      { archived: 'false' },
      { q: 'checkout' },
      { q: 'TEAM-A', archived: 'false' },
      { application: 'web', type: 'boolean', archived: 'false', q: 'a' },
      { application: 'unknown-app' },
    ];
    for (const p of cases) {
      for (const { key, scope } of keys) {
        const want = expected(flags, p, scope);
        const r = await n.req('GET', '/api/flags' + query({ ...p, limit: 5 }), { key });
        const what = `${JSON.stringify(p)} ${scope ?? 'org-wide'}`;
        t.equal(r.headers.get('x-total-count'), String(want.length), `${what}: total ${want.length}`);
        t.same(names(r.body), names(want.slice(0, 5)), `${what}: first page`);
        t.equal(r.headers.get('link') !== null, want.length > 5, `${what}: Link iff more than one page`);
      }
    }
    // A scoped key filtering another application sees nothing (not a 403), and counts nothing.
    const other = await n.req('GET', '/api/flags?application=billing', { key: webReader });
    t.equal(other.status, 200);
    t.same(other.body, []);
    t.equal(other.headers.get('x-total-count'), '0');
  });

  t.test('bad values are 400 problem+json with code BAD_REQUEST', async (t) => {
    const bad: [string, RegExp][] = [
      ['limit=0', /limit/],
      ['limit=1001', /limit/],
      ['limit=abc', /limit/],
      ['limit=1.5', /limit/],
      ['limit=-1', /limit/],
      ['limit=', /limit/],
      ['limit=10&limit=20', /more than once/],
      ['q=a&q=b', /more than once/],
      ['archived=maybe', /archived/],
      ['archived=TRUE', /archived/],
      ['archived=1', /archived/],
      ['type=feature', /type/],
      ['type=', /type/],
      ['after=-starts-with-dash', /after/],
      ['after=', /after/],
      ['application=no%20spaces', /application/],
      [`q=${'x'.repeat(257)}`, /q/],
      ['q=%00', /NUL/],
      ['page=2', /Unknown query parameter 'page'/],
      ['offset=10&limit=5', /Unknown query parameter 'offset'/],
    ];
    for (const [qs, detail] of bad) {
      const r = await n.req('GET', `/api/flags?${qs}`, { key: A });
      expectProblem(t, r, 400, 'BAD_REQUEST', `?${qs.slice(0, 40)}`);
      t.match(r.body?.detail, detail, `?${qs.slice(0, 40)}: detail names the problem (${r.body?.detail})`);
    }
    // Good edge values.
    for (const qs of ['limit=1', 'limit=1000', 'limit=0005', 'q=', 'archived=false', 'type=number', 'application=Web', 'q=a+b', 'q=%C3%BC']) {
      t.equal((await n.req('GET', `/api/flags?${qs}`, { key: A })).status, 200, `?${qs} is fine`);
    }
    // The permission comes first (403), like every management call.
    const evaluator = await makeKey(n, A, { permissions: ['CanEvaluate'], application: 'web' });
    expectProblem(t, await n.req('GET', '/api/flags?limit=0', { key: evaluator }), 403, 'FORBIDDEN', 'no CanRead');
    expectProblem(t, await n.req('GET', '/api/flags?limit=1&limit=2', { key: evaluator }), 403, 'FORBIDDEN', 'no CanRead, a repeated parameter');
  });

  t.test('GraphQL: flags(...) equals REST; first out of range is BAD_REQUEST with the field null', async (t) => {
    for (const p of [{}, { q: 'checkout' }, { application: 'Billing', archived: 'false' as const }, { type: 'string' as const }]) {
      const rest = await n.req('GET', '/api/flags' + query({ ...p }), { key: A });
      const g = await n.req('POST', '/api/graphql', {
        key: A,
        body: {
          query: 'query($search: String, $application: String, $type: String, $archived: Boolean) { flags(search: $search, application: $application, type: $type, archived: $archived) { name project type description tags isArchived variants { key value valueType } environments dependencies { flag variants } purpose createdAt updatedAt } }',
          variables: gqlArgs(p),
        },
      });
      t.same(g.body.data?.flags, rest.body, `${JSON.stringify(p)}: the same flags, the same fields`);
    }
    const g = await n.req('POST', '/api/graphql', {
      key: A,
      body: {
        query: `{
          zero: flags(first: 0) { name }
          over: flagConnection(first: 1001) { totalCount }
          neg: flagConnection(first: -3) { totalCount }
          badType: flags(type: "feature") { name }
          badAfter: flags(after: "no spaces") { name }
          ok: flagConnection(first: 2, after: "zzzzzz") { nodes { name } pageInfo { endCursor hasNextPage } totalCount }
        }`,
      },
    });
    t.equal(g.status, 200);
    for (const field of ['zero', 'over', 'neg', 'badType', 'badAfter']) {
      t.equal(g.body.data[field], null, `${field}: null`);
      const e = g.body.errors?.find((x: { path: string[] }) => x.path[0] === field);
      t.match(e, { extensions: { code: 'BAD_REQUEST', status: 400 } }, `${field}: BAD_REQUEST`);
    }
    t.match(g.body.errors.find((x: { path: string[] }) => x.path[0] === 'over').message, /first/, 'the message names `first`');
    t.same(g.body.data.ok, { nodes: [], pageInfo: { endCursor: null, hasNextPage: false }, totalCount: flags.length }, 'an empty page: endCursor null');
    // flagConnection needs first.
    const missing = await n.req('POST', '/api/graphql', { key: A, body: { query: '{ flagConnection { totalCount } }' } });
    t.ok(missing.body.errors?.length > 0, 'first is required');
    // The scoped key over GraphQL too.
    const s = await n.req('POST', '/api/graphql', { key: webReader, body: { query: '{ flagConnection(first: 1000) { totalCount nodes { name } } other: flagConnection(first: 5, application: "billing") { totalCount } }' } });
    t.same(names(s.body.data.flagConnection.nodes), names(expected(flags, {}, 'web')));
    t.equal(s.body.data.flagConnection.totalCount, expected(flags, {}, 'web').length);
    t.equal(s.body.data.other.totalCount, 0);
  });

  t.test('writes show at once in pages and counts (the index follows one-flag changes)', async (t) => {
    const live = new Map(flags.map((f) => [f.name, f] as const));
    const check = async (what: string) => {
      const all = [...live.values()];
      for (const p of [{}, { application: 'web' }, { archived: 'true' as const }, { q: 'fresh' }]) {
        const want = names(expected(all, p));
        const w = await walkRest(n, A, p, 7, want.length);
        t.same(w.problems, [], `${what} ${JSON.stringify(p)}: walk`);
        t.same(w.names, want, `${what} ${JSON.stringify(p)}: pages`);
      }
    };
    await check('before');
    for (const name of ['000-first', 'Mmm.fresh', 'zzz_last']) {
      const r = must(t, await postFlag(n, A, name, { description: 'fresh one' }), 201, `create ${name}`);
      live.set(name, r.body as SeenFlag);
    }
    await check('after creates');
    const victim = [...live.keys()].sort()[5];
    must(t, await deleteFlag(n, A, victim), 204, `delete ${victim}`);
    live.delete(victim);
    const archived = must(t, await putFlag(n, A, 'Mmm.fresh', { isArchived: true, tags: ['checkout'] }), 200, 'archive');
    live.set('Mmm.fresh', archived.body as SeenFlag);
    const restored = [...live.values()].find((f) => f.isArchived && f.name !== 'Mmm.fresh')!;
    live.set(restored.name, must(t, await putFlag(n, A, restored.name, { isArchived: false, description: 'fresh again' }), 200, 'restore').body as SeenFlag);
    await check('after delete, archive, restore, edits');
    // A whole-organization change (an application rename cascades to every flag) rebuilds the index.
    const rename = await n.req('POST', '/api/graphql', { key: A, body: { query: 'mutation { renameApplication(from: "billing", to: "payments") }' } });
    t.same(rename.body.data, { renameApplication: ['web', 'payments', 'Mobile'] });
    for (const [k, f] of live) if (f.project === 'billing') live.set(k, { ...f, project: 'payments' });
    const r = await n.req('GET', '/api/flags?application=payments&limit=1000', { key: A });
    t.same(names(r.body), names(expected([...live.values()], { application: 'payments' })), 'after a rename');
    t.equal((await n.req('GET', '/api/flags?application=billing', { key: A })).headers.get('x-total-count'), '0');
  });

  t.test('OpenAPI documents the parameters and both headers', async (t) => {
    const doc = (await n.req('GET', '/api/openapi.json')).body;
    const op = doc.paths['/api/flags'].get;
    t.same(op.parameters.map((p: { name: string }) => p.name).sort(), ['after', 'application', 'archived', 'limit', 'q', 'status', 'type']);
    t.ok(op.parameters.every((p: { in: string; description?: string }) => p.in === 'query' && typeof p.description === 'string'), 'each described, in the query');
    t.match(op.parameters.find((p: { name: string }) => p.name === 'limit').schema, { type: 'integer', minimum: 1, maximum: 1000 });
    t.same(op.parameters.find((p: { name: string }) => p.name === 'type').schema.enum, [...TYPES]);
    t.same(Object.keys(op.responses['200'].headers).sort(), ['Link', 'X-Total-Count']);
  });
});

t.test('next page URL: VEXIL_PUBLIC_URL, else the Host, else a path alone', async (t) => {
  const rt = (publicUrl: string | null) => publicUrl;
  const params = { q: 'a b', limit: '2', after: 'x', type: 'json' };
  t.equal(nextPageUrl(rt('https://flags.example.com/vexil'), 'ignored:1', params, 'b.1'), 'https://flags.example.com/vexil/api/flags?q=a+b&limit=2&after=b.1&type=json', 'public URL; the parameters keep their order');
  t.equal(nextPageUrl(rt(null), 'node-3:8080', { limit: '5' }, 'Z'), 'http://node-3:8080/api/flags?limit=5&after=Z');
  t.equal(nextPageUrl(rt(null), '[::1]:8080', { limit: '5' }, 'Z'), 'http://[::1]:8080/api/flags?limit=5&after=Z');
  t.equal(nextPageUrl(rt(null), '', { limit: '5' }, 'Z'), '/api/flags?limit=5&after=Z', 'no Host: a path (RFC 8288 allows a relative reference)');
  t.equal(nextPageUrl(rt(null), 'evil>; rel="x"', { limit: '5' }, 'Z'), '/api/flags?limit=5&after=Z', 'a Host that is no host name is not echoed');
});

t.test('the Link of a node with VEXIL_PUBLIC_URL is on that URL, and following it works through a proxy path', async (t) => {
  const n = await startNode(t, { env: { VEXIL_PUBLIC_URL: 'https://flags.example.com/base/' } });
  for (const name of ['a', 'b', 'c']) must(t, await postFlag(n, n.adminKey, name, { project: 'default' }), 201, name);
  const r = await n.req('GET', '/api/flags?limit=2&q=', { key: n.adminKey });
  t.equal(r.headers.get('link'), '<https://flags.example.com/base/api/flags?limit=2&q=&after=b>; rel="next"');
  const next = new URL(r.headers.get('link')!.slice(1, -'>; rel="next"'.length));
  const r2 = await request(n.url, 'GET', next.pathname.replace(/^\/base/, '') + next.search, { key: n.adminKey });
  t.same(names(r2.body), ['c']);
  t.equal(r2.headers.get('link'), null);
});
