/**
 * The pure protection decision (src/domain/protection.ts; docs/change-requests.md, "What protection
 * covers"): which environments a write affects, which of those are protected, and whether the write
 * passes (change request, bypass) or is refused (review_required, bypass without Admin).
 */
import t from 'tap';
import { affectedStages, changedKillSwitchRules, decideProtection, protectedStages, type PolicyView } from '../../../src/domain/protection.js';
import { parseBypassHeader } from '../../../src/features/policies/bypass.js';
import { isVexilError, reviewRequired } from '../../../src/domain/errors.js';
import { toProblem } from '../../../src/http/problem.js';

const ENVS = ['development', 'staging', 'production'];
const ks = (flag: string | null, application: string | null, environment: string | null) => ({ flag, application, environment });

t.test('affectedStages', async (t) => {
  t.same(affectedStages({ kind: 'config', stage: 'PRODUCTION' }, ENVS), ['production'], 'a configuration: its stage, in the organization spelling');
  t.same(affectedStages({ kind: 'flag', usedIn: ['production', 'development', 'production'], fields: ['variants'] }, ENVS), ['production', 'development'], 'a flag: where it or a dependant is configured, once each');
  t.same(affectedStages({ kind: 'flag', usedIn: ['production'], fields: null }, ENVS), ['production'], 'a delete');
  t.same(affectedStages({ kind: 'flag', usedIn: ['production'], fields: ['description', 'tags'] }, ENVS), [], 'description and tags change no answer');
  t.same(affectedStages({ kind: 'flag', usedIn: ['production'], fields: ['description', 'isArchived'] }, ENVS), ['production'], 'archive does');
  t.same(affectedStages({ kind: 'flag', usedIn: [], fields: ['variants'] }, ENVS), [], 'a flag configured nowhere');
  t.same(affectedStages({ kind: 'flagEnvironments', changed: ['staging'] }, ENVS), ['staging']);
  t.same(affectedStages({ kind: 'segment', usedIn: ['staging'] }, ENVS), ['staging']);
  t.same(affectedStages({ kind: 'segment', usedIn: [] }, ENVS), [], 'an unused segment');
  t.same(affectedStages({ kind: 'killSwitch', before: [], after: [ks('f', null, 'production')] }, ENVS), ['production'], 'a rule added');
  t.same(affectedStages({ kind: 'killSwitch', before: [ks('f', null, 'production')], after: [] }, ENVS), ['production'], 'a rule removed');
  t.same(affectedStages({ kind: 'killSwitch', before: [ks('f', 'app', 'production')], after: [ks('f', 'APP', 'Production')] }, ENVS), [], 'the same rule, its application and environment respelled');
  t.same(affectedStages({ kind: 'killSwitch', before: [ks('f', null, 'production')], after: [ks('F', null, 'production')] }, ENVS), ['production'], 'another flag name: rules match flags exactly');
  t.same(affectedStages({ kind: 'killSwitch', before: [ks('f', null, 'production')], after: [ks('f', null, 'production'), ks(null, 'app', null)] }, ENVS), ENVS, 'a rule for every environment');
  t.same(affectedStages({ kind: 'environments', removed: ['staging'], renamed: ['production'] }, ENVS), ['staging', 'production']);
  t.same(affectedStages({ kind: 'environments', removed: [], renamed: [] }, ENVS), [], 'an environment added');
  t.same(affectedStages({ kind: 'applications' }, ENVS), ENVS, 'an application added, removed or renamed: clientIds name applications');
});

t.test('changedKillSwitchRules: the rules added or removed, matched as evaluation matches them', async (t) => {
  const a = ks('f', 'web', 'production');
  t.same(changedKillSwitchRules([], []), []);
  t.same(changedKillSwitchRules([a], [a]), [], 'unchanged');
  t.same(changedKillSwitchRules([a], [ks('f', 'WEB', 'Production')]), [], 'application and environment compare ignoring case (engine: sameName)');
  t.same(changedKillSwitchRules([a], [ks('F', 'web', 'production')]), [a, ks('F', 'web', 'production')], 'the flag compares exactly (engine: ===): removed and added');
  t.same(changedKillSwitchRules([a, ks(null, null, 'staging')], [ks(null, null, 'staging')]), [a], 'a rule removed');
  t.same(changedKillSwitchRules([a], [ks(null, 'web', 'production'), a]), [ks(null, 'web', 'production')], 'a rule added; order does not matter');
  t.same(changedKillSwitchRules([a], [ks('f', 'web', null)]), [a, ks('f', 'web', null)], 'every environment is not production');
});

const policies = new Map<string, PolicyView>([
  ['production', { requiredApprovals: 2, allowBypass: true }],
  ['staging', { requiredApprovals: 1, allowBypass: false }],
  ['development', { requiredApprovals: 0, allowBypass: true }],
]);
const plain = { viaChangeRequest: false, bypassReason: null, isAdmin: true };

t.test('protectedStages and decideProtection', async (t) => {
  t.same(protectedStages(['development', 'Production', 'staging', 'qa'], policies), ['Production', 'staging'], 'requiredApprovals > 0, case-insensitive; no policy: unprotected');
  t.same(decideProtection(['development'], policies, plain), { kind: 'allow' }, 'nothing protected');
  t.same(decideProtection([], policies, plain), { kind: 'allow' });
  t.same(decideProtection(['production', 'development'], policies, plain), { kind: 'review_required', environments: ['production'] });
  t.same(decideProtection(['production', 'staging'], policies, { ...plain, viaChangeRequest: true }), { kind: 'allow' }, 'a change request apply passes');
  t.same(decideProtection(['production'], policies, { ...plain, bypassReason: 'incident' }), { kind: 'bypass', environments: ['production'], reason: 'incident' });
  t.same(decideProtection(['production'], policies, { ...plain, bypassReason: 'incident', isAdmin: false }), { kind: 'bypass_forbidden', environments: ['production'] }, 'bypass needs Admin');
  t.same(decideProtection(['production', 'staging'], policies, { ...plain, bypassReason: 'incident' }), { kind: 'review_required', environments: ['production', 'staging'] }, 'every protected environment must allow bypass');
  t.same(decideProtection(['staging'], policies, { ...plain, bypassReason: 'incident' }), { kind: 'review_required', environments: ['staging'] }, 'bypass without allowBypass');
  t.same(decideProtection(['development'], policies, { ...plain, bypassReason: 'x', isAdmin: false }), { kind: 'allow' }, 'a header where nothing is protected changes nothing');
});

t.test('the bypass header and the review_required problem', async (t) => {
  t.equal(parseBypassHeader(undefined), null);
  t.equal(parseBypassHeader(''), null, 'empty: no header');
  t.equal(parseBypassHeader('  incident 42 '), 'incident 42');
  t.equal(parseBypassHeader('x'.repeat(500)), 'x'.repeat(500));
  for (const bad of ['   ', 'x'.repeat(501), 'a\u0001b']) {
    try {
      parseBypassHeader(bad);
      t.fail(`${JSON.stringify(bad)} accepted`);
    } catch (e) {
      t.ok(isVexilError(e) && e.code === 'BAD_REQUEST', `${JSON.stringify(bad).slice(0, 20)}: 400`);
    }
  }
  const p = toProblem(reviewRequired(['production', 'staging']));
  t.match(p, { status: 409, code: 'CONFLICT', reason: 'review_required', environment: 'production', environments: ['production', 'staging'] });
  t.match(p.detail, /'production', 'staging'/);
});
