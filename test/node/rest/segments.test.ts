/**
 * Segments over REST (docs/api.md#segments): CRUD and its answers, bad input (400, nothing
 * changes), 409 on a duplicate name and on deleting a segment in use (naming the flags), the scope
 * rules, rules naming segments (400 for an unknown or invisible one; evaluation), audit events,
 * the count limit and the 20,000-value lists (docs/limits.md). One node per database kind; each
 * subtest works in its own organization.
 */
import t from 'tap';
import { createOrg, evalFlag, evalKey, expectProblem, isoDate, makeKey, postConfig, postFlag, startNode, type TapTest } from '../../helpers/flags.js';
import { postgresUrl, type Res, type TestNode } from '../../helpers/node.js';

const SEGMENT_FIELDS = ['application', 'conditions', 'createdAt', 'description', 'name', 'updatedAt'];

const postSegment = (n: TestNode, key: string, body: unknown) => n.req('POST', '/api/segments', { key, body });
const putSegment = (n: TestNode, key: string, name: string, body: unknown) => n.req('PUT', `/api/segments/${encodeURIComponent(name)}`, { key, body });
const getSegment = (n: TestNode, key: string, name: string) => n.req('GET', `/api/segments/${encodeURIComponent(name)}`, { key });
const deleteSegment = (n: TestNode, key: string, name: string) => n.req('DELETE', `/api/segments/${encodeURIComponent(name)}`, { key });
const listSegments = (n: TestNode, key: string) => n.req('GET', '/api/segments', { key });

const beta = { field: 'plan', operator: '==', value: 'beta' };
const ruleWith = (segments: string[], conditions: unknown[] = []) => ({
  rules: [{ id: 'r1', priority: 1, conditions, segments, allocations: [{ variantKey: 'on', percentage: 100 }] }],
});

/** The organization's segments (as its admin key sees them) and its audit event count. */
async function segmentState(n: TestNode, adminKey: string): Promise<unknown> {
  const list = await listSegments(n, adminKey);
  const audit = await n.req('GET', '/api/audit?limit=500', { key: adminKey });
  return { segments: list.body, events: (audit.body as unknown[]).length };
}

/** A write that must fail with `status`/`code` and leave the segments and the audit log unchanged. */
async function refusedUnchanged(t: TapTest, n: TestNode, adminKey: string, write: () => Promise<Res>, status: number, code: string, detail?: RegExp) {
  const before = await segmentState(n, adminKey);
  expectProblem(t, await write(), status, code, detail);
  t.same(await segmentState(n, adminKey), before, 'segments and audit log unchanged');
}

// On the embedded database, and on PostgreSQL when DATABASE_URL is set (sql/005_segments.sql on both).
for (const db of postgresUrl() ? (['pglite', 'postgres'] as const) : (['pglite'] as const)) t.test(`segments over REST (${db})`, async (t) => {
  const n = await startNode(t, { db, env: { VEXIL_MAX_SEGMENTS_PER_ORG: '4' } });

  t.test('create, read, list, update and delete', async (t) => {
    const org = await createOrg(n);
    const c = await postSegment(n, org.adminKey, { name: 'beta-users', description: 'Beta plan', conditions: [beta] });
    t.equal(c.status, 201, c.text);
    t.same(Object.keys(c.body).sort(), SEGMENT_FIELDS, 'exactly the Segment fields');
    t.match(c.body, { name: 'beta-users', description: 'Beta plan', application: null, conditions: [beta] });
    t.match(c.body.createdAt, isoDate);
    t.same((await getSegment(n, org.adminKey, 'beta-users')).body, c.body, 'GET answers what create answered');
    const d = await postSegment(n, org.adminKey, { name: 'everyone', application: 'WEB' });
    t.equal(d.status, 201);
    t.match(d.body, { description: null, application: 'web', conditions: [] }, "defaults; the organization's spelling of the application");
    const list = await listSegments(n, org.adminKey);
    t.same(list.body.map((s: { name: string }) => s.name), ['beta-users', 'everyone'], 'a bare array sorted by name');

    const u = await putSegment(n, org.adminKey, 'beta-users', { conditions: [{ field: 'plan', operator: 'in', value: ['beta', 'pro'] }] });
    t.equal(u.status, 200, u.text);
    t.equal(u.body.description, 'Beta plan', 'absent fields are kept');
    t.same(u.body.conditions, [{ field: 'plan', operator: 'in', value: ['beta', 'pro'] }]);
    t.equal((await putSegment(n, org.adminKey, 'beta-users', { description: null })).body.description, null, 'description cleared');

    t.equal((await deleteSegment(n, org.adminKey, 'beta-users')).status, 204);
    expectProblem(t, await getSegment(n, org.adminKey, 'beta-users'), 404, 'NOT_FOUND');
    expectProblem(t, await deleteSegment(n, org.adminKey, 'beta-users'), 404, 'NOT_FOUND');
    expectProblem(t, await putSegment(n, org.adminKey, 'nope', { description: 'x' }), 404, 'NOT_FOUND');
  });

  t.test('a duplicate name is 409 CONFLICT, whatever the application', async (t) => {
    const org = await createOrg(n);
    t.equal((await postSegment(n, org.adminKey, { name: 's1', application: 'web' })).status, 201);
    await refusedUnchanged(t, n, org.adminKey, () => postSegment(n, org.adminKey, { name: 's1', application: 'billing' }), 409, 'CONFLICT', /already exists/);
    await refusedUnchanged(t, n, org.adminKey, () => postSegment(n, org.adminKey, { name: 's1' }), 409, 'CONFLICT', /already exists/);
  });

  t.test('bad input is 400 and changes nothing', async (t) => {
    const org = await createOrg(n);
    t.equal((await postSegment(n, org.adminKey, { name: 'ok', conditions: [beta] })).status, 201);
    const bad: [unknown, RegExp][] = [
      [{ name: 'bad name!' }, /name/],
      [{ name: 'x', colour: 'red' }, /unknown field 'colour'/],
      [{ name: 'x', conditions: [{ field: 'plan', operator: '~=', value: 1 }] }, /conditions\[0\]\.operator/],
      [{ name: 'x', conditions: [{ field: 'bad-path', operator: '==', value: 1 }] }, /conditions\[0\]\.field/],
      [{ name: 'x', conditions: [{ field: 'plan', operator: 'in', value: 'beta' }] }, /needs an array/],
      [{ name: 'x', application: 'nowhere' }, /Unknown application 'nowhere'/],
      [{ conditions: [] }, /name is required/],
    ];
    for (const [body, detail] of bad) await refusedUnchanged(t, n, org.adminKey, () => postSegment(n, org.adminKey, body), 400, 'BAD_REQUEST', detail);
    await refusedUnchanged(t, n, org.adminKey, () => putSegment(n, org.adminKey, 'ok', { name: 'renamed' }), 400, 'BAD_REQUEST', /unknown field 'name'/);
    await refusedUnchanged(t, n, org.adminKey, () => putSegment(n, org.adminKey, 'ok', { application: 'web' }), 400, 'BAD_REQUEST', /unknown field 'application'/);
    await refusedUnchanged(t, n, org.adminKey, () => n.req('POST', '/api/segments', { key: org.adminKey, raw: '[1]', headers: { 'content-type': 'application/json' } }), 400, 'BAD_REQUEST');
  });

  t.test('scope rules: what application- and environment-scoped keys see and write', async (t) => {
    const org = await createOrg(n);
    for (const [name, application] of [['all-users', null], ['web-users', 'web'], ['billing-users', 'billing']] as const) {
      t.equal((await postSegment(n, org.adminKey, { name, application, conditions: [beta] })).status, 201);
    }
    const webWriter = await makeKey(n, org.adminKey, { permissions: ['CanWrite'], application: 'web' });
    const webReader = await makeKey(n, org.adminKey, { permissions: ['CanRead'], application: 'web' });
    const envWriter = await makeKey(n, org.adminKey, { permissions: ['CanWrite'], environment: 'production' });

    // Reads: its application's and the organization-wide segments.
    for (const key of [webWriter, webReader]) {
      t.same((await listSegments(n, key)).body.map((s: { name: string }) => s.name), ['all-users', 'web-users'], 'sees web and org-wide segments');
      t.equal((await getSegment(n, key, 'all-users')).status, 200);
      expectProblem(t, await getSegment(n, key, 'billing-users'), 403, 'FORBIDDEN', /scoped to application 'web'/);
    }
    t.equal((await listSegments(n, envWriter)).body.length, 3, 'an environment-scoped key reads every segment');

    // Writes: only its application's.
    const created = await postSegment(n, webWriter, { name: 'web-new' });
    t.equal(created.status, 201);
    t.equal(created.body.application, 'web', "absent application: the key's own");
    t.equal((await putSegment(n, webWriter, 'web-users', { description: 'mine' })).status, 200);
    await refusedUnchanged(t, n, org.adminKey, () => postSegment(n, webWriter, { name: 'x', application: null }), 403, 'FORBIDDEN', /Organization-wide segments/);
    await refusedUnchanged(t, n, org.adminKey, () => postSegment(n, webWriter, { name: 'x', application: 'billing' }), 403, 'FORBIDDEN');
    await refusedUnchanged(t, n, org.adminKey, () => putSegment(n, webWriter, 'all-users', { description: 'x' }), 403, 'FORBIDDEN', /Organization-wide/);
    await refusedUnchanged(t, n, org.adminKey, () => putSegment(n, webWriter, 'billing-users', { description: 'x' }), 403, 'FORBIDDEN');
    await refusedUnchanged(t, n, org.adminKey, () => deleteSegment(n, webWriter, 'all-users'), 403, 'FORBIDDEN');
    await refusedUnchanged(t, n, org.adminKey, () => deleteSegment(n, webWriter, 'billing-users'), 403, 'FORBIDDEN');
    // Read-only and environment-scoped keys write nothing.
    await refusedUnchanged(t, n, org.adminKey, () => postSegment(n, webReader, { name: 'x' }), 403, 'FORBIDDEN', /CanWrite/);
    await refusedUnchanged(t, n, org.adminKey, () => postSegment(n, envWriter, { name: 'x' }), 403, 'FORBIDDEN', /not segments/);
    await refusedUnchanged(t, n, org.adminKey, () => putSegment(n, envWriter, 'all-users', { description: 'x' }), 403, 'FORBIDDEN', /not segments/);
    await refusedUnchanged(t, n, org.adminKey, () => deleteSegment(n, envWriter, 'web-users'), 403, 'FORBIDDEN', /not segments/);
    t.equal((await deleteSegment(n, webWriter, 'web-new')).status, 204, 'deletes its own');
  });

  t.test('a rule naming a segment: checked at write time, matched at evaluation', async (t) => {
    const org = await createOrg(n);
    t.equal((await postSegment(n, org.adminKey, { name: 'beta', conditions: [beta] })).status, 201);
    t.equal((await postSegment(n, org.adminKey, { name: 'billing-only', application: 'billing' })).status, 201);
    t.equal((await postSegment(n, org.adminKey, { name: 'nl', application: 'web', conditions: [{ field: 'country', operator: '==', value: 'NL' }] })).status, 201);
    t.equal((await postFlag(n, org.adminKey, 'f')).status, 201);

    // Unknown, invisible and other-application segments: 400, nothing written.
    const webWriter = await makeKey(n, org.adminKey, { permissions: ['CanWrite'], application: 'web' });
    const before = await n.req('GET', '/api/flags/f', { key: org.adminKey });
    expectProblem(t, await postConfig(n, org.adminKey, 'f', ruleWith(['nope'])), 400, 'BAD_REQUEST', /rules\[0\]\.segments\[0\]: unknown segment 'nope'/);
    expectProblem(t, await postConfig(n, webWriter, 'f', ruleWith(['billing-only'])), 400, 'BAD_REQUEST', /unknown segment 'billing-only'/);
    expectProblem(t, await postConfig(n, org.adminKey, 'f', ruleWith(['billing-only'])), 400, 'BAD_REQUEST', /belongs to application 'billing'/);
    expectProblem(t, await postConfig(n, org.adminKey, 'f', ruleWith(['Bad Name'])), 400, 'BAD_REQUEST', /segments\[0\]/);
    t.same((await n.req('GET', '/api/flags/f', { key: org.adminKey })).body, before.body, 'flag and configurations unchanged');

    // Conditions and segments together: every condition and every segment must match.
    const ok = await postConfig(n, webWriter, 'f', ruleWith(['beta', 'nl', 'beta'], [{ field: 'device', operator: '==', value: 'ios' }]));
    t.equal(ok.status, 200, ok.text);
    t.same(ok.body.rules[0].segments, ['beta', 'nl'], 'segments stored, duplicates dropped');
    const ek = await evalKey(n, org.adminKey, 'web');
    const ev = (context: Record<string, unknown>) => evalFlag(n, ek, 'f', { userId: 'u1', stage: 'production', context }, true);
    t.match((await ev({ plan: 'beta', country: 'NL', device: 'ios' })).body, { key: 'on', reason: { code: 'rule_matched', ruleId: 'r1' } }, 'in both segments, condition holds');
    t.match((await ev({ plan: 'free', country: 'NL', device: 'ios' })).body, { key: 'off', reason: { code: 'default' } }, 'not in beta');
    t.match((await ev({ plan: 'beta', country: 'DE', device: 'ios' })).body, { key: 'off', reason: { code: 'default' } }, 'not in nl');
    t.match((await ev({ plan: 'beta', country: 'NL', device: 'web' })).body, { key: 'off', reason: { code: 'default' } }, 'condition fails');

    // A segment change reaches evaluation at once (read-your-writes on this node).
    t.equal((await putSegment(n, org.adminKey, 'beta', { conditions: [{ field: 'plan', operator: 'in', value: ['beta', 'free'] }] })).status, 200);
    t.match((await ev({ plan: 'free', country: 'NL', device: 'ios' })).body, { key: 'on' }, 'the updated segment now holds');
    // A segment without conditions holds everyone.
    t.equal((await putSegment(n, org.adminKey, 'nl', { conditions: [] })).status, 200);
    t.match((await ev({ plan: 'free', country: 'DE', device: 'ios' })).body, { key: 'on' }, 'no conditions: everyone');
  });

  t.test('deleting a segment in use is 409 CONFLICT naming the flags', async (t) => {
    const org = await createOrg(n);
    t.equal((await postSegment(n, org.adminKey, { name: 'used', conditions: [beta] })).status, 201);
    for (const f of ['alpha', 'beta-flag', 'gamma']) t.equal((await postFlag(n, org.adminKey, f)).status, 201);
    t.equal((await postConfig(n, org.adminKey, 'alpha', ruleWith(['used']))).status, 200);
    t.equal((await postConfig(n, org.adminKey, 'gamma', { stage: 'development', ...ruleWith(['used']) })).status, 200);
    await refusedUnchanged(t, n, org.adminKey, () => deleteSegment(n, org.adminKey, 'used'), 409, 'CONFLICT', /used by the rules of flags 'alpha', 'gamma'/);
    // Once no rule names it, it goes.
    t.equal((await postConfig(n, org.adminKey, 'alpha', { rules: [] })).status, 200);
    t.equal((await n.req('DELETE', '/api/flags/gamma', { key: org.adminKey })).status, 204);
    t.equal((await deleteSegment(n, org.adminKey, 'used')).status, 204);
  });

  t.test('audit events: segment.create, segment.update, segment.delete', async (t) => {
    const org = await createOrg(n);
    const c = await postSegment(n, org.adminKey, { name: 'aud', application: 'web', conditions: [beta] });
    const u = await putSegment(n, org.adminKey, 'aud', { description: 'now described' });
    t.equal((await deleteSegment(n, org.adminKey, 'aud')).status, 204);
    const events = (await n.req('GET', '/api/audit?type=segment', { key: org.adminKey })).body;
    t.same(events.map((e: { action: string }) => e.action), ['segment.delete', 'segment.update', 'segment.create'], 'newest first');
    t.match(events[2], { target: { type: 'segment', name: 'aud' }, application: 'web', before: null, after: c.body });
    t.match(events[1], { before: c.body, after: u.body });
    t.match(events[0], { before: u.body, after: null });
    t.notOk('stage' in events[0].target, 'no stage on a segment target');
    // An application-scoped key sees its application's segment events; org-wide ones are left out.
    t.equal((await postSegment(n, org.adminKey, { name: 'org-wide' })).status, 201);
    const webReader = await makeKey(n, org.adminKey, { permissions: ['CanRead'], application: 'web' });
    const seen = (await n.req('GET', '/api/audit?type=segment', { key: webReader })).body;
    t.same(seen.map((e: { target: { name: string } }) => e.target.name), ['aud', 'aud', 'aud'], 'only the web segment events');
    // A refused write records nothing (checked by refusedUnchanged throughout); a failed delete too.
    await refusedUnchanged(t, n, org.adminKey, () => deleteSegment(n, org.adminKey, 'aud'), 404, 'NOT_FOUND');
  });

  t.test('count limit: VEXIL_MAX_SEGMENTS_PER_ORG=4 is 409 QUOTA_EXCEEDED past it', async (t) => {
    const org = await createOrg(n);
    for (const name of ['q1', 'q2', 'q3', 'q4']) t.equal((await postSegment(n, org.adminKey, { name })).status, 201, `${name}: within the limit`);
    await refusedUnchanged(t, n, org.adminKey, () => postSegment(n, org.adminKey, { name: 'q5' }), 409, 'QUOTA_EXCEEDED', /VEXIL_MAX_SEGMENTS_PER_ORG=4/);
    t.equal((await deleteSegment(n, org.adminKey, 'q1')).status, 204);
    t.equal((await postSegment(n, org.adminKey, { name: 'q5' })).status, 201, 'room again after a delete');
  });

  t.test('size limits: 20,000 values in a list, conditions per segment', async (t) => {
    const org = await createOrg(n);
    const ids = Array.from({ length: 20_000 }, (_, i) => `user-${i}-${'x'.repeat(20)}`);
    const big = await postSegment(n, org.adminKey, { name: 'big', conditions: [{ field: 'userId', operator: 'in', value: ids }] });
    t.equal(big.status, 201, '20,000 values are allowed');
    t.equal(big.body.conditions[0].value.length, 20_000);
    t.equal((await postSegment(n, org.adminKey, { name: 'not-big', conditions: [{ field: 'userId', operator: 'not_in', value: ids }] })).status, 201, 'not_in too');
    await refusedUnchanged(t, n, org.adminKey, () => postSegment(n, org.adminKey, { name: 'too-big', conditions: [{ field: 'userId', operator: 'in', value: [...ids, 'one-more'] }] }), 400, 'BAD_REQUEST', /VEXIL_MAX_SEGMENT_VALUES=20000/);
    await refusedUnchanged(t, n, org.adminKey, () => putSegment(n, org.adminKey, 'big', { conditions: [{ field: 'userId', operator: 'in', value: [...ids, 'one-more'] }] }), 400, 'BAD_REQUEST', /VEXIL_MAX_SEGMENT_VALUES/);
    // One item is still bounded by VEXIL_MAX_VALUE_BYTES, a non-list value too.
    await refusedUnchanged(t, n, org.adminKey, () => postSegment(n, org.adminKey, { name: 'fat', conditions: [{ field: 'userId', operator: 'in', value: ['a', 'y'.repeat(40_000)] }] }), 400, 'BAD_REQUEST', /conditions\[0\]\.value\[1\].*VEXIL_MAX_VALUE_BYTES/);
    await refusedUnchanged(t, n, org.adminKey, () => postSegment(n, org.adminKey, { name: 'fat', conditions: [{ field: 'userId', operator: '==', value: 'y'.repeat(40_000) }] }), 400, 'BAD_REQUEST', /VEXIL_MAX_VALUE_BYTES/);
    const many = Array.from({ length: 51 }, () => beta);
    await refusedUnchanged(t, n, org.adminKey, () => postSegment(n, org.adminKey, { name: 'many', conditions: many }), 400, 'BAD_REQUEST', /VEXIL_MAX_CONDITIONS_PER_RULE=50/);
    // Over the 1 MiB body: 413 before anything is parsed.
    const huge = Array.from({ length: 20_000 }, (_, i) => `user-${i}-${'z'.repeat(60)}`);
    await refusedUnchanged(t, n, org.adminKey, () => postSegment(n, org.adminKey, { name: 'huge', conditions: [{ field: 'userId', operator: 'in', value: huge }] }), 413, 'PAYLOAD_TOO_LARGE');

    // Evaluated by lookup: members in, others out.
    t.equal((await postFlag(n, org.adminKey, 'gate')).status, 201);
    t.equal((await postConfig(n, org.adminKey, 'gate', ruleWith(['big']))).status, 200);
    const ek = await evalKey(n, org.adminKey, 'web');
    t.equal((await evalFlag(n, ek, 'gate', { userId: ids[19_999], stage: 'production' })).body.key, 'on', 'the last listed user is in');
    t.equal((await evalFlag(n, ek, 'gate', { userId: ids[0], stage: 'production' })).body.key, 'on', 'the first listed user is in');
    t.equal((await evalFlag(n, ek, 'gate', { userId: 'user-20000', stage: 'production' })).body.key, 'off', 'an unlisted user is out');
  });

  t.test('applications: a rename cascades to segments, a removal in use is 409', async (t) => {
    const org = await createOrg(n);
    t.equal((await postSegment(n, org.adminKey, { name: 'b', application: 'billing' })).status, 201);
    const gql = (query: string, variables: Record<string, unknown>) => n.req('POST', '/api/graphql', { key: org.adminKey, body: { query, variables } });
    const removed = await gql('mutation($a: [String!]!) { replaceApplications(applications: $a) }', { a: ['web'] });
    t.equal(removed.body.errors?.[0]?.extensions?.code, 'CONFLICT');
    t.match(removed.body.errors?.[0]?.message, /segment 'b' belongs to it/);
    const renamed = await gql('mutation { renameApplication(from: "billing", to: "payments") }', {});
    t.notOk(renamed.body.errors, renamed.text);
    t.equal((await getSegment(n, org.adminKey, 'b')).body.application, 'payments', 'the segment follows the rename');
  });
});
