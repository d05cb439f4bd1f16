/** The pure functions of change requests (src/features/change-requests/changes.ts): canonical JSON, hash, diff, conflicts, approval state. */
import t from 'tap';
import { createHash } from 'node:crypto';
import { isVexilError } from '../../../src/domain/errors.js';
import {
  approvalState,
  canonicalJson,
  diffOf,
  MAX_CHANGES,
  movedTargets,
  parseCreateRequest,
  parseReview,
  parseUpdateRequest,
  revisionHash,
  selfReviewAllowed,
  targetKey,
  targetOf,
  type Change,
  type Policy,
  type ReviewRecord,
} from '../../../src/features/change-requests/changes.js';

const refused = (t: Tap.Test, fn: () => unknown, re: RegExp, what: string) => {
  try {
    fn();
    t.fail(`${what}: accepted`);
  } catch (err) {
    t.ok(isVexilError(err) && err.code === 'BAD_REQUEST' && re.test(err.message), `${what}: ${(err as Error).message}`);
  }
};

t.test('canonical JSON sorts keys at every depth, keeps array order, drops undefined members', async (t) => {
  t.equal(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: null } }), '{"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1}');
  t.equal(canonicalJson({ a: undefined, b: 'x' }), '{"b":"x"}');
  t.equal(canonicalJson([1, 'a', true, null]), '[1,"a",true,null]');
  t.equal(canonicalJson({ 'é': 1, e: 2, E: 3 }), '{"E":3,"e":2,"é":1}', 'code-unit order');
  t.equal(canonicalJson('a"b'), '"a\\"b"');
});

t.test('the hash is SHA-256 hex of the canonical JSON of {changes, bases}; key order does not matter, content does', async (t) => {
  const changes: Change[] = [{ op: 'setConfigEnabled', flag: 'f', stage: 'production', clientId: null, enabled: false }];
  const bases = { 'config:f:production:': { enabled: true, stage: 'production' } };
  const h = revisionHash(changes, bases);
  t.match(h, /^[0-9a-f]{64}$/);
  t.equal(h, createHash('sha256').update(canonicalJson({ changes, bases })).digest('hex'));
  t.equal(revisionHash(changes, { 'config:f:production:': { stage: 'production', enabled: true } }), h, 'same content, other key order');
  t.not(revisionHash(changes, { 'config:f:production:': { stage: 'production', enabled: false } }), h, 'another base');
  t.not(revisionHash([{ ...changes[0], enabled: true } as Change], bases), h, 'another change');
});

t.test('targets: one per configuration (stage as the flag spells it), flag, segment, the kill switch', async (t) => {
  const stageOf = (_f: string, s: string) => (s.toLowerCase() === 'production' ? 'production' : s);
  t.same(targetOf({ op: 'upsertConfig', flag: 'f', input: { stage: 'PRODUCTION', clientId: 'c1' } }, stageOf), { type: 'config', flag: 'f', stage: 'production', clientId: 'c1' });
  t.same(targetOf({ op: 'deleteConfig', flag: 'f', stage: 'Production', clientId: null }, stageOf), { type: 'config', flag: 'f', stage: 'production', clientId: null });
  t.same(targetOf({ op: 'updateFlag', flag: 'f', input: {} }, stageOf), { type: 'flag', flag: 'f' });
  t.same(targetOf({ op: 'upsertSegment', segment: 's', input: {} }, stageOf), { type: 'segment', segment: 's' });
  t.same(targetOf({ op: 'setKillSwitch', input: [] }, stageOf), { type: 'killSwitch' });
  t.not(targetKey({ type: 'config', flag: 'f', stage: 'p', clientId: null }), targetKey({ type: 'config', flag: 'f', stage: 'p', clientId: 'x' }));
});

t.test('diff: each target once, before its base and after its state; moved targets compare canonically', async (t) => {
  const a = { type: 'flag' as const, flag: 'a' };
  const b = { type: 'config' as const, flag: 'a', stage: 'p', clientId: null };
  const bases = { [targetKey(a)]: { x: 1, y: 2 }, [targetKey(b)]: null };
  const afters = { [targetKey(a)]: { x: 2, y: 2 }, [targetKey(b)]: { enabled: true } };
  t.same(diffOf([a, b, a], bases, afters), [
    { target: a, before: { x: 1, y: 2 }, after: { x: 2, y: 2 } },
    { target: b, before: null, after: { enabled: true } },
  ]);
  t.same(movedTargets([a, b], bases, { [targetKey(a)]: { y: 2, x: 1 }, [targetKey(b)]: null }), [], 'same state, other key order: not moved');
  t.same(movedTargets([a, b], bases, { [targetKey(a)]: { x: 1, y: 2 }, [targetKey(b)]: { enabled: false } }), [b], 'created meanwhile: moved');
  t.same(movedTargets([a, b, a], bases, { [targetKey(a)]: { x: 9 }, [targetKey(b)]: { enabled: false } }), [a, b], 'each moved target once');
});

t.test('approval state: approvals on the current revision only, voided ones never, one per reviewer, a rejection rejects', async (t) => {
  const policies: Record<string, Policy> = {
    production: { requiredApprovals: 2, allowSelfApproval: false, allowBypass: false },
    staging: { requiredApprovals: 1, allowSelfApproval: true, allowBypass: false },
  };
  const pol = (s: string) => policies[s];
  const r = (revision: number, reviewerKeyId: string, decision: 'approve' | 'reject' = 'approve', voided = false): ReviewRecord => ({ revision, reviewerKeyId, decision, voided });
  t.same(approvalState(1, ['development'], pol, []), { approved: true, rejected: false, environments: [] }, 'nothing protected: approved');
  t.equal(approvalState(2, ['production'], pol, [r(2, 'a')]).approved, false, 'one of two');
  t.equal(approvalState(2, ['production'], pol, [r(2, 'a'), r(2, 'a')]).approved, false, 'the same reviewer twice counts once');
  t.equal(approvalState(2, ['production'], pol, [r(2, 'a'), r(2, 'b')]).approved, true, 'two reviewers');
  t.equal(approvalState(2, ['production'], pol, [r(1, 'a'), r(2, 'b')]).approved, false, "an earlier revision's approval does not count");
  t.equal(approvalState(2, ['production'], pol, [r(2, 'a', 'approve', true), r(2, 'b')]).approved, false, 'a voided approval does not count');
  const rej = approvalState(2, ['staging'], pol, [r(2, 'a'), r(2, 'b', 'reject')]);
  t.same([rej.approved, rej.rejected], [false, true], 'a rejection rejects');
  t.same(approvalState(2, ['staging'], pol, [r(2, 'b', 'reject'), r(2, 'b')]).rejected, false, "a reviewer's last decision counts");
  t.same(approvalState(1, ['production', 'staging'], pol, [r(1, 'a')]).environments, [
    { stage: 'production', required: 2, approvals: 1 },
    { stage: 'staging', required: 1, approvals: 1 },
  ]);
  t.equal(selfReviewAllowed(['staging', 'development'], pol), true);
  t.equal(selfReviewAllowed(['staging', 'production'], pol), false, 'every protected environment must allow it');
});

t.test('bodies: 1..100 changes, each op with its own fields, review decisions and hashes', async (t) => {
  const ok = parseCreateRequest({ title: ' T ', changes: [{ op: 'deleteConfig', flag: 'f', stage: 'production' }] });
  t.same(ok, { title: 'T', description: null, changes: [{ op: 'deleteConfig', flag: 'f', stage: 'production', clientId: null }] }, 'clientId defaults to null');
  refused(t, () => parseCreateRequest({ title: 'T', changes: [] }), /changes/, 'no change');
  const many = Array.from({ length: MAX_CHANGES + 1 }, () => ({ op: 'setKillSwitch', input: [] }));
  refused(t, () => parseCreateRequest({ title: 'T', changes: many }), /100/, '101 changes');
  t.equal(parseCreateRequest({ title: 'T', changes: many.slice(1) }).changes.length, 100, '100 changes');
  refused(t, () => parseCreateRequest({ title: 'T', changes: [{ op: 'dropTable' }] }), /op/, 'unknown op');
  refused(t, () => parseCreateRequest({ title: 'T', changes: [{ op: 'updateFlag', flag: 'f', input: {}, extra: 1 }] }), /extra/, 'unknown member');
  refused(t, () => parseCreateRequest({ title: 'T', changes: [{ op: 'setConfigEnabled', flag: 'f', stage: 'p' }] }), /enabled/, 'missing enabled');
  refused(t, () => parseCreateRequest({ title: '', changes: [{ op: 'setKillSwitch', input: [] }] }), /title/, 'empty title');
  refused(t, () => parseCreateRequest({ changes: [{ op: 'setKillSwitch', input: [] }] }), /title/, 'no title');
  t.same(parseUpdateRequest({ changes: [{ op: 'setKillSwitch', input: [] }] }), { changes: [{ op: 'setKillSwitch', input: [] }] });
  refused(t, () => parseReview({ decision: 'maybe', hash: 'a'.repeat(64) }), /decision/, 'decision');
  refused(t, () => parseReview({ decision: 'approve', hash: 'A'.repeat(64) }), /hash/, 'hash');
  t.same(parseReview({ decision: 'reject', hash: 'a'.repeat(64), comment: 'no' }), { decision: 'reject', hash: 'a'.repeat(64), comment: 'no' });
});
