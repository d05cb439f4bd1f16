/**
 * Change requests over REST on one node on the embedded database (docs/change-requests.md):
 * changes validated as their direct writes, the hash over changes and bases, revisions, atomic
 * apply (one version, one feed `change` event, each change audited with the request's id),
 * conflicts naming the moved targets, rebase, close, revert, paging, and bad input changing nothing.
 */
import t from 'tap';
import { createHash } from 'node:crypto';
import { createOrg, evalKey, expectProblem, getFlag, makeKey, must, postConfig, postFlag, startNode } from '../../helpers/flags.js';
import { openSse } from '../../helpers/sse.js';
import { act, apply, auditLog, CR, getCr, orgVersion, propose, toggle, upsert } from '../../helpers/change-requests.js';
import { canonicalJson, targetKey } from '../../../src/features/change-requests/changes.js';

t.setTimeout(240_000);

t.test('change requests', async (t) => {
  const n = await startNode(t);
  const org = await createOrg(n);
  const admin = org.adminKey;
  const ev = await evalKey(n, admin, 'web');
  must(t, await postFlag(n, admin, 'f'), 201, 'flag f');
  must(t, await postFlag(n, admin, 'g'), 201, 'flag g');
  must(t, await postConfig(n, admin, 'f'), 200, 'f production');
  must(t, await postConfig(n, admin, 'g'), 200, 'g production');

  /** Everything a refused request must leave as it was: the flags, the requests, the audit log, the version. */
  const world = async () => ({
    f: (await getFlag(n, admin, 'f')).body,
    g: (await getFlag(n, admin, 'g')).body,
    requests: (await n.req('GET', CR, { key: admin })).body,
    audit: await auditLog(n, admin),
    version: await orgVersion(n, ev),
  });

  t.test('create: 201 with the contract fields, base and after per target, the hash over changes and bases', async (t) => {
    const before = await orgVersion(n, ev);
    const r = must(t, await propose(n, admin, [toggle('f', false), upsert('g', { defaultVariantKey: 'on' }), { op: 'updateFlag', flag: 'f', input: { description: 'new' } }], 'Turn f off'), 201, 'create');
    const cr = r.body;
    for (const k of ['id', 'title', 'description', 'state', 'revision', 'hash', 'author', 'changes', 'diff', 'environments', 'approvals', 'rejections', 'createdAt', 'updatedAt', 'appliedAt']) t.ok(k in cr, `has ${k}`);
    t.match(cr, { title: 'Turn f off', description: null, state: 'open', approved: true, revision: 1, approvals: [], rejections: [], appliedAt: null, environments: ['development', 'production'] });
    t.same(cr.author.keyName, 'admin');
    t.equal(cr.diff.length, 3, 'one diff entry per target');
    t.same(cr.diff[0].target, { type: 'config', flag: 'f', stage: 'production', clientId: null });
    t.equal(cr.diff[0].before.enabled, true);
    t.equal(cr.diff[0].after.enabled, false);
    t.equal(cr.diff[1].before.defaultVariantKey, 'off');
    t.equal(cr.diff[1].after.defaultVariantKey, 'on');
    t.equal(cr.diff[2].before.description, null);
    t.equal(cr.diff[2].after.description, 'new');
    const bases = Object.fromEntries(cr.diff.map((d: any) => [targetKey(d.target), d.before]));
    t.equal(cr.hash, createHash('sha256').update(canonicalJson({ changes: cr.changes, bases })).digest('hex'), 'SHA-256 of the canonical JSON of changes and bases');
    t.equal((await getFlag(n, admin, 'f')).body.configs[0].enabled, true, 'nothing applied yet');
    t.equal(await orgVersion(n, ev), before, 'no new organization version');
    const events = (await auditLog(n, admin)).filter((e) => e.changeRequestId === cr.id);
    t.same(events.map((e) => e.action), ['change.create'], 'audited once');
    t.match(events[0], { target: { type: 'changeRequest', name: cr.id }, after: { id: cr.id, hash: cr.hash, revision: 1 } });
    must(t, await act(n, admin, cr.id, 'close'), 200, 'close it');
  });

  t.test('each change is validated as its direct write: the same 400 / 404 / 409, and nothing changes', async (t) => {
    const cases: [unknown[], number, string, RegExp][] = [
      [[upsert('f', { defaultVariantKey: 'nope' })], 400, 'BAD_REQUEST', /changes\[0\]: .*nope/],
      [[upsert('f', { rolloutPercentage: 101 })], 400, 'BAD_REQUEST', /changes\[0\]: .*rolloutPercentage/],
      [[toggle('f', true), upsert('missing', {})], 404, 'NOT_FOUND', /changes\[1\]: .*missing/],
      [[{ op: 'deleteConfig', flag: 'f', stage: 'development' }], 404, 'NOT_FOUND', /no configuration/],
      [[toggle('f', true, 'staging')], 409, 'CONFLICT', /staging/],
      [[{ op: 'updateFlag', flag: 'f', input: { type: 'colour' } }], 400, 'BAD_REQUEST', /type/],
      [[{ op: 'updateFlag', flag: 'f', input: { variants: [{ key: 'x', value: 'a', valueType: 'string' }], type: 'string' } }], 409, 'CONFLICT', /still used/],
      [[{ op: 'setKillSwitch', input: [{ flag: 'f', application: 'web', environment: 'moon' }] }], 400, 'BAD_REQUEST', /moon/],
      [[{ op: 'upsertSegment', segment: 's', input: { conditions: [{ field: 'x', operator: 'bogus', value: 1 }] } }], 400, 'BAD_REQUEST', /operator|bogus/],
      [[], 400, 'BAD_REQUEST', /changes/],
      [[{ op: 'teleport', flag: 'f' }], 400, 'BAD_REQUEST', /op/],
    ];
    const before = await world();
    for (const [changes, status, code, re] of cases) expectProblem(t, await propose(n, admin, changes), status, code, re);
    expectProblem(t, await n.req('POST', CR, { key: admin, body: { title: 'x', changes: Array.from({ length: 101 }, () => toggle('f', true)) } }), 400, 'BAD_REQUEST', /100/);
    expectProblem(t, await n.req('POST', CR, { key: admin, body: { changes: [toggle('f', true)] } }), 400, 'BAD_REQUEST', /title/);
    t.same(await world(), before, 'no request, no write, no audit event, no version');
    // The direct writes answer the same.
    expectProblem(t, await postConfig(n, admin, 'f', { defaultVariantKey: 'nope' }), 400, 'BAD_REQUEST');
  });

  t.test('limits: a title over 200 characters, a description or review comment over 4,096, is 400 and changes nothing', async (t) => {
    const reviewer = await makeKey(n, admin, { name: 'reviewer', permissions: ['CanApprove'] });
    const body = (extra: Record<string, unknown>) => ({ title: 'T', changes: [toggle('f', false)], ...extra });
    const before = await world();
    expectProblem(t, await n.req('POST', CR, { key: admin, body: body({ title: 'x'.repeat(201) }) }), 400, 'BAD_REQUEST', /title/);
    expectProblem(t, await n.req('POST', CR, { key: admin, body: body({ description: 'x'.repeat(4097) }) }), 400, 'BAD_REQUEST', /description/);
    t.same(await world(), before, 'no request, no audit event, no version');
    // At the bounds: accepted.
    const cr = must(t, await n.req('POST', CR, { key: admin, body: body({ title: 'x'.repeat(200), description: 'x'.repeat(4096) }) }), 201, 'title of 200, description of 4,096').body;
    const stored = async () => {
      const r = (await getCr(n, admin, cr.id)).body;
      return { title: r.title, description: r.description, revision: r.revision, hash: r.hash, reviews: r.history.reviews, audit: (await auditLog(n, admin)).filter((e) => e.changeRequestId === cr.id) };
    };
    const was = await stored();
    expectProblem(t, await n.req('PUT', `${CR}/${cr.id}`, { key: admin, body: { changes: [toggle('f', false)], title: 'y'.repeat(201) } }), 400, 'BAD_REQUEST', /title/);
    expectProblem(t, await n.req('PUT', `${CR}/${cr.id}`, { key: admin, body: { changes: [toggle('f', false)], description: 'y'.repeat(4097) } }), 400, 'BAD_REQUEST', /description/);
    expectProblem(t, await act(n, reviewer, cr.id, 'reviews', { decision: 'approve', hash: cr.hash, comment: 'y'.repeat(4097) }), 400, 'BAD_REQUEST', /comment/);
    t.same(await stored(), was, 'no revision, no review, no audit event');
    must(t, await act(n, reviewer, cr.id, 'reviews', { decision: 'approve', hash: cr.hash, comment: 'y'.repeat(4096) }), 200, 'a comment of 4,096');
    must(t, await act(n, admin, cr.id, 'close'), 200, 'close');
  });

  t.test('the author needs CanWrite and the scopes its changes need (403), checked as the direct writes', async (t) => {
    const reader = await makeKey(n, admin, { permissions: ['CanRead'] });
    const billing = await makeKey(n, admin, { permissions: ['CanWrite'], application: 'billing' });
    const dev = await makeKey(n, admin, { permissions: ['CanWrite'], environment: 'development' });
    const before = await world();
    expectProblem(t, await propose(n, reader, [toggle('f', false)]), 403, 'FORBIDDEN', /CanWrite/);
    expectProblem(t, await propose(n, billing, [toggle('f', false)]), 403, 'FORBIDDEN', /billing/);
    expectProblem(t, await propose(n, dev, [toggle('f', false)]), 403, 'FORBIDDEN', /development/);
    expectProblem(t, await propose(n, dev, [{ op: 'updateFlag', flag: 'f', input: { description: 'x' } }]), 403, 'FORBIDDEN', /environment/);
    expectProblem(t, await propose(n, billing, [{ op: 'setKillSwitch', input: [] }]), 403, 'FORBIDDEN');
    t.same(await world(), before, 'nothing changed');
  });

  t.test('apply: one transaction, one organization version, one feed change event, each change audited with the request id', async (t) => {
    const feed = await openSse(`${n.url}/sdk/v1/stream?stage=production`, { 'x-api-key': ev });
    t.teardown(() => feed.close());
    t.equal((await feed.nextEvent(2000))?.name, 'snapshot');
    const cr = must(t, await propose(n, admin, [toggle('f', false), upsert('g', { defaultVariantKey: 'on' }), { op: 'updateFlag', flag: 'g', input: { description: 'two flags' } }]), 201, 'create').body;
    const v0 = await orgVersion(n, ev);
    const r = must(t, await apply(n, admin, cr), 200, 'apply');
    t.match(r.body, { id: cr.id, state: 'applied', hash: cr.hash });
    t.type(r.body.appliedAt, 'string');
    t.equal(await orgVersion(n, ev), v0 + 1, 'exactly one new version');
    const change = await feed.nextEvent(2000);
    t.equal(change?.name, 'change', 'a change event');
    const body = JSON.parse(change!.data);
    t.equal(body.version, v0 + 1);
    t.equal(await feed.nextEvent(700), null, 'and no second one');
    t.equal((await getFlag(n, admin, 'f')).body.configs[0].enabled, false);
    t.equal((await getFlag(n, admin, 'g')).body.configs[0].defaultVariantKey, 'on');
    const events = (await auditLog(n, admin)).filter((e) => e.changeRequestId === cr.id);
    t.same(events.map((e) => e.action), ['change.apply', 'flag.update', 'config.upsert', 'config.disable', 'change.create'], 'each change once, as its direct write, then change.apply');
    t.match(events[3], { target: { type: 'flag', name: 'f', stage: 'production' }, before: { enabled: true }, after: { enabled: false } });
    t.match(events[0].after, { hash: cr.hash, state: 'applied' });
    // Applied is final.
    expectProblem(t, await apply(n, admin, cr), 409, 'CONFLICT', /applied/);
    expectProblem(t, await act(n, admin, cr.id, 'close'), 409, 'CONFLICT', /applied/);
    expectProblem(t, await n.req('PUT', `${CR}/${cr.id}`, { key: admin, body: { changes: [toggle('f', true)] } }), 409, 'CONFLICT', /applied/);
  });

  t.test('a change refused at apply time rolls back every change of the request', async (t) => {
    must(t, await n.req('POST', '/api/segments', { key: admin, body: { name: 'vip', application: 'web', conditions: [] } }), 201, 'segment');
    must(t, await postFlag(n, admin, 'h'), 201, 'flag h');
    const rule = { priority: 1, conditions: [], segments: ['vip'], allocations: [{ variantKey: 'on', percentage: 100 }] };
    const cr = must(t, await propose(n, admin, [toggle('f', true), upsert('h', { rules: [rule] })]), 201, 'create').body;
    must(t, await n.req('DELETE', '/api/segments/vip', { key: admin }), 204, 'the segment goes (no rule uses it yet)');
    const before = await world();
    expectProblem(t, await apply(n, admin, cr), 400, 'BAD_REQUEST', /changes\[1\]: .*vip/);
    t.same(await world(), before, 'f untouched, no version, no event');
    t.equal((await getCr(n, admin, cr.id)).body.state, 'open', 'still open');
    must(t, await act(n, admin, cr.id, 'close'), 200, 'close');
  });

  t.test('conflict: a target moved since its base refuses the whole request and names it; rebase makes a new revision', async (t) => {
    const cr = must(t, await propose(n, admin, [toggle('f', true), upsert('g', { rolloutPercentage: 50 })]), 201, 'create').body;
    must(t, await postConfig(n, admin, 'g', { defaultVariantKey: 'off', rolloutPercentage: 10 }), 200, 'g moves');
    const before = await world();
    const r = await apply(n, admin, cr);
    expectProblem(t, r, 409, 'CONFLICT', /configuration of flag 'g' in 'production'/);
    t.notMatch(r.body.detail, /flag 'f'/, 'f did not move: not named');
    t.same(await world(), before, 'nothing changed');
    const rebased = must(t, await act(n, admin, cr.id, 'rebase'), 200, 'rebase').body;
    t.equal(rebased.revision, 2);
    t.not(rebased.hash, cr.hash, 'a new hash');
    t.equal(rebased.diff[1].before.rolloutPercentage, 10, 'the base is today’s state');
    expectProblem(t, await apply(n, admin, cr), 409, 'CONFLICT', /not the current revision/);
    must(t, await apply(n, admin, rebased), 200, 'the rebased revision applies');
    t.equal((await getFlag(n, admin, 'g')).body.configs[0].rolloutPercentage, 50);
    const full = (await getCr(n, admin, cr.id)).body;
    t.same(full.history.revisions.map((v: any) => [v.revision, v.hash]), [[1, cr.hash], [2, rebased.hash]], 'history of revisions');
  });

  t.test('PUT: a new revision with a new hash, title kept unless given; 404 for an unknown request', async (t) => {
    const cr = must(t, await propose(n, admin, [toggle('f', false)], 'first'), 201, 'create').body;
    const v2 = must(t, await n.req('PUT', `${CR}/${cr.id}`, { key: admin, body: { changes: [toggle('g', false)] } }), 200, 'revise').body;
    t.match(v2, { revision: 2, title: 'first', state: 'open' });
    t.not(v2.hash, cr.hash);
    t.same(v2.changes, [{ op: 'setConfigEnabled', flag: 'g', stage: 'production', clientId: null, enabled: false }]);
    const events = (await auditLog(n, admin)).filter((e) => e.changeRequestId === cr.id);
    t.same(events.map((e) => e.action), ['change.revise', 'change.create']);
    t.equal(events[0].after.hash, v2.hash);
    expectProblem(t, await n.req('PUT', `${CR}/${cr.id}`, { key: admin, body: { changes: [] } }), 400, 'BAD_REQUEST');
    expectProblem(t, await getCr(n, admin, 'cr_0000000000aaaaaaaaaa'), 404, 'NOT_FOUND');
    expectProblem(t, await act(n, admin, 'cr_0000000000aaaaaaaaaa', 'apply', { hash: cr.hash }), 404, 'NOT_FOUND');
    expectProblem(t, await act(n, admin, cr.id, 'apply', { hash: 'nothex' }), 400, 'BAD_REQUEST', /hash/);
    must(t, await act(n, admin, cr.id, 'close'), 200, 'close');
  });

  t.test('close: the author or an Admin key; closed is final', async (t) => {
    const writer = await makeKey(n, admin, { permissions: ['CanWrite'] });
    const other = await makeKey(n, admin, { permissions: ['CanWrite'] });
    const cr = must(t, await propose(n, writer, [toggle('f', false)]), 201, 'create').body;
    expectProblem(t, await act(n, other, cr.id, 'close'), 403, 'FORBIDDEN', /author/);
    const closed = must(t, await act(n, writer, cr.id, 'close'), 200, 'the author closes').body;
    t.equal(closed.state, 'closed');
    expectProblem(t, await apply(n, admin, cr), 409, 'CONFLICT', /closed/);
    expectProblem(t, await act(n, writer, cr.id, 'rebase'), 409, 'CONFLICT', /closed/);
    const cr2 = must(t, await propose(n, writer, [toggle('f', false)]), 201, 'create').body;
    t.equal(must(t, await act(n, admin, cr2.id, 'close'), 200, 'an Admin closes').body.state, 'closed');
    t.same((await auditLog(n, admin)).filter((e) => e.changeRequestId === cr.id).map((e) => e.action), ['change.close', 'change.create']);
  });

  t.test('revert: applied requests only, a new open request restoring each target to its state just before the apply', async (t) => {
    must(t, await n.req('POST', '/api/segments', { key: admin, body: { name: 'beta', application: 'web', conditions: [] } }), 201, 'segment');
    const before = { f: (await getFlag(n, admin, 'f')).body, g: (await getFlag(n, admin, 'g')).body };
    const segBefore = (await n.req('GET', '/api/segments/beta', { key: admin })).body;
    const cr = must(t, await propose(n, admin, [
      toggle('f', false),
      upsert('g', { stage: 'development', defaultVariantKey: 'on' }),
      { op: 'updateFlag', flag: 'g', input: { tags: ['x'] } },
      { op: 'upsertSegment', segment: 'beta', input: { conditions: [{ field: 'plan', operator: '==', value: 'pro' }] } },
      { op: 'upsertSegment', segment: 'fresh', input: { application: 'web', conditions: [] } },
      { op: 'setKillSwitch', input: [{ flag: 'g', application: 'web', environment: 'development' }] },
    ]), 201, 'create').body;
    expectProblem(t, await act(n, admin, cr.id, 'revert'), 409, 'CONFLICT', /only an applied/);
    must(t, await apply(n, admin, cr), 200, 'apply');
    t.equal((await n.req('GET', '/api/segments/fresh', { key: admin })).status, 200, 'segment created');
    const rv = must(t, await act(n, admin, cr.id, 'revert'), 201, 'revert').body;
    t.match(rv, { state: 'open', revision: 1, reverts: cr.id });
    t.same(rv.changes.map((c: any) => c.op), ['upsertConfig', 'deleteConfig', 'updateFlag', 'upsertSegment', 'deleteSegment', 'setKillSwitch']);
    must(t, await apply(n, admin, rv), 200, 'apply the revert');
    const strip = (f: any) => ({ ...f, updatedAt: undefined, configs: f.configs.map((c: any) => c) });
    t.same(strip((await getFlag(n, admin, 'f')).body), strip(before.f), 'f as before');
    t.same(strip((await getFlag(n, admin, 'g')).body), strip(before.g), 'g as before (its development configuration gone)');
    t.same({ ...(await n.req('GET', '/api/segments/beta', { key: admin })).body, updatedAt: undefined }, { ...segBefore, updatedAt: undefined }, 'segment as before');
    t.equal((await n.req('GET', '/api/segments/fresh', { key: admin })).status, 404, 'the created segment gone');
  });

  t.test('list: paged by id as section 13 (limit, after, Link, X-Total-Count), filtered by state; bad values 400', async (t) => {
    const o = await createOrg(n);
    must(t, await postFlag(n, o.adminKey, 'f'), 201, 'flag');
    must(t, await postConfig(n, o.adminKey, 'f'), 200, 'config');
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(must(t, await propose(n, o.adminKey, [toggle('f', i % 2 === 0)], `r${i}`), 201, 'create').body.id);
    must(t, await act(n, o.adminKey, ids[1], 'close'), 200, 'close one');
    const all = must(t, await n.req('GET', CR, { key: o.adminKey }), 200, 'all');
    t.same(all.body.map((r: any) => r.id), ids, 'oldest first, by id');
    t.equal(all.headers.get('x-total-count'), '5');
    t.equal(all.headers.get('link'), null, 'no limit: no next link');
    const seen: string[] = [];
    let path: string | null = `${CR}?limit=2`;
    while (path !== null) {
      const r = must(t, await n.req('GET', path, { key: o.adminKey }), 200, path);
      t.equal(r.headers.get('x-total-count'), '5');
      seen.push(...r.body.map((x: any) => x.id));
      const link = r.headers.get('link');
      path = link === null ? null : new URL(/<([^>]+)>/.exec(link)![1]).pathname + new URL(/<([^>]+)>/.exec(link)![1]).search;
    }
    t.same(seen, ids, 'walking the Link pages gives every request once');
    const closed = must(t, await n.req('GET', `${CR}?state=closed`, { key: o.adminKey }), 200, 'closed');
    t.same(closed.body.map((r: any) => r.id), [ids[1]]);
    t.equal(closed.headers.get('x-total-count'), '1');
    for (const q of ['state=done', 'limit=0', 'limit=1001', 'limit=x', 'after=nope', 'sort=id', 'limit=1&limit=2']) expectProblem(t, await n.req('GET', `${CR}?${q}`, { key: o.adminKey }), 400, 'BAD_REQUEST', q);
    // Another organization's requests are invisible.
    t.same((await n.req('GET', CR, { key: admin })).body.filter((r: any) => ids.includes(r.id)), []);
    expectProblem(t, await getCr(n, admin, ids[0]), 404, 'NOT_FOUND');
  });

  t.test('limits: 500 open requests per organization (409 QUOTA_EXCEEDED), closed and applied ones do not count', async (t) => {
    const o = await createOrg(n);
    must(t, await postFlag(n, o.adminKey, 'f'), 201, 'flag');
    must(t, await postConfig(n, o.adminKey, 'f'), 200, 'config');
    const first = must(t, await propose(n, o.adminKey, [toggle('f', false)]), 201, 'one through the API').body;
    // 499 more, written straight into the database (a copy of the first): 500 open in all.
    const [{ id: orgId }] = await n.node.db.query<{ id: string }>('select id from organizations where name = $1', [o.name]);
    await n.node.db.query(
      `insert into change_requests (id, org_id, title, state, revision, hash, author_key_id, author)
       select 'cr_' || lpad(to_hex(i), 10, '0') || 'ffffffffff', $1, 'bulk', 'open', 1, $2, 'k', '{"keyId":"k","keyName":"k"}'::json from generate_series(1, 499) i`,
      [orgId, first.hash],
    );
    const before = await auditLog(n, o.adminKey);
    expectProblem(t, await propose(n, o.adminKey, [toggle('f', false)]), 409, 'QUOTA_EXCEEDED', /500 open change requests/);
    t.same(await auditLog(n, o.adminKey), before, 'nothing written');
    must(t, await act(n, o.adminKey, first.id, 'close'), 200, 'close one');
    must(t, await propose(n, o.adminKey, [toggle('f', false)]), 201, 'room for one again');
    expectProblem(t, await propose(n, o.adminKey, [toggle('f', false)]), 409, 'QUOTA_EXCEEDED');
  });
});
