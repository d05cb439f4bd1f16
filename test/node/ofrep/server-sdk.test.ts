/**
 * OFREP single evaluation (docs/ofrep.md) through the real, published clients: `@openfeature/server-sdk`
 * with `@openfeature/ofrep-provider`, against a live node. Every flag type, every reason code of
 * docs/evaluation.md with its mapped OFREP reason and `metadata.reasonCode`, unknown flags, a missing
 * targeting key, a bad key and a 429 that the provider honours. Outcomes without a variant leave
 * `value` out: checked on the wire, and the client falls back to its code default.
 */
import t from 'tap';
import { OpenFeature, type Client, type EvaluationDetails, type JsonValue } from '@openfeature/server-sdk';
import { OFREPProvider } from '@openfeature/ofrep-provider';
import { randomKey, type TestNode } from '../../helpers/node.js';
import { createOrg, evalKey, must, postConfig, postFlag, putFlag, setKillSwitch, startNode, type TapTest } from '../../helpers/flags.js';

const colours = [
  { key: 'red', value: '#f00', valueType: 'string' },
  { key: 'blue', value: '#00f', valueType: 'string' },
];
const allBlue = { id: 'all-blue', priority: 3, conditions: [], allocations: [{ variantKey: 'blue', percentage: 100 }] };
const hour = 3600_000;
const iso = (ms: number) => new Date(ms).toISOString();

let domains = 0;
/** A client bound to its own domain, whose provider sends `key` in `headerName`. */
async function clientFor(baseUrl: string, key: string, headerName = 'x-management-key'): Promise<Client> {
  const domain = `d${++domains}`;
  await OpenFeature.setProviderAndWait(domain, new OFREPProvider({ baseUrl, headers: [[headerName, key]] }));
  return OpenFeature.getClient(domain);
}

/** The raw OFREP answer, to see exactly what the wire carries. */
function ofrep(n: TestNode, key: string, flag: string, context: Record<string, unknown>) {
  return n.req('POST', `/ofrep/v1/evaluate/flags/${encodeURIComponent(flag)}`, { key, body: { context } });
}

t.teardown(() => OpenFeature.close());

t.test('server SDK with the OFREP provider against a live node', async (t) => {
  const n = await startNode(t);
  const org = await createOrg(n, ['development', 'production'], ['web', 'other']);
  const admin = org.adminKey;
  const ek = await evalKey(n, admin, 'web');
  const client = await clientFor(n.url, ek);
  const ctx = (extra: Record<string, unknown> = {}) => ({ targetingKey: 'user-1', stage: 'production', ...extra });

  /** Creates a string flag in web and (unless null) its production configuration. */
  const flag = async (t: TapTest, name: string, extra: Record<string, unknown> = {}, config: Record<string, unknown> | null = {}) => {
    must(t, await postFlag(n, admin, name, { type: 'string', variants: colours, ...extra }), 201, `create ${name}`);
    if (config !== null) must(t, await postConfig(n, admin, name, { defaultVariantKey: 'red', rules: [allBlue], ...config }), 200, `config ${name}`);
  };

  /** The SDK's details for a string flag, and the same request on the wire. */
  const expectString = async (t: TapTest, name: string, context: Record<string, unknown>, reasonCode: string, reason: string, variant: 'red' | 'blue') => {
    const d = await client.getStringDetails(name, 'code-default', context);
    t.equal(d.value, variant === 'red' ? '#f00' : '#00f', `${name}: value`);
    t.equal(d.variant, variant, `${name}: variant`);
    t.equal(d.reason, reason, `${name}: reason ${reason}`);
    t.equal(d.flagMetadata.reasonCode, reasonCode, `${name}: metadata.reasonCode ${reasonCode}`);
    t.notOk(d.errorCode, `${name}: no error`);
    const raw = await ofrep(n, ek, name, context);
    t.equal(raw.status, 200, `${name}: HTTP 200`);
    t.same(raw.body, { key: name, value: d.value, variant, reason, metadata: { reasonCode } }, `${name}: exactly key, value, variant, reason, metadata`);
  };

  /** An outcome without a variant: no `value` (nor `variant`) on the wire; the client's default. */
  const expectNoVariant = async (t: TapTest, name: string, context: Record<string, unknown>, reasonCode: string) => {
    const raw = await ofrep(n, ek, name, context);
    t.equal(raw.status, 200, `${name}: HTTP 200`);
    t.same(raw.body, { key: name, reason: 'UNKNOWN', metadata: { reasonCode } }, `${name}: no value, no variant, reason UNKNOWN`);
    const d = await client.getStringDetails(name, 'code-default', context);
    t.equal(d.value, 'code-default', `${name}: the client uses its code default`);
  };

  t.test('every flag type', async (t) => {
    must(t, await postFlag(n, admin, 'f-bool', {}), 201, 'bool');
    must(t, await postConfig(n, admin, 'f-bool', { rules: [{ priority: 1, conditions: [{ field: 'country', operator: '==', value: 'NL' }], allocations: [{ variantKey: 'on', percentage: 100 }] }] }), 200, 'bool config');
    const nl = await client.getBooleanDetails('f-bool', false, ctx({ country: 'NL' }));
    t.equal(nl.value, true, 'boolean: rule matched → on');
    t.equal(nl.reason, 'TARGETING_MATCH');
    const de = await client.getBooleanDetails('f-bool', true, ctx({ country: 'DE' }));
    t.equal(de.value, false, 'boolean: default → off');
    t.equal(de.reason, 'STATIC');
    t.equal(de.variant, 'off');

    must(t, await postFlag(n, admin, 'f-string', { type: 'string', variants: colours }), 201, 'string');
    must(t, await postConfig(n, admin, 'f-string', { defaultVariantKey: 'blue' }), 200, 'string config');
    t.equal(await client.getStringValue('f-string', 'x', ctx()), '#00f', 'string value');

    const numbers = [
      { key: 'small', value: 1, valueType: 'number' },
      { key: 'big', value: 42.5, valueType: 'number' },
    ];
    must(t, await postFlag(n, admin, 'f-number', { type: 'number', variants: numbers }), 201, 'number');
    must(t, await postConfig(n, admin, 'f-number', { defaultVariantKey: 'big' }), 200, 'number config');
    const num = await client.getNumberDetails('f-number', 0, ctx());
    t.equal(num.value, 42.5, 'number value');
    t.equal(num.variant, 'big');

    const objects = [
      { key: 'a', value: { limits: { rpm: 10 }, tags: ['x', 'y'] }, valueType: 'json' },
      { key: 'b', value: { limits: { rpm: 99 } }, valueType: 'json' },
    ];
    must(t, await postFlag(n, admin, 'f-object', { type: 'json', variants: objects }), 201, 'object');
    must(t, await postConfig(n, admin, 'f-object', { defaultVariantKey: 'a' }), 200, 'object config');
    const obj: EvaluationDetails<JsonValue> = await client.getObjectDetails('f-object', {}, ctx());
    t.same(obj.value, { limits: { rpm: 10 }, tags: ['x', 'y'] }, 'object value');
    t.equal(obj.variant, 'a');

    // A type the code does not expect: the provider refuses it, the code default stands.
    const wrong = await client.getBooleanDetails('f-number', true, ctx());
    t.equal(wrong.value, true, 'type mismatch → code default');
    t.equal(wrong.errorCode, 'TYPE_MISMATCH');
  });

  t.test('every reason code with its OFREP reason and metadata.reasonCode', async (t) => {
    // rule_matched: TARGETING_MATCH, or SPLIT when the rule splits between variants.
    await flag(t, 'r-match');
    await expectString(t, 'r-match', ctx(), 'rule_matched', 'TARGETING_MATCH', 'blue');
    await flag(t, 'r-split', {}, { rules: [{ id: 'half', priority: 1, conditions: [], allocations: [{ variantKey: 'red', percentage: 50 }, { variantKey: 'blue', percentage: 50 }] }] });
    const split = await client.getStringDetails('r-split', 'x', ctx());
    t.equal(split.reason, 'SPLIT', 'a split rule: SPLIT');
    t.equal(split.flagMetadata.reasonCode, 'rule_matched');
    t.ok(['#f00', '#00f'].includes(split.value), 'a split rule answers one of its variants');
    // A rule whose only non-zero allocation is one variant is no split.
    await flag(t, 'r-nosplit', {}, { rules: [{ id: 'zero', priority: 1, conditions: [], allocations: [{ variantKey: 'red', percentage: 0 }, { variantKey: 'blue', percentage: 100 }] }] });
    await expectString(t, 'r-nosplit', ctx(), 'rule_matched', 'TARGETING_MATCH', 'blue');
    // default: STATIC
    await flag(t, 'r-default', {}, { rules: [] });
    await expectString(t, 'r-default', ctx(), 'default', 'STATIC', 'red');
    // killswitch, archived, config_disabled, not_yet_active, expired, disabled_dependency: DISABLED
    await flag(t, 'r-ks');
    await setKillSwitch(n, admin, [{ flag: 'r-ks' }]);
    await expectString(t, 'r-ks', ctx(), 'killswitch', 'DISABLED', 'red');
    await setKillSwitch(n, admin, []);
    await flag(t, 'r-archived');
    must(t, await putFlag(n, admin, 'r-archived', { isArchived: true }), 200, 'archive');
    await expectString(t, 'r-archived', ctx(), 'archived', 'DISABLED', 'red');
    await flag(t, 'r-disabled', {}, { enabled: false });
    await expectString(t, 'r-disabled', ctx(), 'config_disabled', 'DISABLED', 'red');
    await flag(t, 'r-future', {}, { activeFrom: iso(Date.now() + hour) });
    await expectString(t, 'r-future', ctx(), 'not_yet_active', 'DISABLED', 'red');
    await flag(t, 'r-past', {}, { activeUntil: iso(Date.now() - hour) });
    await expectString(t, 'r-past', ctx(), 'expired', 'DISABLED', 'red');
    await flag(t, 'r-parent', {}, { enabled: false });
    await flag(t, 'r-child', { dependencies: [{ flag: 'r-parent' }] });
    await expectString(t, 'r-child', ctx(), 'disabled_dependency', 'DISABLED', 'red');
    // rollout_excluded, enrollment_closed: SPLIT
    await flag(t, 'r-rollout', {}, { rolloutPercentage: 0 });
    await expectString(t, 'r-rollout', ctx(), 'rollout_excluded', 'SPLIT', 'red');
    await flag(t, 'r-closed', {}, { enrollmentCutoff: 0 });
    await expectString(t, 'r-closed', ctx(), 'enrollment_closed', 'SPLIT', 'red');
    // project_or_env_mismatch with a configuration: UNKNOWN with the default variant ...
    await flag(t, 'r-mismatch');
    await expectString(t, 'r-mismatch', ctx({ clientId: 'other:app' }), 'project_or_env_mismatch', 'UNKNOWN', 'red');
    // ... and without one (a stage the flag does not use), config_missing, no_variants: no variant.
    await flag(t, 'r-dev-only', { environments: ['development'] }, null);
    await expectNoVariant(t, 'r-dev-only', ctx(), 'project_or_env_mismatch');
    await flag(t, 'r-unconfigured', {}, null);
    await expectNoVariant(t, 'r-unconfigured', ctx(), 'config_missing');
    await flag(t, 'r-empty', { variants: [] }, null);
    await expectNoVariant(t, 'r-empty', ctx(), 'no_variants');
  });

  t.test('context: targetingKey is the userId, stage and clientId select, the rest targets', async (t) => {
    must(t, await postFlag(n, admin, 'c-flag', { type: 'string', variants: colours }), 201, 'create');
    const rule = (id: string, field: string, value: unknown, variantKey: string) => ({ id, priority: id === 'u' ? 1 : 2, conditions: [{ field, operator: '==', value }], allocations: [{ variantKey, percentage: 100 }] });
    must(t, await postConfig(n, admin, 'c-flag', { defaultVariantKey: 'red', rules: [rule('u', 'userId', 'vip', 'blue'), rule('p', 'plan.tier', 'gold', 'blue')] }), 200, 'production');
    must(t, await postConfig(n, admin, 'c-flag', { stage: 'development', defaultVariantKey: 'blue', rules: [] }), 200, 'development');
    must(t, await postConfig(n, admin, 'c-flag', { clientId: 'web:ios', defaultVariantKey: 'blue', rules: [] }), 200, 'client');
    t.equal(await client.getStringValue('c-flag', 'x', { targetingKey: 'vip', stage: 'production' }), '#00f', 'targetingKey is userId');
    t.equal(await client.getStringValue('c-flag', 'x', { targetingKey: 'anon', stage: 'production' }), '#f00', 'another user: default');
    t.equal(await client.getStringValue('c-flag', 'x', { targetingKey: 'anon', stage: 'production', plan: { tier: 'gold' } }), '#00f', 'nested context property targets');
    t.equal(await client.getStringValue('c-flag', 'x', { targetingKey: 'anon', stage: 'development' }), '#00f', 'context.stage selects the stage');
    t.equal(await client.getStringValue('c-flag', 'x', { targetingKey: 'anon', stage: 'production', clientId: 'web:ios' }), '#00f', 'context.clientId selects the configuration');
    // A key scoped to an environment evaluates there without context.stage; another stage is 403.
    const devKey = await evalKey(n, admin, 'web', 'development');
    const dev = await clientFor(n.url, devKey);
    t.equal(await dev.getStringValue('c-flag', 'x', { targetingKey: 'anon' }), '#00f', 'stage from the key scope');
    const other = await dev.getStringDetails('c-flag', 'x', { targetingKey: 'anon', stage: 'production' });
    t.equal(other.value, 'x', 'a stage outside the key scope: code default');
    const raw = await ofrep(n, devKey, 'c-flag', { targetingKey: 'anon', stage: 'production' });
    t.equal(raw.status, 403, 'stage outside the key scope: 403');
    t.same(Object.keys(raw.body), ['errorDetails'], '403 body is {errorDetails}');
    // No stage and no environment scope: INVALID_CONTEXT.
    const noStage = await client.getStringDetails('c-flag', 'x', { targetingKey: 'anon' });
    t.equal(noStage.errorCode, 'INVALID_CONTEXT', 'no stage anywhere: INVALID_CONTEXT');
    t.equal(noStage.value, 'x');
    const unknownStage = await client.getStringDetails('c-flag', 'x', { targetingKey: 'anon', stage: 'nowhere' });
    t.equal(unknownStage.errorCode, 'INVALID_CONTEXT', 'a stage that is no environment: INVALID_CONTEXT');
  });

  t.test('unknown flag, missing targeting key, bad keys', async (t) => {
    const unknown = await client.getBooleanDetails('no-such-flag', true, ctx());
    t.equal(unknown.value, true, 'unknown flag: the client default');
    t.equal(unknown.errorCode, 'FLAG_NOT_FOUND', 'unknown flag: FLAG_NOT_FOUND');
    const raw = await ofrep(n, ek, 'no-such-flag', ctx());
    t.equal(raw.status, 404);
    t.same({ ...raw.body, errorDetails: typeof raw.body.errorDetails }, { key: 'no-such-flag', errorCode: 'FLAG_NOT_FOUND', errorDetails: 'string' }, '404 flagNotFound shape');

    const noKey = await client.getBooleanDetails('f-bool', true, { stage: 'production' });
    t.equal(noKey.errorCode, 'TARGETING_KEY_MISSING', 'missing targetingKey');
    t.equal(noKey.value, true);

    // A flag of another application is 403, like REST.
    must(t, await postFlag(n, admin, 'other-app', { project: 'other' }), 201, 'other app flag');
    must(t, await postConfig(n, admin, 'other-app', {}), 200, 'other app config');
    const forbidden = await ofrep(n, ek, 'other-app', ctx());
    t.equal(forbidden.status, 403, 'a flag outside the key application: 403');

    // Bad keys: 401 {errorDetails}; the provider surfaces an error and the code default.
    for (const [what, key] of [['unknown key', randomKey()], ['malformed key', 'nope']] as const) {
      const bad = await clientFor(n.url, key);
      const d = await bad.getBooleanDetails('f-bool', true, ctx());
      t.equal(d.value, true, `${what}: code default`);
      t.ok(d.errorCode, `${what}: an error is reported (${d.errorCode})`);
      const r = await ofrep(n, key, 'f-bool', ctx());
      t.equal(r.status, 401, `${what}: 401`);
      t.same(Object.keys(r.body), ['errorDetails'], `${what}: {errorDetails}`);
    }
    // A key without CanEvaluate, or organization-wide: 403.
    const reader = await (await import('../../helpers/flags.js')).makeKey(n, admin, { permissions: ['CanRead'], application: 'web' });
    t.equal((await ofrep(n, reader, 'f-bool', ctx())).status, 403, 'no CanEvaluate: 403');
    t.equal((await ofrep(n, admin, 'f-bool', ctx())).status, 403, 'organization-wide key: 403');
  });
});

t.test('429 with Retry-After: the provider pauses until then', async (t) => {
  const n = await startNode(t, { env: { VEXIL_RATE_LIMIT_EVAL: '1' } });
  const org = await createOrg(n, ['production'], ['web']);
  must(t, await postFlag(n, org.adminKey, 'limited'), 201, 'create');
  must(t, await postConfig(n, org.adminKey, 'limited', { defaultVariantKey: 'on' }), 200, 'config');
  const ek = await evalKey(n, org.adminKey, 'web');
  const client = await clientFor(n.url, ek);
  const c = { targetingKey: 'u', stage: 'production' };
  t.equal(await client.getBooleanValue('limited', false, c), true, 'the first evaluation spends the bucket');
  const raw = await ofrep(n, ek, 'limited', c);
  t.equal(raw.status, 429, 'the next request: 429');
  t.equal(raw.headers.get('retry-after'), '1', 'Retry-After in seconds');
  t.same(Object.keys(raw.body), ['errorDetails'], '429 body is {errorDetails}');
  const limited = await client.getBooleanDetails('limited', false, c);
  t.equal(limited.value, false, 'rate limited: code default');
  t.equal(limited.errorCode, 'GENERAL');
  // The provider now holds back until Retry-After has passed: it does not even ask.
  const paused = await client.getBooleanDetails('limited', false, c);
  t.match(paused.errorMessage ?? '', /paused due to TooManyRequests/, 'the provider honours Retry-After');
  await new Promise((r) => setTimeout(r, 2100));
  t.equal(await client.getBooleanValue('limited', false, c), true, 'after Retry-After it evaluates again');
});
