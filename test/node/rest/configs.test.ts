/**
 * Stage configurations over REST: `POST /api/flags/{name}/configs` (docs/api.md, "Flags"):
 * the FlagConfig answered, rule ids, replace-on-upsert, clientId configurations, the 409 for an
 * environment the flag does not use, and the CanWrite environment scope.
 */
import t from 'tap';
import {
  CONFIG_FIELDS,
  createOrg,
  evalFlag,
  evalKey,
  expectProblem,
  expectRejectedUnchanged,
  getFlag,
  makeKey,
  must,
  postConfig,
  postFlag,
  startNode,
} from '../../helpers/flags.js';
import { rolloutBucket } from '../../../src/engine/index.js';

t.test('stage configurations over REST', async (t) => {
  const n = await startNode(t);

  t.test('upsert answers 200 with the FlagConfig; rule ids are generated when absent and kept when given', async (t) => {
    const org = await createOrg(n);
    must(t, await postFlag(n, org.adminKey, 'cfg'), 201, 'create');
    const r = await postConfig(n, org.adminKey, 'cfg', {
      defaultVariantKey: 'off',
      rolloutPercentage: 42.5,
      enrollmentCutoff: 30,
      activeFrom: '2020-01-01T02:00:00+02:00',
      activeUntil: '2999-12-31T23:59:59Z',
      rules: [
        { priority: 2, conditions: [{ field: 'country', operator: '==', value: 'NL' }], allocations: [{ variantKey: 'on', percentage: 100 }] },
        { id: 'my-rule', priority: 1, conditions: [{ field: 'user.plan', operator: '==', value: 'pro' }, { field: 'beta', operator: '==' }], allocations: [{ variantKey: 'on', percentage: 25 }, { variantKey: 'off', percentage: 75 }] },
        { priority: 3, conditions: [], allocations: [{ variantKey: 'off', percentage: 100 }] },
      ],
    });
    t.equal(r.status, 200);
    t.match(r.headers.get('content-type') ?? '', /^application\/json/);
    t.same(Object.keys(r.body).sort(), CONFIG_FIELDS, 'the FlagConfig fields');
    t.equal(r.body.stage, 'production');
    t.equal(r.body.clientId, null);
    t.equal(r.body.enabled, true);
    t.equal(r.body.defaultVariantKey, 'off');
    t.equal(r.body.rolloutPercentage, 42.5);
    t.equal(r.body.enrollmentCutoff, 30);
    t.equal(r.body.activeFrom, '2020-01-01T00:00:00.000Z', 'date-times normalised to UTC');
    t.equal(r.body.activeUntil, '2999-12-31T23:59:59.000Z');
    t.equal(r.body.rules.length, 3, 'rules kept in the order given');
    const [r0, r1, r2] = r.body.rules;
    t.type(r0.id, 'string');
    t.ok(r0.id.length > 0, 'generated id for rule 0');
    t.type(r2.id, 'string');
    t.ok(r2.id.length > 0, 'generated id for rule 2');
    t.not(r0.id, r2.id, 'generated ids are distinct');
    t.equal(r1.id, 'my-rule', 'given id kept');
    t.same(r0, { id: r0.id, priority: 2, conditions: [{ field: 'country', operator: '==', value: 'NL' }], segments: [], allocations: [{ variantKey: 'on', percentage: 100 }] });
    t.same(r1.conditions[1], { field: 'beta', operator: '==', value: null }, 'absent condition value is null');
    t.same(r1.allocations, [{ variantKey: 'on', percentage: 25 }, { variantKey: 'off', percentage: 75 }]);

    // GET answers the same configuration.
    const g = await getFlag(n, org.adminKey, 'cfg');
    t.same(g.body.configs, [r.body]);

    // The generated id is what evaluation reports as ruleId.
    const ek = await evalKey(n, org.adminKey, 'web');
    // (a user inside the 30% enrollment cut-off, by the documented bucket hash)
    let user = 0;
    while (rolloutBucket('cfg', `u-${user}`) >= 3000) user++;
    const matched = await evalFlag(n, ek, 'cfg', { userId: `u-${user}`, stage: 'production', context: { country: 'NL' } }, true);
    t.equal(matched.body.reason.code, 'rule_matched');
    t.equal(matched.body.reason.ruleId, r0.id);
    t.equal(matched.body.key, 'on');

    // Upserting again with the ids answered keeps them: a client can round-trip a configuration.
    const again = await postConfig(n, org.adminKey, 'cfg', { ...r.body, stage: 'production' });
    t.equal(again.status, 200);
    t.same(again.body, r.body, 'round-trip of the answered FlagConfig is stable');
  });

  t.test('upsert twice replaces the configuration', async (t) => {
    const org = await createOrg(n);
    must(t, await postFlag(n, org.adminKey, 'twice'), 201, 'create');
    const first = must(t, await postConfig(n, org.adminKey, 'twice', {
      defaultVariantKey: 'on',
      rolloutPercentage: 50,
      activeFrom: '2020-01-01T00:00:00Z',
      enrollmentCutoff: 10,
      rules: [{ id: 'r1', priority: 1, conditions: [], allocations: [{ variantKey: 'on', percentage: 100 }] }],
    }), 200, 'first').body;
    t.equal(first.rules.length, 1);

    const second = await postConfig(n, org.adminKey, 'twice', { stage: 'PRODUCTION', enabled: false, defaultVariantKey: 'off', rolloutPercentage: 100 });
    t.equal(second.status, 200);
    t.same(second.body, {
      stage: 'production',
      clientId: null,
      enabled: false,
      defaultVariantKey: 'off',
      rolloutPercentage: 100,
      rules: [],
      activeFrom: null,
      activeUntil: null,
      enrollmentCutoff: null,
    }, 'absent fields of the second upsert are reset, not merged');
    const g = await getFlag(n, org.adminKey, 'twice');
    t.same(g.body.configs, [second.body], 'one configuration for the stage (stage matched case-insensitively)');

    // Another stage is a second configuration.
    const dev = must(t, await postConfig(n, org.adminKey, 'twice', { stage: 'development', defaultVariantKey: 'on' }), 200, 'dev').body;
    t.equal(dev.stage, 'development');
    t.same((await getFlag(n, org.adminKey, 'twice')).body.configs, [dev, second.body]);

    // Evaluation sees the replacement at once.
    const ek = await evalKey(n, org.adminKey, 'web');
    const ev = await evalFlag(n, ek, 'twice', { userId: 'u', stage: 'production' }, true);
    t.same(ev.body, { variant: false, key: 'off', reason: { code: 'config_disabled', message: ev.body.reason.message } });
  });

  t.test('clientId configurations sit beside the stage configuration', async (t) => {
    const org = await createOrg(n);
    must(t, await postFlag(n, org.adminKey, 'clients'), 201, 'create');
    const base = must(t, await postConfig(n, org.adminKey, 'clients', { defaultVariantKey: 'off' }), 200, 'base').body;
    const ios = await postConfig(n, org.adminKey, 'clients', { clientId: 'web:ios', defaultVariantKey: 'on' });
    t.equal(ios.status, 200);
    t.equal(ios.body.clientId, 'web:ios');
    const plain = must(t, await postConfig(n, org.adminKey, 'clients', { clientId: 'kiosk', defaultVariantKey: 'on' }), 200, 'plain').body;
    const g = await getFlag(n, org.adminKey, 'clients');
    t.same(g.body.configs, [base, plain, ios.body], 'base config kept; one config per (stage, clientId)');

    const ek = await evalKey(n, org.adminKey, 'web');
    const e1 = await evalFlag(n, ek, 'clients', { userId: 'u', stage: 'production', clientId: 'web:ios' }, true);
    t.same(e1.body, { variant: true, key: 'on', reason: { code: 'default', message: e1.body.reason.message } });
    const e2 = await evalFlag(n, ek, 'clients', { userId: 'u', stage: 'production', clientId: 'web:android' }, true);
    t.same(e2.body, { variant: false, key: 'off', reason: { code: 'default', message: e2.body.reason.message } }, 'falls back to the stage configuration');
    const e3 = await evalFlag(n, ek, 'clients', { userId: 'u', stage: 'production', clientId: 'WEB:IOS' }, true);
    t.equal(e3.body.key, 'off', 'clientIds compare exactly');
    const e4 = await evalFlag(n, ek, 'clients', { userId: 'u', stage: 'production', clientId: null }, true);
    t.equal(e4.body.key, 'off', 'null clientId is the stage configuration');

    // A clientId namespaced to another application of the organization cannot configure this flag.
    await expectRejectedUnchanged(t, n, org.adminKey, 'clients',
      () => postConfig(n, org.adminKey, 'clients', { clientId: 'billing:ios', defaultVariantKey: 'on' }), 400, 'BAD_REQUEST', /billing/);
  });

  t.test('409: a configuration for an environment the flag does not use', async (t) => {
    const org = await createOrg(n, ['development', 'staging', 'production']);
    must(t, await postFlag(n, org.adminKey, 'narrow', { environments: ['production'] }), 201, 'create');
    must(t, await postConfig(n, org.adminKey, 'narrow'), 200, 'production config');
    await expectRejectedUnchanged(t, n, org.adminKey, 'narrow',
      () => postConfig(n, org.adminKey, 'narrow', { stage: 'development' }), 409, 'CONFLICT', /development/);
    await expectRejectedUnchanged(t, n, org.adminKey, 'narrow',
      () => postConfig(n, org.adminKey, 'narrow', { stage: 'Staging', clientId: 'web:ios' }), 409, 'CONFLICT');
    // A stage that is no environment of the organization at all: the flag does not use it either.
    await expectRejectedUnchanged(t, n, org.adminKey, 'narrow',
      () => postConfig(n, org.adminKey, 'narrow', { stage: 'qa' }), 409, 'CONFLICT');
    // Unknown flag: 404 before anything else.
    expectProblem(t, await postConfig(n, org.adminKey, 'missing-flag', { stage: 'qa' }), 404, 'NOT_FOUND');
  });

  t.test('CanWrite environment scope: a development key cannot upsert a production configuration', async (t) => {
    const org = await createOrg(n);
    must(t, await postFlag(n, org.adminKey, 'envs'), 201, 'create');
    must(t, await postConfig(n, org.adminKey, 'envs', { defaultVariantKey: 'on' }), 200, 'production config');
    const devWriter = await makeKey(n, org.adminKey, { permissions: ['CanWrite'], environment: 'development' });

    await expectRejectedUnchanged(t, n, org.adminKey, 'envs',
      () => postConfig(n, devWriter, 'envs', { stage: 'production', defaultVariantKey: 'off' }), 403, 'FORBIDDEN', /development/);
    await expectRejectedUnchanged(t, n, org.adminKey, 'envs',
      () => postConfig(n, devWriter, 'envs', { stage: 'production', clientId: 'web:ios' }), 403, 'FORBIDDEN');

    const ok = await postConfig(n, devWriter, 'envs', { stage: 'DEVELOPMENT', defaultVariantKey: 'on' });
    t.equal(ok.status, 200, 'its own environment in any case');
    t.equal(ok.body.stage, 'development');
    const g = await getFlag(n, devWriter, 'envs');
    t.equal(g.status, 200, 'an environment-scoped writer reads');
    t.same(g.body.configs.map((c: { stage: string }) => c.stage), ['development', 'production']);

    // Combined application + environment scope.
    const webDevWriter = await makeKey(n, org.adminKey, { permissions: ['CanWrite'], application: 'web', environment: 'development' });
    t.equal((await postConfig(n, webDevWriter, 'envs', { stage: 'development' })).status, 200);
    await expectRejectedUnchanged(t, n, org.adminKey, 'envs', () => postConfig(n, webDevWriter, 'envs', { stage: 'production' }), 403, 'FORBIDDEN');
  });

  t.test('a flag without variants cannot be configured (no default variant exists)', async (t) => {
    const org = await createOrg(n);
    must(t, await postFlag(n, org.adminKey, 'empty', { variants: [] }), 201, 'create');
    await expectRejectedUnchanged(t, n, org.adminKey, 'empty', () => postConfig(n, org.adminKey, 'empty'), 400, 'BAD_REQUEST', /defaultVariantKey/);
  });
});
