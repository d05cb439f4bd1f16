/**
 * Flag management over REST (docs/api.md, "Flags" and "Errors"): list, get, create, update, archive,
 * delete, every 409, permissions and application scope. One node for the file; each subtest
 * works in its own organization (operator API) so that states never mix.
 */
import t from 'tap';
import {
  CONFIG_FIELDS,
  FLAG_FIELDS,
  boolVariants,
  createOrg,
  deleteFlag,
  evalFlag,
  evalKey,
  expectProblem,
  expectRejectedUnchanged,
  getFlag,
  isoDate,
  makeKey,
  must,
  orgState,
  postConfig,
  postFlag,
  putFlag,
  startNode,
} from '../../helpers/flags.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

t.test('flag management over REST', async (t) => {
  const n = await startNode(t);

  t.test('create answers 201 with the Flag object', async (t) => {
    const org = await createOrg(n, ['development', 'staging', 'production'], ['web', 'billing']);
    const r = await postFlag(n, org.adminKey, 'checkout.v2-new_flow', {
      description: 'New checkout',
      tags: ['team-a', 'checkout'],
    });
    t.equal(r.status, 201);
    t.match(r.headers.get('content-type') ?? '', /^application\/json/);
    t.same(Object.keys(r.body).sort(), FLAG_FIELDS, 'exactly the Flag fields, no configs');
    t.equal(r.body.name, 'checkout.v2-new_flow');
    t.equal(r.body.project, 'web');
    t.equal(r.body.type, 'boolean');
    t.equal(r.body.description, 'New checkout');
    t.same(r.body.tags, ['team-a', 'checkout']);
    t.equal(r.body.isArchived, false);
    t.same(r.body.variants, boolVariants);
    t.same(r.body.environments, ['development', 'staging', 'production'], 'environments default to all of the organization');
    t.same(r.body.dependencies, []);
    t.match(r.body.createdAt, isoDate);
    t.match(r.body.updatedAt, isoDate);

    // What create answered is what get answers (plus configs, empty).
    const g = await getFlag(n, org.adminKey, 'checkout.v2-new_flow');
    t.equal(g.status, 200);
    t.same(g.body, { ...r.body, configs: [] });

    // Defaults: description null, tags [], and the org's spelling of the project.
    const d = await postFlag(n, org.adminKey, 'minimal', { project: 'WEB' });
    t.equal(d.status, 201);
    t.equal(d.body.description, null);
    t.same(d.body.tags, []);
    t.equal(d.body.project, 'web', 'project stored in the organization spelling');

    // Explicit environments are used as given (org spelling), not all of them.
    const e = await postFlag(n, org.adminKey, 'prod-only', { environments: ['PRODUCTION'] });
    t.equal(e.status, 201);
    t.same(e.body.environments, ['production']);

    // Non-boolean types keep their values.
    const s = await postFlag(n, org.adminKey, 'colour', {
      type: 'string',
      variants: [
        { key: 'red', value: '#f00', valueType: 'string' },
        { key: 'blue', value: '#00f', valueType: 'string' },
      ],
    });
    t.equal(s.status, 201);
    t.same(s.body.variants, [
      { key: 'red', value: '#f00', valueType: 'string' },
      { key: 'blue', value: '#00f', valueType: 'string' },
    ]);
    const j = await postFlag(n, org.adminKey, 'settings', {
      type: 'json',
      variants: [
        { key: 'a', value: { limit: 5, nested: [1, 'x', null] }, valueType: 'json' },
        { key: 'b', value: null, valueType: 'json' },
      ],
    });
    t.equal(j.status, 201);
    t.same(j.body.variants[0].value, { limit: 5, nested: [1, 'x', null] });
    t.equal(j.body.variants[1].value, null);

    // The default organization's environments are development and production.
    const def = await postFlag(n, n.adminKey, 'default-org-flag', { project: 'default' });
    t.equal(def.status, 201);
    t.same(def.body.environments, ['development', 'production']);
  });

  t.test('list is a bare array of Flag objects, filtered by the application scope', async (t) => {
    const org = await createOrg(n);
    must(t, await postFlag(n, org.adminKey, 'w-one'), 201, 'create');
    must(t, await postFlag(n, org.adminKey, 'b-one', { project: 'billing' }), 201, 'create');
    must(t, await postFlag(n, org.adminKey, 'w-two'), 201, 'create');
    must(t, await postConfig(n, org.adminKey, 'w-one'), 200, 'config');

    const all = await n.req('GET', '/api/flags', { key: org.adminKey });
    t.equal(all.status, 200);
    t.match(all.headers.get('content-type') ?? '', /^application\/json/);
    t.ok(Array.isArray(all.body), 'bare JSON array');
    t.same(all.body.map((f: { name: string }) => f.name).sort(), ['b-one', 'w-one', 'w-two']);
    for (const f of all.body) t.same(Object.keys(f).sort(), FLAG_FIELDS, `list item ${f.name} is a Flag (no configs)`);

    const webReader = await makeKey(n, org.adminKey, { permissions: ['CanRead'], application: 'web' });
    const web = await n.req('GET', '/api/flags', { key: webReader });
    t.equal(web.status, 200);
    t.same(web.body.map((f: { name: string }) => f.name).sort(), ['w-one', 'w-two'], 'only the scoped application');

    const billingReader = await makeKey(n, org.adminKey, { permissions: ['CanRead'], application: 'BILLING' });
    const billing = await n.req('GET', '/api/flags', { key: billingReader });
    t.same(billing.body.map((f: { name: string }) => f.name), ['b-one'], 'application scope compared case-insensitively');

    // An environment-scoped reader still sees every flag of its application.
    const envReader = await makeKey(n, org.adminKey, { permissions: ['CanRead'], environment: 'development' });
    const env = await n.req('GET', '/api/flags', { key: envReader });
    t.same(env.body.map((f: { name: string }) => f.name).sort(), ['b-one', 'w-one', 'w-two']);

    // An organization with no flags answers [].
    const empty = await createOrg(n);
    const e = await n.req('GET', '/api/flags', { key: empty.adminKey });
    t.equal(e.status, 200);
    t.same(e.body, []);
  });

  t.test('get includes configs; 403 in another application; 404 unknown or in another organization', async (t) => {
    const org = await createOrg(n);
    must(t, await postFlag(n, org.adminKey, 'web-flag'), 201, 'create');
    must(t, await postFlag(n, org.adminKey, 'billing-flag', { project: 'billing' }), 201, 'create');
    const cfg = must(t, await postConfig(n, org.adminKey, 'web-flag', { stage: 'development', defaultVariantKey: 'on' }), 200, 'config');

    const g = await getFlag(n, org.adminKey, 'web-flag');
    t.equal(g.status, 200);
    t.same(Object.keys(g.body).sort(), [...FLAG_FIELDS, 'configs'].sort());
    t.same(g.body.configs, [cfg.body], 'configs are the stored FlagConfig objects');
    t.same(Object.keys(g.body.configs[0]).sort(), CONFIG_FIELDS);

    const webReader = await makeKey(n, org.adminKey, { permissions: ['CanRead'], application: 'web' });
    t.equal((await getFlag(n, webReader, 'web-flag')).status, 200);
    expectProblem(t, await getFlag(n, webReader, 'billing-flag'), 403, 'FORBIDDEN');
    expectProblem(t, await getFlag(n, webReader, 'no-such-flag'), 404, 'NOT_FOUND');
    expectProblem(t, await getFlag(n, org.adminKey, 'no-such-flag'), 404, 'NOT_FOUND');

    // Organizations never learn of each other's flags: 404, not 403, and absent from lists.
    const other = await createOrg(n);
    expectProblem(t, await getFlag(n, other.adminKey, 'web-flag'), 404, 'NOT_FOUND');
    t.same((await n.req('GET', '/api/flags', { key: other.adminKey })).body, []);
    await expectRejectedUnchanged(t, n, org.adminKey, 'web-flag', () => putFlag(n, other.adminKey, 'web-flag', { description: 'x' }), 404, 'NOT_FOUND');
    await expectRejectedUnchanged(t, n, org.adminKey, 'web-flag', () => deleteFlag(n, other.adminKey, 'web-flag'), 404, 'NOT_FOUND');
    await expectRejectedUnchanged(t, n, org.adminKey, 'web-flag', () => postConfig(n, other.adminKey, 'web-flag'), 404, 'NOT_FOUND');
    const otherEval = await evalKey(n, other.adminKey, 'web');
    expectProblem(t, await evalFlag(n, otherEval, 'web-flag', { userId: 'u', stage: 'development' }), 404, 'NOT_FOUND');
    // ...and may create a flag of the same name without conflict.
    t.equal((await postFlag(n, other.adminKey, 'web-flag')).status, 201);

    // A percent-encoded name reaches the same flag.
    t.equal((await n.req('GET', '/api/flags/web%2Dflag', { key: org.adminKey })).status, 200);
  });

  t.test('update is partial: absent fields are kept', async (t) => {
    const org = await createOrg(n);
    const created = must(t, await postFlag(n, org.adminKey, 'partial', { description: 'first', tags: ['a', 'b'] }), 201, 'create').body;
    const cfg = must(t, await postConfig(n, org.adminKey, 'partial'), 200, 'config').body;
    await sleep(5);

    const u1 = await putFlag(n, org.adminKey, 'partial', { description: 'second' });
    t.equal(u1.status, 200);
    t.same(Object.keys(u1.body).sort(), FLAG_FIELDS, 'update answers the Flag object');
    t.equal(u1.body.description, 'second');
    t.same(u1.body.tags, ['a', 'b'], 'tags kept');
    t.same(u1.body.variants, created.variants, 'variants kept');
    t.equal(u1.body.type, 'boolean');
    t.equal(u1.body.project, 'web');
    t.same(u1.body.environments, created.environments);
    t.equal(u1.body.isArchived, false);
    t.equal(u1.body.createdAt, created.createdAt, 'createdAt never changes');
    t.ok(Date.parse(u1.body.updatedAt) > Date.parse(created.updatedAt), 'updatedAt advances');

    const u2 = await putFlag(n, org.adminKey, 'partial', { tags: ['c'] });
    t.equal(u2.status, 200);
    t.equal(u2.body.description, 'second', 'description kept');
    t.same(u2.body.tags, ['c']);

    const u3 = await putFlag(n, org.adminKey, 'partial', { description: null });
    t.equal(u3.status, 200);
    t.equal(u3.body.description, null, 'explicit null clears the description');
    t.same(u3.body.tags, ['c']);

    const u4 = await putFlag(n, org.adminKey, 'partial', {
      variants: [...boolVariants.map((v) => ({ ...v })), { key: 'also-on', value: true, valueType: 'boolean' }],
    });
    t.equal(u4.status, 200);
    t.same(u4.body.variants.map((v: { key: string }) => v.key), ['on', 'off', 'also-on']);

    // An empty update changes nothing but is accepted.
    const u5 = await putFlag(n, org.adminKey, 'partial', {});
    t.equal(u5.status, 200);
    t.same({ ...u5.body, updatedAt: null }, { ...u4.body, updatedAt: null });

    // The configuration is untouched by metadata updates.
    const g = await getFlag(n, org.adminKey, 'partial');
    t.same(g.body.configs, [cfg]);
    t.same({ ...g.body, configs: undefined }, { ...u5.body, configs: undefined });

    // Changing the type needs variants of the new type: the stored boolean variants do not fit.
    await expectRejectedUnchanged(t, n, org.adminKey, 'partial', () => putFlag(n, org.adminKey, 'partial', { type: 'string' }), 400, 'BAD_REQUEST');
    // Removing a variant a configuration still uses is a conflict.
    await expectRejectedUnchanged(
      t, n, org.adminKey, 'partial',
      () => putFlag(n, org.adminKey, 'partial', { variants: [{ key: 'on', value: true, valueType: 'boolean' }] }),
      409, 'CONFLICT',
    );
    // Removing a variant a dependent flag requires is a conflict too.
    must(t, await postFlag(n, org.adminKey, 'needs-also-on', { dependencies: [{ flag: 'partial', variants: ['also-on'] }] }), 201, 'dependent');
    await expectRejectedUnchanged(
      t, n, org.adminKey, 'partial',
      () => putFlag(n, org.adminKey, 'partial', { variants: boolVariants }),
      409, 'CONFLICT', /needs-also-on/,
    );
    // Unknown flag: 404.
    expectProblem(t, await putFlag(n, org.adminKey, 'nope', { description: 'x' }), 404, 'NOT_FOUND');
  });

  t.test('archive and restore through PUT isArchived', async (t) => {
    const org = await createOrg(n);
    must(t, await postFlag(n, org.adminKey, 'old-feature'), 201, 'create');
    must(t, await postConfig(n, org.adminKey, 'old-feature', { rules: [{ priority: 1, conditions: [], allocations: [{ variantKey: 'on', percentage: 100 }] }] }), 200, 'config');
    const ek = await evalKey(n, org.adminKey, 'web');
    const before = await evalFlag(n, ek, 'old-feature', { userId: 'u1', stage: 'production' }, true);
    t.equal(before.body.reason.code, 'rule_matched');

    const a = await putFlag(n, org.adminKey, 'old-feature', { isArchived: true });
    t.equal(a.status, 200);
    t.equal(a.body.isArchived, true);
    t.equal((await getFlag(n, org.adminKey, 'old-feature')).body.isArchived, true);
    t.ok((await n.req('GET', '/api/flags', { key: org.adminKey })).body.find((f: { name: string }) => f.name === 'old-feature').isArchived, 'archived flags stay listed');
    const ev = await evalFlag(n, ek, 'old-feature', { userId: 'u1', stage: 'production' }, true);
    t.same(ev.body, { variant: false, key: 'off', reason: { code: 'archived', message: ev.body.reason.message } });

    const r = await putFlag(n, org.adminKey, 'old-feature', { isArchived: false });
    t.equal(r.status, 200);
    t.equal(r.body.isArchived, false);
    const ev2 = await evalFlag(n, ek, 'old-feature', { userId: 'u1', stage: 'production' }, true);
    t.equal(ev2.body.reason.code, 'rule_matched', 'restored flag evaluates again');
    t.equal(ev2.body.key, 'on');
  });

  t.test('delete answers 204, then the flag is gone everywhere', async (t) => {
    const org = await createOrg(n);
    must(t, await postFlag(n, org.adminKey, 'temp'), 201, 'create');
    must(t, await postConfig(n, org.adminKey, 'temp', { defaultVariantKey: 'on' }), 200, 'config');
    must(t, await postFlag(n, org.adminKey, 'keeper'), 201, 'create');
    const ek = await evalKey(n, org.adminKey, 'web');

    const d = await deleteFlag(n, org.adminKey, 'temp');
    t.equal(d.status, 204);
    t.equal(d.text, '', '204 has no body');
    expectProblem(t, await getFlag(n, org.adminKey, 'temp'), 404, 'NOT_FOUND');
    expectProblem(t, await evalFlag(n, ek, 'temp', { userId: 'u', stage: 'production' }), 404, 'NOT_FOUND');
    t.same((await n.req('GET', '/api/flags', { key: org.adminKey })).body.map((f: { name: string }) => f.name), ['keeper']);
    expectProblem(t, await deleteFlag(n, org.adminKey, 'temp'), 404, 'NOT_FOUND', /temp/);
    expectProblem(t, await putFlag(n, org.adminKey, 'temp', { description: 'x' }), 404, 'NOT_FOUND');
    expectProblem(t, await postConfig(n, org.adminKey, 'temp'), 404, 'NOT_FOUND');

    // The name is free again, and the new flag does not inherit the old configuration.
    const again = await postFlag(n, org.adminKey, 'temp');
    t.equal(again.status, 201);
    t.same((await getFlag(n, org.adminKey, 'temp')).body.configs, []);
    const ev = await evalFlag(n, ek, 'temp', { userId: 'u', stage: 'production' }, true);
    t.same(ev.body, { variant: null, key: null, reason: { code: 'config_missing', message: ev.body.reason.message } });
  });

  t.test('409: the name already exists', async (t) => {
    const org = await createOrg(n);
    must(t, await postFlag(n, org.adminKey, 'dup', { description: 'original' }), 201, 'create');
    await expectRejectedUnchanged(t, n, org.adminKey, 'dup',
      () => postFlag(n, org.adminKey, 'dup', { description: 'second', project: 'billing' }), 409, 'CONFLICT', /dup/);
    // Flag names are exact: another case is another flag.
    t.equal((await postFlag(n, org.adminKey, 'DUP')).status, 201);
  });

  t.test('409: a dependency parent lacking one of the flag environments', async (t) => {
    const org = await createOrg(n, ['development', 'staging', 'production']);
    must(t, await postFlag(n, org.adminKey, 'parent', { environments: ['production', 'staging'] }), 201, 'create');
    // On create: the child would use all three environments.
    await expectRejectedUnchanged(t, n, org.adminKey, 'child',
      () => postFlag(n, org.adminKey, 'child', { dependencies: [{ flag: 'parent' }] }), 409, 'CONFLICT', /development/);
    expectProblem(t, await getFlag(n, org.adminKey, 'child'), 404, 'NOT_FOUND');
    // A child within the parent's environments is fine.
    const ok = await postFlag(n, org.adminKey, 'child', { environments: ['production'], dependencies: [{ flag: 'parent', variants: ['on'] }] });
    t.equal(ok.status, 201);
    t.same(ok.body.dependencies, [{ flag: 'parent', variants: ['on'] }]);
    // On update: a flag using all environments gains the dependency.
    must(t, await postFlag(n, org.adminKey, 'wide'), 201, 'create');
    await expectRejectedUnchanged(t, n, org.adminKey, 'wide',
      () => putFlag(n, org.adminKey, 'wide', { dependencies: [{ flag: 'parent' }] }), 409, 'CONFLICT');
    // A dependency's variants must be variants of the parent; an unknown parent is bad input.
    await expectRejectedUnchanged(t, n, org.adminKey, 'child',
      () => putFlag(n, org.adminKey, 'child', { dependencies: [{ flag: 'parent', variants: ['purple'] }] }), 400, 'BAD_REQUEST');
    await expectRejectedUnchanged(t, n, org.adminKey, 'child',
      () => putFlag(n, org.adminKey, 'child', { dependencies: [{ flag: 'ghost' }] }), 400, 'BAD_REQUEST');
  });

  t.test('409: a dependency cycle', async (t) => {
    const org = await createOrg(n);
    must(t, await postFlag(n, org.adminKey, 'b'), 201, 'create b');
    must(t, await postFlag(n, org.adminKey, 'a', { dependencies: [{ flag: 'b' }] }), 201, 'create a -> b');
    await expectRejectedUnchanged(t, n, org.adminKey, 'b',
      () => putFlag(n, org.adminKey, 'b', { dependencies: [{ flag: 'a' }] }), 409, 'CONFLICT', /cycle/i);
    // A longer cycle: c -> a -> b, then b -> c.
    must(t, await postFlag(n, org.adminKey, 'c', { dependencies: [{ flag: 'a' }] }), 201, 'create c -> a');
    await expectRejectedUnchanged(t, n, org.adminKey, 'b',
      () => putFlag(n, org.adminKey, 'b', { dependencies: [{ flag: 'c' }] }), 409, 'CONFLICT');
    // A flag depending on itself is invalid input (400), on create and on update alike.
    await expectRejectedUnchanged(t, n, org.adminKey, 'a',
      () => putFlag(n, org.adminKey, 'a', { dependencies: [{ flag: 'a' }] }), 400, 'BAD_REQUEST', /itself/);
    // A diamond is not a cycle: d -> a, d -> c (both reach b).
    t.equal((await postFlag(n, org.adminKey, 'd', { dependencies: [{ flag: 'a' }, { flag: 'c' }] })).status, 201);
    // Removing the dependency is fine.
    const clear = await putFlag(n, org.adminKey, 'a', { dependencies: [] });
    t.equal(clear.status, 200);
    t.same(clear.body.dependencies, []);
  });

  t.test('409: deleting a flag others depend on', async (t) => {
    const org = await createOrg(n);
    must(t, await postFlag(n, org.adminKey, 'base'), 201, 'create');
    must(t, await postConfig(n, org.adminKey, 'base'), 200, 'config');
    must(t, await postFlag(n, org.adminKey, 'dependent', { dependencies: [{ flag: 'base' }] }), 201, 'create');
    await expectRejectedUnchanged(t, n, org.adminKey, 'base', () => deleteFlag(n, org.adminKey, 'base'), 409, 'CONFLICT', /dependent/);
    // Once the dependent is gone the parent can be deleted.
    t.equal((await deleteFlag(n, org.adminKey, 'dependent')).status, 204);
    t.equal((await deleteFlag(n, org.adminKey, 'base')).status, 204);
    t.same((await n.req('GET', '/api/flags', { key: org.adminKey })).body, []);
  });

  t.test('permissions: CanRead reads only, CanWrite reads and writes, CanEvaluate and Admin alone cannot read', async (t) => {
    const org = await createOrg(n);
    must(t, await postFlag(n, org.adminKey, 'guarded'), 201, 'create');
    must(t, await postConfig(n, org.adminKey, 'guarded'), 200, 'config');
    const reader = await makeKey(n, org.adminKey, { permissions: ['CanRead'] });
    const writer = await makeKey(n, org.adminKey, { permissions: ['CanWrite'] });
    const evaluator = await makeKey(n, org.adminKey, { permissions: ['CanEvaluate'], application: 'web' });
    const admin = await makeKey(n, org.adminKey, { permissions: ['Admin'] });

    // CanRead: reads, and every write is 403 and changes nothing.
    t.equal((await n.req('GET', '/api/flags', { key: reader })).status, 200);
    t.equal((await getFlag(n, reader, 'guarded')).status, 200);
    await expectRejectedUnchanged(t, n, org.adminKey, 'new-one', () => postFlag(n, reader, 'new-one'), 403, 'FORBIDDEN', /CanWrite/);
    await expectRejectedUnchanged(t, n, org.adminKey, 'guarded', () => putFlag(n, reader, 'guarded', { isArchived: true }), 403, 'FORBIDDEN');
    await expectRejectedUnchanged(t, n, org.adminKey, 'guarded', () => postConfig(n, reader, 'guarded', { enabled: false }), 403, 'FORBIDDEN');
    await expectRejectedUnchanged(t, n, org.adminKey, 'guarded', () => deleteFlag(n, reader, 'guarded'), 403, 'FORBIDDEN');
    // CanRead cannot evaluate either.
    expectProblem(t, await evalFlag(n, reader, 'guarded', { userId: 'u', stage: 'production' }), 403, 'FORBIDDEN');

    // CanWrite includes read.
    const list = await n.req('GET', '/api/flags', { key: writer });
    t.equal(list.status, 200);
    t.same(list.body.map((f: { name: string }) => f.name), ['guarded']);
    t.equal((await getFlag(n, writer, 'guarded')).status, 200);
    t.equal((await postFlag(n, writer, 'by-writer')).status, 201);
    t.equal((await putFlag(n, writer, 'by-writer', { description: 'w' })).status, 200);
    t.equal((await postConfig(n, writer, 'by-writer')).status, 200);
    t.equal((await deleteFlag(n, writer, 'by-writer')).status, 204);

    // CanEvaluate alone: evaluates, cannot read or write.
    t.equal((await evalFlag(n, evaluator, 'guarded', { userId: 'u', stage: 'production' })).status, 200);
    expectProblem(t, await n.req('GET', '/api/flags', { key: evaluator }), 403, 'FORBIDDEN', /CanRead/);
    expectProblem(t, await getFlag(n, evaluator, 'guarded'), 403, 'FORBIDDEN');
    await expectRejectedUnchanged(t, n, org.adminKey, 'guarded', () => putFlag(n, evaluator, 'guarded', { description: 'x' }), 403, 'FORBIDDEN');
    await expectRejectedUnchanged(t, n, org.adminKey, 'by-eval', () => postFlag(n, evaluator, 'by-eval'), 403, 'FORBIDDEN');
    await expectRejectedUnchanged(t, n, org.adminKey, 'guarded', () => deleteFlag(n, evaluator, 'guarded'), 403, 'FORBIDDEN');

    // Admin alone manages keys only.
    expectProblem(t, await n.req('GET', '/api/flags', { key: admin }), 403, 'FORBIDDEN');
    await expectRejectedUnchanged(t, n, org.adminKey, 'by-admin', () => postFlag(n, admin, 'by-admin'), 403, 'FORBIDDEN');

    // A permission failure comes before input validation: no 400 for a key that may not write at all.
    expectProblem(t, await n.req('POST', '/api/flags', { key: reader, body: { bogus: true } }), 403, 'FORBIDDEN');
  });

  t.test('CanWrite application scope: a key of application web cannot touch billing flags', async (t) => {
    const org = await createOrg(n);
    must(t, await postFlag(n, org.adminKey, 'bill', { project: 'billing' }), 201, 'create');
    must(t, await postConfig(n, org.adminKey, 'bill'), 200, 'config');
    must(t, await postFlag(n, org.adminKey, 'webby'), 201, 'create');
    const webWriter = await makeKey(n, org.adminKey, { permissions: ['CanWrite'], application: 'web' });

    await expectRejectedUnchanged(t, n, org.adminKey, 'new-bill', () => postFlag(n, webWriter, 'new-bill', { project: 'billing' }), 403, 'FORBIDDEN', /web/);
    expectProblem(t, await getFlag(n, org.adminKey, 'new-bill'), 404, 'NOT_FOUND');
    await expectRejectedUnchanged(t, n, org.adminKey, 'bill', () => putFlag(n, webWriter, 'bill', { isArchived: true }), 403, 'FORBIDDEN');
    await expectRejectedUnchanged(t, n, org.adminKey, 'bill', () => postConfig(n, webWriter, 'bill', { enabled: false }), 403, 'FORBIDDEN');
    await expectRejectedUnchanged(t, n, org.adminKey, 'bill', () => deleteFlag(n, webWriter, 'bill'), 403, 'FORBIDDEN');
    expectProblem(t, await getFlag(n, webWriter, 'bill'), 403, 'FORBIDDEN');
    // A name taken in billing is still a 403 for the web key, not a hint through 409.
    await expectRejectedUnchanged(t, n, org.adminKey, 'bill', () => postFlag(n, webWriter, 'bill', { project: 'billing' }), 403, 'FORBIDDEN');

    // Inside its application it writes normally (any spelling of the application).
    const c = await postFlag(n, webWriter, 'new-web', { project: 'Web' });
    t.equal(c.status, 201);
    t.equal(c.body.project, 'web');
    t.equal((await putFlag(n, webWriter, 'webby', { description: 'mine' })).status, 200);
    t.equal((await postConfig(n, webWriter, 'webby')).status, 200);
    t.equal((await deleteFlag(n, webWriter, 'new-web')).status, 204);
  });

  t.test('an organization-wide writer sees and changes every application', async (t) => {
    const org = await createOrg(n);
    const writer = await makeKey(n, org.adminKey, { permissions: ['CanWrite'] });
    t.equal((await postFlag(n, writer, 'w', { project: 'web' })).status, 201);
    t.equal((await postFlag(n, writer, 'b', { project: 'billing' })).status, 201);
    const before = await orgState(n, org.adminKey);
    t.equal((before as { list: unknown[] }).list.length, 2);
  });
});
