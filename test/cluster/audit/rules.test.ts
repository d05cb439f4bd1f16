/**
 * Audit log rules (docs/audit.md) over REST and GraphQL: rejected writes record nothing;
 * visibility (CanRead, application scope, key events for Admin only, organizations apart);
 * paging with before/limit/first; filters; bad parameters are 400; application renames cascade
 * into `application`. PGlite, and PostgreSQL when DATABASE_URL is set.
 */
import t from 'tap';
import {
  boolVariants,
  createOrganization,
  expectProblem,
  operatorRequest,
  skipWithoutPostgres,
  startTestNode,
  type TestNode,
  type TestNodeOptions,
} from '../../helpers/node.js';
import { expectFieldError, gql } from '../../helpers/graphql.js';
import { AUDIT_ENV, AUDIT_FIELDS, auditGql, auditRest, readLog } from '../../helpers/audit.js';

t.setTimeout(300_000);

const env = AUDIT_ENV;

/** The whole suite against one node started with `opts` (its database). */
function suite(t: typeof import('tap').default, opts: TestNodeOptions): void {
  let n: TestNode;
  /** acme's admin key, and keys of the visibility rules. */
  let A: string;
  const keys: Record<string, string> = {};

  async function newKey(name: string, body: Record<string, unknown>): Promise<string> {
    const r = await n.req('POST', '/api/keys', { key: A, body: { name, ...body } });
    if (r.status !== 201) throw new Error(`key ${name}: ${r.status} ${r.text}`);
    return r.body.key;
  }

  const flagBody = (name: string, project: string, extra: Record<string, unknown> = {}) =>
    ({ name, project, type: 'boolean', variants: boolVariants, ...extra });

  t.before(async () => {
    n = await startTestNode(t, { ...opts, env });
    A = (await createOrganization(n, 'acme', { applications: ['web', 'mobile'] })).adminKey;
    keys.webReader = await newKey('web-reader', { permissions: ['CanRead'], application: 'web' });
    keys.webWriter = await newKey('web-writer', { permissions: ['CanWrite'], application: 'web' });
    keys.reader = await newKey('reader', { permissions: ['CanRead'] });
    keys.evaluator = await newKey('evaluator', { permissions: ['CanEvaluate'], application: 'web' });
    keys.adminOnly = await newKey('admin-only', { permissions: ['Admin'] });
    for (const [name, project] of [['w1', 'web'], ['w2', 'web'], ['m1', 'mobile']]) {
      const r = await n.req('POST', '/api/flags', { key: A, body: flagBody(name, project) });
      if (r.status !== 201) throw new Error(r.text);
    }
    for (const name of ['w1', 'm1']) {
      await n.req('POST', `/api/flags/${name}/configs`, { key: A, body: { stage: 'production', enabled: true, defaultVariantKey: 'off', rolloutPercentage: 100 } });
    }
    await n.req('PUT', '/api/flags/w2', { key: keys.webWriter, body: { description: 'by the web writer' } });
    await gql(n, A, 'mutation { replaceKillSwitch(rules: [{flag: "m1"}]) { flag } }');
  });

  t.test('rejected writes record nothing', async (t) => {
    const before = await readLog(t, n, A);
    const rest = (method: string, path: string, body?: unknown, key = A) => n.req(method, path, { key, body });

    expectProblem(t, await rest('POST', '/api/flags', flagBody('w1', 'web')), 409, 'CONFLICT', 'duplicate flag');
    expectProblem(t, await rest('POST', '/api/flags', { ...flagBody('x', 'web'), colour: 'red' }), 400, 'BAD_REQUEST', 'unknown field');
    expectProblem(t, await rest('POST', '/api/flags', flagBody('x', 'nope')), 400, 'BAD_REQUEST', 'unknown application');
    expectProblem(t, await rest('POST', '/api/flags/w1/configs', { stage: 'production', enabled: true, defaultVariantKey: 'maybe', rolloutPercentage: 100 }), 400, 'BAD_REQUEST', 'unknown variant');
    expectProblem(t, await rest('PUT', '/api/flags/nope', { description: 'x' }), 404, 'NOT_FOUND', 'update of a missing flag');
    expectProblem(t, await rest('PUT', '/api/flags/m1', { description: 'x' }, keys.webWriter), 403, 'FORBIDDEN', 'write outside the scope');
    expectProblem(t, await rest('POST', '/api/keys', { name: 'k', permissions: ['CanRead'], application: 'nope' }), 400, 'BAD_REQUEST', 'key with unknown application');
    expectProblem(t, await rest('POST', '/api/keys/00000000-0000-0000-0000-000000000000/rotate'), 404, 'NOT_FOUND', 'rotate of a missing key');
    expectProblem(t, await rest('DELETE', '/api/keys/00000000-0000-0000-0000-000000000000'), 404, 'NOT_FOUND', 'delete of a missing key');
    expectProblem(t, await operatorRequest(n, 'POST', '/organizations', { name: 'acme', environments: ['a'], applications: ['b'] }), 409, 'CONFLICT', 'operator: existing organization');
    expectProblem(t, await operatorRequest(n, 'PATCH', '/organizations/acme', { subscriptionActive: 'no' }), 400, 'BAD_REQUEST', 'operator: bad patch');

    const g = await gql(n, A, `mutation {
      dup: createFlag(input: {name: "w1", project: "web", type: "boolean", variants: [{key: "on", value: true, valueType: "boolean"}]}) { name }
      env: replaceEnvironments(environments: ["development"])
      app: renameApplication(from: "web", to: "mobile")
      cfg: setFlagConfigEnabled(name: "w2", stage: "production", enabled: false) { enabled }
      ks: replaceKillSwitch(rules: [{environment: "nope"}]) { flag }
    }`);
    expectFieldError(t, g, ['dup'], 'CONFLICT', 'GraphQL duplicate flag');
    expectFieldError(t, g, ['env'], 'CONFLICT', 'GraphQL removing an environment in use');
    expectFieldError(t, g, ['app'], 'CONFLICT', 'GraphQL renaming onto an existing application');
    expectFieldError(t, g, ['cfg'], 'NOT_FOUND', 'GraphQL enabling a missing configuration');
    expectFieldError(t, g, ['ks'], 'BAD_REQUEST', 'GraphQL kill switch with an unknown environment');

    t.same(await readLog(t, n, A), before, 'the log is unchanged after 409s, 400s, 403s and 404s');
  });

  t.test('visibility', async (t) => {
    const all = await readLog(t, n, A);
    t.ok(all.some((e) => e.target.type === 'key'), 'an Admin key sees key events');
    t.ok(all.some((e) => e.application === 'mobile'), 'and events of every application');

    const web = await readLog(t, n, keys.webReader);
    t.same(web, all.filter((e) => e.application === 'web'), 'a key scoped to web sees exactly the events of web');
    t.ok(web.length >= 4, `web events: ${web.length}`);
    t.ok(web.some((e) => e.actor.keyName === 'web-writer'), 'including other keys\' writes to web');

    const reader = await readLog(t, n, keys.reader);
    t.same(reader, all.filter((e) => e.target.type !== 'key'), 'a CanRead key without Admin sees everything but key events');
    t.same(await readLog(t, n, keys.reader, 'type=key'), [], 'type=key answers nothing for it, not 403');

    expectProblem(t, await auditRest(n, keys.evaluator), 403, 'FORBIDDEN', 'CanEvaluate only');
    expectProblem(t, await auditRest(n, keys.adminOnly), 403, 'FORBIDDEN', 'Admin without CanRead');
    expectProblem(t, await auditRest(n, ''), 401, 'UNAUTHENTICATED', 'no key');

    // GraphQL: the same rules through the same service.
    const norm = (x: any) => ({
      ...x,
      actor: 'operator' in x.actor ? { keyId: null, keyName: null, operator: true } : { ...x.actor, operator: false },
      target: { stage: null, clientId: null, ...x.target },
    });
    const gWeb = await auditGql(n, keys.webReader, '(first: 500)');
    t.same(gWeb.body.data.auditLog, web.map(norm), 'GraphQL: the scoped key sees the same events as over REST');
    const gReader = await auditGql(n, keys.reader, '(first: 500)');
    t.same(gReader.body.data.auditLog, reader.map(norm), 'GraphQL: no key events without Admin');
    expectFieldError(t, await auditGql(n, keys.evaluator), ['auditLog'], 'FORBIDDEN', 'GraphQL: CanEvaluate only');

    // Another organization sees none of acme's events, and acme none of its.
    const B = (await createOrganization(n, 'globex')).adminKey;
    await n.req('POST', '/api/flags', { key: B, body: flagBody('w1', 'default') });
    const other = await readLog(t, n, B);
    t.same(other.map((e) => e.action), ['flag.create', 'org.create'], 'globex sees only its own two events');
    t.same(await readLog(t, n, B, 'target=acme'), [], 'and nothing by acme\'s name');
    t.same(await readLog(t, n, A), all, 'acme\'s log did not gain globex\'s events');
    t.same((await auditGql(n, B, '(target: "m1")')).body.data.auditLog, [], 'GraphQL: nothing of acme for globex');
  });

  t.test('filters', async (t) => {
    const all = await readLog(t, n, A);
    t.same(await readLog(t, n, A, 'target=w1'), all.filter((e) => e.target.name === 'w1'), 'target=w1');
    t.same((await readLog(t, n, A, 'target=w1')).map((e) => e.action), ['config.upsert', 'flag.create'], 'w1: its configuration and its creation');
    for (const type of ['flag', 'key', 'organization']) {
      const got = await readLog(t, n, A, `type=${type}`);
      t.ok(got.length > 0, `type=${type} finds events`);
      t.same(got, all.filter((e) => e.target.type === type), `type=${type}`);
    }
    t.same(await readLog(t, n, A, 'target=acme&type=organization'), all.filter((e) => e.target.name === 'acme'), 'target and type together');
    t.same(await readLog(t, n, A, 'target=w1&type=key'), [], 'a target of another type: nothing');
    t.same(await readLog(t, n, keys.webReader, 'target=m1'), [], 'a scoped key filtering on another application\'s flag: nothing');
    const g = await auditGql(n, A, '(target: "w1", type: "flag")');
    t.same(g.body.data.auditLog.map((e: any) => e.action), ['config.upsert', 'flag.create'], 'GraphQL target and type');
  });

  t.test('paging', async (t) => {
    const all = await readLog(t, n, A);
    t.ok(all.length >= 10, `enough events to page (${all.length})`);
    t.same(await readLog(t, n, A, 'limit=3'), all.slice(0, 3), 'limit=3: the three newest');

    const pages: any[][] = [];
    let cursor = '';
    for (;;) {
      const page = await readLog(t, n, A, `limit=4${cursor === '' ? '' : `&before=${cursor}`}`);
      if (page.length === 0) break;
      t.ok(page.length <= 4, 'a page holds at most limit events');
      pages.push(page);
      cursor = page[page.length - 1].id;
    }
    t.same(pages.flat(), all, 'pages of 4 with before=<last id> walk the whole log once, newest first');
    t.same(await readLog(t, n, A, `before=${all[0].id}`), all.slice(1), 'before=<newest id>: everything older');
    t.same(await readLog(t, n, A, `before=${all[all.length - 1].id}`), [], 'before=<oldest id>: nothing');
    t.same(await readLog(t, n, A, `target=w1&limit=1&before=${all[0].id}`), all.filter((e) => e.target.name === 'w1').slice(0, 1), 'paging with a filter');

    // GraphQL first/before.
    const ids = (r: any) => r.body.data.auditLog.map((e: any) => e.id);
    t.same(ids(await auditGql(n, A, '(first: 2)')), all.slice(0, 2).map((e) => e.id), 'GraphQL first: 2');
    t.same(ids(await auditGql(n, A, `(first: 3, before: "${all[1].id}")`)), all.slice(2, 5).map((e) => e.id), 'GraphQL first and before');
    t.same(ids(await auditGql(n, A, `(first: 1, before: ${all[1].id})`)), [all[2].id], 'GraphQL before as an integer ID literal');

    // The default page is 100 events: GraphQL documents of 101 mutations in all (at most
    // VEXIL_GRAPHQL_MAX_MUTATIONS = 20 each) write 101 events.
    const doc = Array.from({ length: 101 }, (_, i) => `f${i}: createFlag(input: {name: "bulk-${i}", project: "web", type: "boolean", variants: [{key: "on", value: true, valueType: "boolean"}]}) { name }`);
    const errors: unknown[] = [];
    for (let i = 0; i < doc.length; i += 20) {
      const bulk = await gql(n, A, `mutation { ${doc.slice(i, i + 20).join('\n')} }`);
      if (bulk.body.errors !== undefined) errors.push(bulk.body.errors);
    }
    t.same(errors, [], '101 flags created');
    const page = await readLog(t, n, A, '');
    t.equal(page.length, 100, 'no limit: 100 events');
    t.equal(page[0].target.name, 'bulk-100', 'the newest first');
    t.equal((await readLog(t, n, A, 'limit=500')).length, all.length + 101, 'limit=500 reaches past the default');
    t.equal((await auditGql(n, A)).body.data.auditLog.length, 100, 'GraphQL: no first, 100 events');
  });

  t.test('bad parameters are 400 and change nothing', async (t) => {
    for (const q of ['limit=0', 'limit=501', 'limit=-1', 'limit=abc', 'limit=1.5', 'limit=', 'type=bogus', 'type=flag.create', 'before=abc',
      'before=0', 'before=-5', 'before=1e3', 'before=99999999999999999999999', 'colour=red', 'limit=1&limit=2', 'target=']) {
      expectProblem(t, await auditRest(n, A, q), 400, 'BAD_REQUEST', `?${q}`);
    }
    expectProblem(t, await auditRest(n, keys.evaluator, 'limit=0'), 403, 'FORBIDDEN', 'permission before validation');
    for (const args of ['(first: 0)', '(first: 501)', '(type: "bogus")', '(before: "x")', '(target: "")']) {
      expectFieldError(t, await gql(n, A, `{ auditLog${args} { id } }`), ['auditLog'], 'BAD_REQUEST', `GraphQL auditLog${args}`);
    }
    t.equal((await auditRest(n, A, 'limit=500')).status, 200, 'limit=500 is allowed');
    t.equal((await auditRest(n, A, 'limit=1')).status, 200, 'limit=1 is allowed');
  });

  t.test('application renames cascade into application', async (t) => {
    const before = await readLog(t, n, A);
    const webIds = before.filter((e) => e.application === 'web').map((e) => e.id);
    const webSeen = await readLog(t, n, keys.webReader);
    t.ok(webIds.length > 100, 'web has events');

    const r = await gql(n, A, 'mutation { renameApplication(from: "web", to: "storefront") }');
    t.same(r.body.data?.renameApplication, ['storefront', 'mobile'], 'renamed');
    const after = await readLog(t, n, A);
    t.equal(after.length, before.length + 1, 'one event for the rename');
    t.match(after[0], { action: 'org.applications', application: null, before: { applications: ['web', 'mobile'] }, after: { applications: ['storefront', 'mobile'] } }, 'the rename event');
    t.same(after.filter((e) => e.application === 'storefront').map((e) => e.id), webIds, 'every web event now names storefront');
    t.same(after.filter((e) => e.application === 'web'), [], 'no event names web any more');
    t.same((await readLog(t, n, A, `target=m1`)).every((e) => e.application === 'mobile'), true, 'mobile events are untouched');

    // The scoped key followed the rename too and still sees the same events.
    const scoped = await readLog(t, n, keys.webReader);
    t.same(scoped.map((e) => e.id), webSeen.map((e) => e.id), 'the renamed scope sees the same events');
    t.ok(scoped.every((e) => e.application === 'storefront'), 'now under the new name');
    t.equal((await n.req('GET', '/api/flags/w1', { key: keys.webReader })).status, 200, 'the re-scoped key reads its flags at once (its cached record was dropped)');

    // A case-only rename through replaceApplications cascades as well.
    await gql(n, A, 'mutation { replaceApplications(applications: ["StoreFront", "mobile"]) }');
    t.ok((await readLog(t, n, A, 'target=w1')).every((e) => e.application === 'StoreFront'), 'case-only rename through replaceApplications');
    t.equal((await readLog(t, n, keys.webReader)).length, scoped.length, 'the scoped key still sees them');
  });

  t.test('the GraphQL types', async (t) => {
    const r = await gql(n, A, `{ auditLog(first: 1, type: "organization") { ${AUDIT_FIELDS} } }`);
    t.match(r.body.data.auditLog[0], {
      id: /^[0-9]+$/, at: String, actor: { keyId: String, keyName: 'admin', operator: false },
      action: 'org.applications', target: { type: 'organization', name: 'acme', stage: null, clientId: null }, application: null,
    }, 'an organization event over GraphQL');
    const op = await gql(n, A, `{ auditLog(target: "acme", type: "organization") { actor { keyId keyName operator } action } }`);
    t.same(op.body.data.auditLog.at(-1), { actor: { keyId: null, keyName: null, operator: true }, action: 'org.create' }, 'the operator actor over GraphQL');
  });
}

t.test('PGlite', async (t) => suite(t, {}));

t.test('PostgreSQL', { skip: skipWithoutPostgres() }, async (t) => suite(t, { db: 'postgres' }));
