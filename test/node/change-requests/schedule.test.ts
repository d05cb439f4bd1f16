/**
 * Scheduled change requests (docs/change-requests.md, "Scheduling"): applied by the section 15
 * runner once, within 1 s after `at`, under the same conditions as an apply; otherwise `failed`
 * with the reason and nothing changed; a restart across the due time applies it at the next start.
 */
import t from 'tap';
import { rmSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { createOrg, evalKey, expectProblem, getFlag, makeKey, must, postConfig, postFlag, startNode } from '../../helpers/flags.js';
import { pgliteCopy, type TestNode } from '../../helpers/node.js';
import { inMs } from '../../helpers/schedules.js';
import { act, auditLog, getCr, orgVersion, propose, toggle } from '../../helpers/change-requests.js';

t.setTimeout(240_000);

async function settledCr(n: TestNode, key: string, id: string, timeoutMs: number): Promise<any> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const r = (await getCr(n, key, id)).body;
    if (r.state !== 'scheduled' || Date.now() > end) return r;
    await sleep(50);
  }
}

t.test('scheduled change requests', async (t) => {
  const n = await startNode(t);
  const org = await createOrg(n);
  const admin = org.adminKey;
  const ev = await evalKey(n, admin, 'web');
  must(t, await postFlag(n, admin, 'f'), 201, 'flag');
  must(t, await postConfig(n, admin, 'f'), 200, 'config');
  must(t, await postFlag(n, admin, 'g'), 201, 'flag');
  must(t, await postConfig(n, admin, 'g'), 200, 'config');

  t.test('applied once, within 1 s after at, in one version, audited change.schedule then change.apply', async (t) => {
    const cr = must(t, await propose(n, admin, [toggle('f', false), toggle('g', false)]), 201, 'create').body;
    const at = inMs(1200);
    const s = must(t, await act(n, admin, cr.id, 'schedule', { at, hash: cr.hash }), 200, 'schedule').body;
    t.match(s, { state: 'scheduled', scheduledAt: at });
    expectProblem(t, await act(n, admin, cr.id, 'apply', { hash: cr.hash }), 409, 'CONFLICT', /scheduled/);
    const v0 = await orgVersion(n, ev);
    const done = await settledCr(n, admin, cr.id, 4000);
    t.equal(done.state, 'applied');
    const late = Date.parse(done.appliedAt) - Date.parse(at);
    t.ok(late >= 0 && late <= 1000, `applied ${late} ms after at`);
    t.equal(await orgVersion(n, ev), v0 + 1, 'one version');
    t.equal((await getFlag(n, admin, 'f')).body.configs[0].enabled, false);
    t.equal((await getFlag(n, admin, 'g')).body.configs[0].enabled, false);
    const events = (await auditLog(n, admin)).filter((e) => e.changeRequestId === cr.id).map((e) => e.action);
    t.same(events, ['change.apply', 'config.disable', 'config.disable', 'change.schedule', 'change.create'], 'each step once');
  });

  t.test('conditions no longer hold when due: failed with the reason, nothing changed', async (t) => {
    const cr = must(t, await propose(n, admin, [toggle('f', true), toggle('g', true)]), 201, 'create').body;
    must(t, await act(n, admin, cr.id, 'schedule', { at: inMs(800), hash: cr.hash }), 200, 'schedule');
    must(t, await postConfig(n, admin, 'g', { rolloutPercentage: 20 }), 200, 'g moves');
    const flagsBefore = [(await getFlag(n, admin, 'f')).body, (await getFlag(n, admin, 'g')).body];
    const v0 = await orgVersion(n, ev);
    const done = await settledCr(n, admin, cr.id, 4000);
    t.equal(done.state, 'failed');
    t.match(done.error, /configuration of flag 'g' in 'production'/, 'the reason names the moved target');
    t.same([(await getFlag(n, admin, 'f')).body, (await getFlag(n, admin, 'g')).body], flagsBefore, 'nothing changed');
    t.equal(await orgVersion(n, ev), v0, 'no version');
    t.same((await auditLog(n, admin)).filter((e) => e.changeRequestId === cr.id).map((e) => e.action), ['change.fail', 'change.schedule', 'change.create']);
    // A failed request can be rebased and applied.
    const rebased = must(t, await act(n, admin, cr.id, 'rebase'), 200, 'rebase').body;
    t.equal(rebased.state, 'open');
    must(t, await act(n, admin, cr.id, 'apply', { hash: rebased.hash }), 200, 'apply');
  });

  t.test('a scheduling key disabled before the due time: failed', async (t) => {
    const w = await makeKey(n, admin, { permissions: ['CanWrite'], name: 'scheduler' });
    const cr = must(t, await propose(n, w, [toggle('f', false)]), 201, 'create').body;
    must(t, await act(n, w, cr.id, 'schedule', { at: inMs(800), hash: cr.hash }), 200, 'schedule');
    const id = ((await n.req('GET', '/api/keys', { key: admin })).body as any[]).find((k) => k.name === 'scheduler').id;
    must(t, await n.req('POST', `/api/keys/${id}/disable`, { key: admin }), 200, 'disable');
    const done = await settledCr(n, admin, cr.id, 4000);
    t.equal(done.state, 'failed');
    t.match(done.error, /disabled/);
    t.equal((await getFlag(n, admin, 'f')).body.configs[0].enabled, true, 'nothing changed');
  });

  t.test('bad schedules: 400 (past, over a year, bad hash), 409 (stale hash, not open); a new revision unschedules', async (t) => {
    const cr = must(t, await propose(n, admin, [toggle('f', false)]), 201, 'create').body;
    expectProblem(t, await act(n, admin, cr.id, 'schedule', { at: inMs(-1000), hash: cr.hash }), 400, 'BAD_REQUEST', /future/);
    expectProblem(t, await act(n, admin, cr.id, 'schedule', { at: inMs(400 * 24 * 3600 * 1000), hash: cr.hash }), 400, 'BAD_REQUEST', /year/);
    expectProblem(t, await act(n, admin, cr.id, 'schedule', { at: 'tomorrow', hash: cr.hash }), 400, 'BAD_REQUEST', /at/);
    expectProblem(t, await act(n, admin, cr.id, 'schedule', { at: inMs(60_000) }), 400, 'BAD_REQUEST', /hash/);
    expectProblem(t, await act(n, admin, cr.id, 'schedule', { at: inMs(60_000), hash: 'f'.repeat(64) }), 409, 'CONFLICT', /not the current/);
    t.equal((await getCr(n, admin, cr.id)).body.state, 'open', 'still open');
    must(t, await act(n, admin, cr.id, 'schedule', { at: inMs(1500), hash: cr.hash }), 200, 'schedule');
    expectProblem(t, await act(n, admin, cr.id, 'schedule', { at: inMs(60_000), hash: cr.hash }), 409, 'CONFLICT', /only an open/);
    const v2 = must(t, await n.req('PUT', `/api/change-requests/${cr.id}`, { key: admin, body: { changes: [toggle('g', false)] } }), 200, 'revise').body;
    t.match(v2, { state: 'open', scheduledAt: null });
    await sleep(2000);
    t.equal((await getCr(n, admin, cr.id)).body.state, 'open', 'the old schedule does not apply the new revision');
    t.equal((await getFlag(n, admin, 'f')).body.configs[0].enabled, true);
  });

  t.test('every change.* audit event carries the request id and the hash of its revision', async (t) => {
    // The steps the tests above did not take here: a review and a close.
    const approver = await makeKey(n, admin, { permissions: ['CanApprove'], name: 'approver' });
    const cr = must(t, await propose(n, admin, [toggle('g', true)]), 201, 'create').body;
    must(t, await act(n, approver, cr.id, 'reviews', { decision: 'approve', hash: cr.hash }), 200, 'review');
    must(t, await act(n, admin, cr.id, 'close'), 200, 'close');
    const events = (await auditLog(n, admin)).filter((e) => e.action.startsWith('change.'));
    t.same([...new Set(events.map((e) => e.action))].sort(), ['change.apply', 'change.close', 'change.create', 'change.fail', 'change.review', 'change.revise', 'change.schedule'], 'every step of a change request is in this log');
    const hashes = new Map<string, Set<string>>();
    for (const e of events) {
      const id = e.target?.name as string;
      if (!hashes.has(id)) hashes.set(id, new Set(((await getCr(n, admin, id)).body.history.revisions as any[]).map((r) => r.hash)));
      t.equal(e.changeRequestId, id, `${e.action}: changeRequestId is the request's id`);
      t.equal(e.after?.id, id, `${e.action}: after.id too`);
      t.ok(typeof e.after?.hash === 'string' && hashes.get(id)!.has(e.after.hash), `${e.action} of ${id}: after.hash is one of its revisions' hashes`);
    }
  });
});

t.test('a scheduled request survives a restart; one due while the node was down is applied at start', async (t) => {
  const dataDir = await pgliteCopy();
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const first = await startNode(t, { dataDir });
  const key = first.adminKey;
  must(t, await postFlag(first, key, 'p', { project: 'default' }), 201, 'flag');
  must(t, await postConfig(first, key, 'p'), 200, 'config');
  const cr = must(t, await propose(first, key, [toggle('p', false)]), 201, 'create').body;
  const s = must(t, await act(first, key, cr.id, 'schedule', { at: inMs(1500), hash: cr.hash }), 200, 'schedule').body;
  await first.close();
  t.ok(Date.now() < Date.parse(s.scheduledAt), 'stopped before at');
  await sleep(Math.max(0, Date.parse(s.scheduledAt) - Date.now()) + 300);
  const startedAt = Date.now();
  const second = await startNode(t, { dataDir, adminKey: key });
  const done = await settledCr(second, key, cr.id, 3000);
  t.equal(done.state, 'applied', 'applied at start');
  t.ok(Date.parse(done.appliedAt) >= startedAt - 5000, 'after the restart');
  t.equal((await getFlag(second, key, 'p')).body.configs[0].enabled, false);
  t.same((await auditLog(second, key)).filter((e) => e.changeRequestId === cr.id).map((e) => e.action), ['change.apply', 'config.disable', 'change.schedule', 'change.create'], 'once');
});
