/**
 * Approval integrity of change requests (docs/change-requests.md, "Reviewing"): an approval counts
 * only for the exact revision (hash) it names; every new revision (edit, rebase) voids the reviews
 * given so far; the author of any revision cannot review unless the policy allows self-approval; a
 * reviewer needs CanApprove and scopes covering every target; a rejection blocks until a new revision.
 */
import t from 'tap';
import { createOrg, expectProblem, getFlag, makeKey, must, postConfig, postFlag, startNode } from '../../helpers/flags.js';
import { act, apply, auditLog, CR, getCr, propose, review, toggle } from '../../helpers/change-requests.js';
import { expectFieldError, gql } from '../../helpers/graphql.js';

t.setTimeout(240_000);

t.test('approval integrity', async (t) => {
  const n = await startNode(t);
  const org = await createOrg(n);
  const admin = org.adminKey;
  const policy = async (stage: string, body: Record<string, unknown>) =>
    must(t, await n.req('PUT', `/api/environments/${stage}/policy`, { key: admin, body: { requiredApprovals: 0, allowSelfApproval: false, allowBypass: false, ...body } }), 200, `policy ${stage}`);
  for (const f of ['f', 'g']) {
    must(t, await postFlag(n, admin, f), 201, `flag ${f}`);
    must(t, await postConfig(n, admin, f), 200, `${f} production`);
    must(t, await postConfig(n, admin, f, { stage: 'development' }), 200, `${f} development`);
  }
  await policy('production', { requiredApprovals: 2 });
  const author = await makeKey(n, admin, { name: 'author', permissions: ['CanWrite', 'CanApprove'] });
  const a1 = await makeKey(n, admin, { name: 'a1', permissions: ['CanApprove'] });
  const a2 = await makeKey(n, admin, { name: 'a2', permissions: ['CanApprove'] });
  const a3 = await makeKey(n, admin, { name: 'a3', permissions: ['CanApprove'] });
  const editor = await makeKey(n, admin, { name: 'editor', permissions: ['CanWrite', 'CanApprove'] });
  const writer = await makeKey(n, admin, { name: 'writer', permissions: ['CanWrite'] });
  const billing = await makeKey(n, admin, { name: 'billing', permissions: ['CanApprove'], application: 'billing' });
  const devOnly = await makeKey(n, admin, { name: 'dev', permissions: ['CanApprove'], environment: 'development' });
  const prodOnly = await makeKey(n, admin, { name: 'prod', permissions: ['CanApprove'], environment: 'production' });
  const readerKey = await makeKey(n, admin, { name: 'reader', permissions: ['CanRead'] });
  const reader = () => readerKey;
  const enabled = async (flag: string) => (await getFlag(n, admin, flag)).body.configs.find((c: any) => c.stage === 'production').enabled;

  t.test('a protected environment: the direct write is review_required, the proposal is not', async (t) => {
    const r = await postConfig(n, writer, 'f', { enabled: false });
    expectProblem(t, r, 409, 'CONFLICT', /review/);
    t.equal(r.body.reason, 'review_required');
    const cr = must(t, await propose(n, writer, [toggle('f', false)]), 201, 'propose').body;
    t.match(cr, { state: 'open', approved: false, environments: ['production'], requiredApprovals: [{ stage: 'production', required: 2, approvals: 0 }] });
    expectProblem(t, await apply(n, writer, cr), 409, 'CONFLICT', /approvals.*'production' \(0 of 2\)/);
    t.equal(await enabled('f'), true, 'nothing applied');
    must(t, await act(n, writer, cr.id, 'close'), 200, 'close');
  });

  t.test('who may review: CanApprove, not an author, scopes covering every target; a stale hash is 409', async (t) => {
    const cr = must(t, await propose(n, author, [toggle('f', false), toggle('g', false, 'development')]), 201, 'propose').body;
    expectProblem(t, await review(n, writer, cr), 403, 'FORBIDDEN', /CanApprove/);
    expectProblem(t, await review(n, author, cr), 403, 'FORBIDDEN', /authored/);
    expectProblem(t, await review(n, billing, cr), 403, 'FORBIDDEN', /billing/);
    expectProblem(t, await review(n, devOnly, cr), 403, 'FORBIDDEN', /development/);
    expectProblem(t, await review(n, prodOnly, cr), 403, 'FORBIDDEN', /production/, 'a production-only key does not cover the development target');
    expectProblem(t, await review(n, a1, { id: cr.id, hash: 'a'.repeat(64) }), 409, 'CONFLICT', /not the current revision/);
    expectProblem(t, await n.req('POST', `${CR}/${cr.id}/reviews`, { key: a1, body: { decision: 'ok', hash: cr.hash } }), 400, 'BAD_REQUEST', /decision/);
    const got = (await getCr(n, admin, cr.id)).body;
    t.same([got.approvals, got.rejections, got.history.reviews], [[], [], []], 'no review recorded');
    // An editor who revised someone's request authored a revision: it cannot review it either.
    const v2 = must(t, await n.req('PUT', `${CR}/${cr.id}`, { key: editor, body: { changes: [toggle('f', false)] } }), 200, 'edit').body;
    expectProblem(t, await review(n, editor, v2), 403, 'FORBIDDEN', /authored/);
    expectProblem(t, await review(n, author, v2), 403, 'FORBIDDEN', /authored/, 'the first author still cannot');
    const ok = must(t, await review(n, prodOnly, v2, 'approve', 'lgtm'), 200, 'a production-scoped key covers a production-only request').body;
    t.match(ok.approvals, [{ reviewer: { keyName: 'prod' }, decision: 'approve', hash: v2.hash, revision: 2, comment: 'lgtm', voided: false }]);
    must(t, await act(n, admin, cr.id, 'close'), 200, 'close');
  });

  t.test('approvals count for their revision only: edit and rebase void them, kept in the history as voided', async (t) => {
    const cr = must(t, await propose(n, author, [toggle('f', false)]), 201, 'propose').body;
    must(t, await review(n, a1, cr), 200, 'a1');
    let cur = must(t, await review(n, a2, cr), 200, 'a2').body;
    t.match(cur, { approved: true, requiredApprovals: [{ stage: 'production', required: 2, approvals: 2 }] });
    // Edit: a new revision, the approvals void.
    cur = must(t, await n.req('PUT', `${CR}/${cr.id}`, { key: author, body: { changes: [toggle('f', false), toggle('g', false)] } }), 200, 'edit').body;
    t.match(cur, { revision: 2, approved: false, approvals: [] });
    expectProblem(t, await apply(n, author, cur), 409, 'CONFLICT', /0 of 2/);
    expectProblem(t, await apply(n, author, cr), 409, 'CONFLICT', /not the current revision/, 'the old hash is not applicable either');
    const hist = (await getCr(n, admin, cr.id)).body.history;
    t.same(hist.reviews.map((r: any) => [r.reviewer.keyName, r.revision, r.voided]), [['a1', 1, true], ['a2', 1, true]], 'the old approvals kept, voided');
    expectProblem(t, await review(n, a1, cr), 409, 'CONFLICT', /not the current revision/, 'approving the old hash: 409');
    must(t, await review(n, a1, cur), 200, 'a1 again');
    must(t, await review(n, a2, cur), 200, 'a2 again');
    // Rebase: a new revision of the same changes; the approvals void again.
    const rebased = must(t, await act(n, writer, cr.id, 'rebase'), 200, 'rebase').body;
    t.match(rebased, { revision: 3, approved: false, approvals: [] });
    t.same(rebased.changes, cur.changes);
    expectProblem(t, await apply(n, writer, rebased), 409, 'CONFLICT', /0 of 2/);
    expectProblem(t, await review(n, writer, rebased), 403, 'FORBIDDEN', /CanApprove/);
    must(t, await review(n, a1, rebased), 200, 'a1 on revision 3');
    t.equal(must(t, await review(n, a1, rebased), 200, 'a1 twice').body.approved, false, 'the same reviewer twice counts once');
    must(t, await review(n, a3, rebased), 200, 'a3 on revision 3');
    const applied = must(t, await apply(n, writer, rebased), 200, 'apply with two approvals of revision 3').body;
    t.equal(applied.state, 'applied');
    t.same([await enabled('f'), await enabled('g')], [false, false], 'both changes applied');
    const events = (await auditLog(n, admin)).filter((e) => e.changeRequestId === cr.id);
    t.same(events.map((e) => e.action).reverse(), [
      'change.create', 'change.review', 'change.review', 'change.revise', 'change.review', 'change.review', 'change.revise',
      'change.review', 'change.review', 'change.review', 'config.disable', 'config.disable', 'change.apply',
    ]);
    t.ok(events.filter((e) => e.action === 'change.review').every((e) => /^[0-9a-f]{64}$/.test(e.after.hash)), 'each review names the hash');
  });

  t.test('a rejection on the current revision blocks until a new revision', async (t) => {
    const cr = must(t, await propose(n, author, [toggle('f', true)]), 201, 'propose').body;
    must(t, await review(n, a1, cr), 200, 'a1');
    must(t, await review(n, a2, cr), 200, 'a2');
    const rej = must(t, await review(n, a3, cr, 'reject', 'not now'), 200, 'a3 rejects').body;
    t.match(rej, { state: 'rejected', approved: false, rejections: [{ reviewer: { keyName: 'a3' }, comment: 'not now' }] });
    expectProblem(t, await apply(n, author, cr), 409, 'CONFLICT', /rejected/);
    t.same((await n.req('GET', `${CR}?state=rejected`, { key: admin })).body.map((r: any) => r.id), [cr.id], 'listed as rejected');
    expectProblem(t, await act(n, author, cr.id, 'schedule', { at: new Date(Date.now() + 60_000).toISOString(), hash: cr.hash }), 409, 'CONFLICT', /rejected/);
    const v2 = must(t, await act(n, author, cr.id, 'rebase'), 200, 'a new revision').body;
    t.match(v2, { state: 'open', rejections: [] });
    must(t, await review(n, a1, v2), 200, 'a1');
    must(t, await review(n, a3, v2), 200, 'a3 approves now');
    must(t, await apply(n, author, v2), 200, 'apply');
    t.equal(await enabled('f'), true);
  });

  t.test('self-approval where every protected environment touched allows it; an unprotected request needs none', async (t) => {
    const cr = must(t, await propose(n, author, [toggle('g', true)]), 201, 'propose').body;
    expectProblem(t, await review(n, author, cr), 403, 'FORBIDDEN', /self-approval/);
    await policy('production', { requiredApprovals: 1, allowSelfApproval: true });
    const self = must(t, await review(n, author, cr), 200, 'self-approval allowed now').body;
    t.equal(self.approved, true, 'the policy is read when the request is read: one approval of one required');
    must(t, await apply(n, author, cr), 200, 'apply');
    await policy('production', { requiredApprovals: 2 });
    const dev = must(t, await propose(n, writer, [toggle('f', false, 'development')]), 201, 'development only').body;
    t.match(dev, { approved: true, environments: ['development'], requiredApprovals: [] });
    must(t, await apply(n, writer, dev), 200, 'applies without review');
  });

  t.test('self-approval is refused when a request touches two protected environments and only one allows it', async (t) => {
    await policy('production', { requiredApprovals: 1, allowSelfApproval: true });
    await policy('development', { requiredApprovals: 1, allowSelfApproval: false });
    const both = must(t, await propose(n, author, [toggle('f', false), toggle('g', false, 'development')]), 201, 'touches production and development').body;
    t.same([...both.environments].sort(), ['development', 'production']);
    expectProblem(t, await review(n, author, both), 403, 'FORBIDDEN', /self-approval/);
    t.same((await getCr(n, admin, both.id)).body.history.reviews, [], 'nothing recorded');
    const prod = must(t, await propose(n, author, [toggle('f', false)]), 201, 'production only').body;
    must(t, await review(n, author, prod), 200, 'self-approval where the one protected environment touched allows it');
    for (const cr of [both, prod]) must(t, await act(n, author, cr.id, 'close'), 200, 'close');
    await policy('development', { requiredApprovals: 0 });
    await policy('production', { requiredApprovals: 2 });
  });

  t.test('a policy raised after approvals: the apply checks the policy of now', async (t) => {
    await policy('production', { requiredApprovals: 1 });
    const cr = must(t, await propose(n, writer, [toggle('g', false)]), 201, 'propose').body;
    t.equal(must(t, await review(n, a1, cr), 200, 'a1').body.approved, true);
    await policy('production', { requiredApprovals: 3 });
    expectProblem(t, await apply(n, writer, cr), 409, 'CONFLICT', /1 of 3/);
    await policy('production', { requiredApprovals: 2 });
  });

  t.test('a revert of a protected environment needs the approvals its policy requires, as any request (REST and GraphQL)', async (t) => {
    const lacking = (id: string, have: number) => `Change request '${id}' lacks the approvals its protected environments require: 'production' (${have} of 2)`;
    const was = await enabled('g');
    const cr = must(t, await propose(n, writer, [toggle('g', !was)]), 201, 'propose').body;
    must(t, await review(n, a1, cr), 200, 'a1');
    must(t, await review(n, a2, cr), 200, 'a2');
    must(t, await apply(n, writer, cr), 200, 'apply');
    t.equal(await enabled('g'), !was, 'applied');
    // REST: the revert is a new open request that needs two approvals of its own.
    const rv = must(t, await act(n, writer, cr.id, 'revert'), 201, 'revert').body;
    t.match(rv, { state: 'open', approved: false, reverts: cr.id, approvals: [], environments: ['production'], requiredApprovals: [{ stage: 'production', required: 2, approvals: 0 }] });
    const refused = await apply(n, writer, rv);
    expectProblem(t, refused, 409, 'CONFLICT');
    t.equal(refused.body.detail, lacking(rv.id, 0), 'the message of any request lacking approvals');
    must(t, await review(n, a1, rv), 200, 'a1 approves the revert');
    const once = await apply(n, writer, rv);
    expectProblem(t, once, 409, 'CONFLICT');
    t.equal(once.body.detail, lacking(rv.id, 1), 'one approval of two is not enough');
    t.equal(await enabled('g'), !was, 'nothing reverted without the approvals');
    t.same((await auditLog(n, admin)).filter((e) => e.changeRequestId === rv.id).map((e) => e.action), ['change.review', 'change.create'], 'no apply audited');
    must(t, await review(n, a2, rv), 200, 'a2 approves the revert');
    t.equal(must(t, await apply(n, writer, rv), 200, 'apply the approved revert').body.state, 'applied');
    t.equal(await enabled('g'), was, 'reverted');
    // GraphQL: the same, with the fields docs/change-requests.md ("Reverting") shows.
    const again = await gql(n, writer, `mutation { revertChangeRequest(id: "${rv.id}") { id hash state approved reverts requiredApprovals { stage required approvals } } }`);
    const g = again.body.data!.revertChangeRequest;
    t.match(g, { state: 'open', approved: false, reverts: rv.id, requiredApprovals: [{ stage: 'production', required: 2, approvals: 0 }] });
    const gApply = () => gql(n, writer, `mutation { applyChangeRequest(id: "${g.id}", hash: "${g.hash}") { state appliedAt } }`);
    const gRefused = await gApply();
    expectFieldError(t, gRefused, ['applyChangeRequest'], 'CONFLICT', 'GraphQL: lacks approvals');
    t.equal(gRefused.body.errors?.[0]?.message, lacking(g.id, 0), 'GraphQL: the same message');
    for (const key of [a1, a2]) {
      const r = await gql(n, key, `mutation { reviewChangeRequest(id: "${g.id}", decision: "approve", hash: "${g.hash}") { approved approvals { reviewer { keyName } hash } } }`);
      t.same(r.body.errors, undefined, 'GraphQL review');
    }
    t.match((await gApply()).body.data, { applyChangeRequest: { state: 'applied' } }, 'GraphQL: applied once approved');
    t.equal(await enabled('g'), !was, 'the revert of the revert applied');
  });

  t.test('GraphQL mirrors it: create, review, update voids, apply, conflicts, close, revert, rebase, schedule, the connection', async (t) => {
    const FIELDS = 'id state approved revision hash changes diff environments requiredApprovals { stage required approvals } approvals { reviewer { keyName } hash revision voided } rejections { reviewer { keyName } } author { keyName } appliedAt';
    const create = await gql(n, writer, `mutation($i: ChangeRequestInput!) { createChangeRequest(input: $i) { ${FIELDS} } }`, {
      i: { title: 'gql', changes: [{ op: 'setConfigEnabled', flag: 'g', stage: 'production', enabled: true }, { op: 'upsertConfig', flag: 'f', input: { stage: 'production', enabled: true, defaultVariantKey: 'on', rolloutPercentage: 100 } }] },
    });
    t.same(create.body.errors, undefined, 'no error');
    const cr = create.body.data!.createChangeRequest;
    t.match(cr, { state: 'open', approved: false, revision: 1, environments: ['production'], author: { keyName: 'writer' }, requiredApprovals: [{ stage: 'production', required: 2, approvals: 0 }] });
    t.equal(cr.diff.length, 2);
    const rest = (await getCr(n, admin, cr.id)).body;
    t.equal(rest.hash, cr.hash, 'the same request over REST');
    const rv = (key: string, hash: string, decision = 'approve') => gql(n, key, `mutation { reviewChangeRequest(id: "${cr.id}", decision: "${decision}", hash: "${hash}") { ${FIELDS} } }`);
    expectFieldError(t, await rv(writer, cr.hash), ['reviewChangeRequest'], 'FORBIDDEN', 'no CanApprove');
    expectFieldError(t, await rv(a1, 'b'.repeat(64)), ['reviewChangeRequest'], 'CONFLICT', 'stale hash');
    t.equal((await rv(a1, cr.hash)).body.data!.reviewChangeRequest.approvals.length, 1);
    const upd = await gql(n, writer, `mutation { updateChangeRequest(id: "${cr.id}", input: {changes: [{op: "setConfigEnabled", flag: "g", stage: "production", enabled: true}]}) { ${FIELDS} } }`);
    const v2 = upd.body.data!.updateChangeRequest;
    t.match(v2, { revision: 2, approvals: [], approved: false }, 'update voids the approval');
    expectFieldError(t, await gql(n, writer, `mutation { applyChangeRequest(id: "${cr.id}", hash: "${v2.hash}") { id } }`), ['applyChangeRequest'], 'CONFLICT', 'lacks approvals');
    await rv(a1, v2.hash);
    await rv(a2, v2.hash);
    const applied = await gql(n, writer, `mutation { applyChangeRequest(id: "${cr.id}", hash: "${v2.hash}") { ${FIELDS} } }`);
    t.match(applied.body.data!.applyChangeRequest, { state: 'applied', approved: false });
    t.type(applied.body.data!.applyChangeRequest.appliedAt, 'string');
    const reverted = await gql(n, writer, `mutation { revertChangeRequest(id: "${cr.id}") { id state changes } }`);
    t.match(reverted.body.data!.revertChangeRequest, { state: 'open', changes: [{ op: 'upsertConfig', flag: 'g' }] });
    const rid = reverted.body.data!.revertChangeRequest.id;
    t.match((await gql(n, writer, `mutation { rebaseChangeRequest(id: "${rid}") { revision } }`)).body.data, { rebaseChangeRequest: { revision: 2 } });
    const hashNow = (await getCr(n, admin, rid)).body.hash;
    const at = new Date(Date.now() + 3_600_000).toISOString();
    t.match((await gql(n, writer, `mutation { scheduleChangeRequest(id: "${rid}", at: "${at}", hash: "${hashNow}") { state scheduledAt } }`)).body.data, { scheduleChangeRequest: { state: 'scheduled' } });
    t.match((await gql(n, writer, `mutation { closeChangeRequest(id: "${rid}") { state } }`)).body.data, { closeChangeRequest: { state: 'closed' } });
    const one = await gql(n, reader(), `{ changeRequest(id: "${cr.id}") { id history { revisions { revision hash } reviews { reviewer { keyName } revision voided } } } }`);
    t.same(one.body.data!.changeRequest.history.revisions.map((r: any) => r.revision), [1, 2]);
    t.same(one.body.data!.changeRequest.history.reviews.map((r: any) => [r.reviewer.keyName, r.revision, r.voided]), [['a1', 1, true], ['a1', 2, false], ['a2', 2, false]]);
    t.equal((await gql(n, admin, '{ changeRequest(id: "cr_0000000000aaaaaaaaaa") { id } }')).body.data!.changeRequest, null, 'unknown: null');
    const all = (await n.req('GET', CR, { key: admin })).body.map((r: any) => r.id);
    const seen: string[] = [];
    let after: string | null = null;
    for (;;) {
      const page: any = (await gql(n, admin, `query($a: String) { changeRequestConnection(first: 3, after: $a) { nodes { id } totalCount pageInfo { endCursor hasNextPage } } }`, { a: after })).body.data!.changeRequestConnection;
      t.equal(page.totalCount, all.length);
      seen.push(...page.nodes.map((x: any) => x.id));
      if (!page.pageInfo.hasNextPage) break;
      after = page.pageInfo.endCursor;
    }
    t.same(seen, all, 'the connection pages through every request');
    const closed = (await gql(n, admin, '{ changeRequestConnection(state: "closed", first: 100) { nodes { state } } }')).body.data!.changeRequestConnection.nodes;
    t.ok(closed.length > 0 && closed.every((x: any) => x.state === 'closed'), 'filtered by state');
    expectFieldError(t, await gql(n, admin, '{ changeRequestConnection(state: "nope", first: 1) { totalCount } }'), ['changeRequestConnection'], 'BAD_REQUEST');
    const log = (await gql(n, admin, `{ auditLog(target: "${cr.id}", type: "changeRequest", first: 50) { action changeRequestId } }`)).body.data!.auditLog;
    t.same(log.map((e: any) => e.action), ['change.apply', 'change.review', 'change.review', 'change.revise', 'change.review', 'change.create'], 'GraphQL auditLog by the request as target');
    t.ok(log.every((e: any) => e.changeRequestId === cr.id), 'each names the request');
  });
});
