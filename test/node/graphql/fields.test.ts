/**
 * Every field of the GraphQL schema (docs/graphql.md, "Fields and permissions"), queries and mutations, through real HTTP;
 * every error code of docs/graphql.md, "Errors", reached on purpose; the Any and DateTime scalars; aliases; serial
 * mutations with a failing middle one; reads after writes in the same document.
 */
import { getNamedType, isInputObjectType, isObjectType, parse, TypeInfo, visit, visitWithTypeInfo } from 'graphql';
import t from 'tap';
import { vexilSchema } from '../../../src/graphql/execute.js';
import { createKey, startTestNode, type TestNode } from '../../helpers/node.js';
import { CONFIG_FIELDS, expectFieldError, expectRequestError, FLAG_FIELDS, gql as send } from '../../helpers/graphql.js';

const n = await startTestNode(t);
const admin = n.adminKey; // Admin, CanRead, CanWrite, organization-wide
/** Every document sent, to prove at the end that each schema field was exercised. */
const sent: string[] = [];
const gql = (node: TestNode, key: string, query: string, variables?: Record<string, unknown> | null) => {
  sent.push(query);
  return send(node, key, query, variables);
};
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

t.test('organization settings: applications and environments (replace, rename, read)', async (t) => {
  const r = await gql(n, admin, `mutation {
    a1: replaceApplications(applications: ["default", "mobile"])
    a2: renameApplication(from: "MOBILE", to: "ios")
    e1: replaceEnvironments(environments: ["development", "production", "staging"])
    e2: renameEnvironment(from: "staging", to: "qa")
  }`);
  t.same(r.body, {
    data: {
      a1: ['default', 'mobile'],
      a2: ['default', 'ios'],
      e1: ['development', 'production', 'staging'],
      e2: ['development', 'production', 'qa'],
    },
  });
  const q = await gql(n, admin, '{ environments applications }');
  t.same(q.body, { data: { environments: ['development', 'production', 'qa'], applications: ['default', 'ios'] } });
});

t.test('createFlag returns every Flag field; flag, flags, flagEnvironments read it', async (t) => {
  const created = await gql(n, admin, `mutation($v: Any) {
    createFlag(input: {
      name: "checkout", project: "default", type: "boolean", description: "New checkout", tags: ["web", "beta"],
      variants: [{key: "on", value: true, valueType: "boolean"}, {key: "off", value: $v, valueType: "boolean"}]
    }) { ${FLAG_FIELDS} configs { stage } }
  }`, { v: false });
  t.notOk(created.body.errors, 'no errors');
  const f = created.body.data?.createFlag;
  t.match(f, {
    name: 'checkout',
    project: 'default',
    type: 'boolean',
    description: 'New checkout',
    tags: ['web', 'beta'],
    isArchived: false,
    variants: [
      { key: 'on', value: true, valueType: 'boolean' },
      { key: 'off', value: false, valueType: 'boolean' },
    ],
    environments: ['development', 'production', 'qa'],
    dependencies: [],
    createdAt: ISO,
    updatedAt: ISO,
    configs: [],
  });

  const child = await gql(n, admin, `mutation {
    createFlag(input: {name: "checkout-banner", project: "default", type: "string", environments: ["production"],
      variants: [{key: "a", value: "A", valueType: "string"}, {key: "b", value: "B", valueType: "string"}],
      dependencies: [{flag: "checkout", variants: ["on"]}]}) { name type environments dependencies { flag variants } }
  }`);
  t.same(child.body, {
    data: { createFlag: { name: 'checkout-banner', type: 'string', environments: ['production'], dependencies: [{ flag: 'checkout', variants: ['on'] }] } },
  });

  const read = await gql(n, admin, `{
    flags { name }
    flag(name: "checkout") { ${FLAG_FIELDS} }
    flagEnvironments(name: "checkout-banner")
  }`);
  t.same(read.body.data?.flags, [{ name: 'checkout' }, { name: 'checkout-banner' }]);
  const { configs: _c, ...withoutConfigs } = f;
  t.same(read.body.data?.flag, withoutConfigs, 'flag(name) answers what createFlag answered');
  t.same(read.body.data?.flagEnvironments, ['production']);

  // Paging and search (docs/graphql.md, "Paging and searching the flag list"; more in test/node/rest/flag-paging.test.ts).
  const paged = await gql(n, admin, `{
    p1: flagConnection(first: 1) { nodes { name } pageInfo { endCursor hasNextPage } totalCount }
    p2: flagConnection(first: 1, after: "checkout") { nodes { name } pageInfo { endCursor hasNextPage } totalCount }
    found: flags(first: 10, search: "NEW CHECK", application: "DEFAULT", type: "boolean", archived: false) { name }
  }`);
  t.same(paged.body, {
    data: {
      p1: { nodes: [{ name: 'checkout' }], pageInfo: { endCursor: 'checkout', hasNextPage: true }, totalCount: 2 },
      p2: { nodes: [{ name: 'checkout-banner' }], pageInfo: { endCursor: 'checkout-banner', hasNextPage: false }, totalCount: 2 },
      found: [{ name: 'checkout' }],
    },
  });
});

t.test('updateFlag, archiveFlag, restoreFlag, updateFlagEnvironments', async (t) => {
  const r = await gql(n, admin, `mutation {
    u: updateFlag(name: "checkout", input: {description: "Checkout v2", tags: ["web"]}) { description tags isArchived }
    a: archiveFlag(name: "checkout") { isArchived }
    r: restoreFlag(name: "checkout") { isArchived }
    e: updateFlagEnvironments(name: "checkout-banner", environments: ["production", "QA"]) { environments }
    t1: updateFlag(name: "checkout-banner", input: {type: "string", isArchived: true, dependencies: [],
      variants: [{key: "a", value: "A2", valueType: "string"}, {key: "b", value: "B", valueType: "string"}]}) { type isArchived dependencies { flag } variants { value } }
    t2: updateFlag(name: "checkout-banner", input: {isArchived: false, dependencies: [{flag: "checkout", variants: ["on"]}]}) { isArchived dependencies { flag variants } }
  }`);
  t.same(r.body, {
    data: {
      u: { description: 'Checkout v2', tags: ['web'], isArchived: false },
      a: { isArchived: true },
      r: { isArchived: false },
      e: { environments: ['production', 'qa'] },
      t1: { type: 'string', isArchived: true, dependencies: [], variants: [{ value: 'A2' }, { value: 'B' }] },
      t2: { isArchived: false, dependencies: [{ flag: 'checkout', variants: ['on'] }] },
    },
  });
});

t.test('upsertFlagConfig (every input field, enrollmentCutoff included), flagConfigs, setFlagConfigEnabled, deleteFlagConfig', async (t) => {
  const up = await gql(n, admin, `mutation {
    p: upsertFlagConfig(name: "checkout", input: {
      stage: "PRODUCTION", enabled: true, defaultVariantKey: "off", rolloutPercentage: 100, enrollmentCutoff: 90.5,
      activeFrom: "2020-01-01T02:00:00+02:00", activeUntil: null,
      rules: [{id: "nl", priority: 1, conditions: [{field: "country", operator: "==", value: "NL"}], allocations: [{variantKey: "on", percentage: 100}]},
              {priority: 2, conditions: [{field: "plan.tier", operator: "in", value: ["gold", 3, true, null, {x: [1.5]}]}], allocations: [{variantKey: "on", percentage: 50}, {variantKey: "off", percentage: 50}]}]
    }) { ${CONFIG_FIELDS} }
    d: upsertFlagConfig(name: "checkout", input: {stage: "development", clientId: "default:ios-app", enabled: false, defaultVariantKey: "on", rolloutPercentage: 25}) { stage clientId enabled rules { id } activeFrom enrollmentCutoff }
  }`);
  t.notOk(up.body.errors, 'no errors');
  const p = up.body.data?.p;
  t.match(p, {
    stage: 'production',
    clientId: null,
    enabled: true,
    defaultVariantKey: 'off',
    rolloutPercentage: 100,
    activeFrom: '2020-01-01T00:00:00.000Z',
    activeUntil: null,
    enrollmentCutoff: 90.5,
    rules: [
      { id: 'nl', priority: 1, conditions: [{ field: 'country', operator: '==', value: 'NL' }], allocations: [{ variantKey: 'on', percentage: 100 }] },
      { id: /^r_/, priority: 2, conditions: [{ field: 'plan.tier', operator: 'in', value: ['gold', 3, true, null, { x: [1.5] }] }] },
    ],
  });
  t.same(up.body.data?.d, { stage: 'development', clientId: 'default:ios-app', enabled: false, rules: [], activeFrom: null, enrollmentCutoff: null });

  const all = await gql(n, admin, `{ all: flagConfigs(name: "checkout") { stage clientId } prod: flagConfigs(name: "checkout", stage: "Production") { ${CONFIG_FIELDS} } byClient: flagConfigs(name: "checkout", stage: "development", clientId: "default:ios-app") { clientId } }`);
  t.same(all.body.data?.all, [{ stage: 'development', clientId: 'default:ios-app' }, { stage: 'production', clientId: null }]);
  t.same(all.body.data?.prod, [p], 'flagConfigs answers what upsertFlagConfig answered');
  t.same(all.body.data?.byClient, [{ clientId: 'default:ios-app' }]);

  const sw = await gql(n, admin, `mutation {
    off: setFlagConfigEnabled(name: "checkout", stage: "production", enabled: false) { stage enabled }
    on: setFlagConfigEnabled(name: "checkout", stage: "production", clientId: null, enabled: true) { enabled }
    del: deleteFlagConfig(name: "checkout", stage: "development", clientId: "default:ios-app")
    again: deleteFlagConfig(name: "checkout", stage: "development", clientId: "default:ios-app")
  }`);
  t.same(sw.body.data, { off: { stage: 'production', enabled: false }, on: { enabled: true }, del: true, again: null });
  expectFieldError(t, sw, ['again'], 'NOT_FOUND', 'deleting a configuration twice');
});

t.test('Flag.configs reads the configurations of the flag', async (t) => {
  const r = await gql(n, admin, `{ flag(name: "checkout") { configs { stage enabled enrollmentCutoff } } }`);
  t.same(r.body, { data: { flag: { configs: [{ stage: 'production', enabled: true, enrollmentCutoff: 90.5 }] } } });
});

t.test('evaluate: aliases side by side, reason only when selected, Any context literals and variables', async (t) => {
  const ev = await createKey(n, { permissions: ['CanEvaluate'], application: 'default' });
  const r = await gql(n, ev, `query($ctx: Any, $tier: Any, $nope: String) {
    nl: evaluate(key: "checkout", userId: "u1", stage: "production", context: {country: "NL"}) { key variant reason { code message ruleId } }
    de: evaluate(key: "checkout", userId: "u2", stage: "production", context: {country: "DE"}) { key variant reason { code ruleId } }
    viaVar: evaluate(key: "checkout", userId: "u3", stage: "production", context: $ctx) { key }
    nested: evaluate(key: "checkout", userId: "u4", stage: "production", context: {country: "DE", plan: {tier: $tier}}) { reason { code ruleId } }
    missingNested: evaluate(key: "checkout", userId: "u4", stage: "production", context: {country: $nope}) { reason { code } }
    plain: evaluate(key: "checkout", userId: "u5", stage: "production") { key variant }
    dep: evaluate(key: "checkout-banner", userId: "u1", stage: "production", context: {country: "NL"}) { key variant reason { code } }
  }`, { ctx: { country: 'NL' }, tier: 'gold' });
  t.notOk(r.body.errors, 'no errors');
  const d = r.body.data!;
  t.match(d.nl, { key: 'on', variant: true, reason: { code: 'rule_matched', message: /priority 1/, ruleId: 'nl' } });
  t.same(d.de, { key: 'off', variant: false, reason: { code: 'default', ruleId: null } });
  t.same(d.viaVar, { key: 'on' }, 'context from a variable');
  t.match(d.nested, { reason: { code: 'rule_matched', ruleId: /^r_/ } }, 'a variable nested in an Any object literal');
  t.same(d.missingNested, { reason: { code: 'default' } }, 'an absent nested variable leaves its field out');
  t.same(d.plain, { key: 'off', variant: false }, 'no reason selected, none answered');
  t.same(d.dep, { key: null, variant: null, reason: { code: 'config_missing' } }, 'a terminal outcome without a configuration');
  t.notOk('reason' in d.plain, 'reason absent when not selected');
});

t.test('killSwitch and replaceKillSwitch; a kill-switch change reaches evaluation at once', async (t) => {
  const ev = await createKey(n, { permissions: ['CanEvaluate'], application: 'default' });
  const set = await gql(n, admin, `mutation { replaceKillSwitch(rules: [{flag: "checkout", environment: "Production"}, {application: "ios"}]) { flag application environment } }`);
  t.same(set.body, { data: { replaceKillSwitch: [{ flag: 'checkout', application: null, environment: 'production' }, { flag: null, application: 'ios', environment: null }] } });
  const read = await gql(n, admin, '{ killSwitch { flag application environment } }');
  t.same(read.body.data?.killSwitch, set.body.data?.replaceKillSwitch);
  const e1 = await gql(n, ev, '{ evaluate(key: "checkout", userId: "u1", stage: "production", context: {country: "NL"}) { key variant reason { code message } } }');
  t.match(e1.body.data?.evaluate, { key: 'off', variant: false, reason: { code: 'killswitch', message: /kill switch/ } });
  const clear = await gql(n, admin, 'mutation { replaceKillSwitch(rules: []) { flag } }');
  t.same(clear.body, { data: { replaceKillSwitch: [] } });
  const e2 = await gql(n, ev, '{ evaluate(key: "checkout", userId: "u1", stage: "production", context: {country: "NL"}) { reason { code } } }');
  t.same(e2.body.data?.evaluate, { reason: { code: 'rule_matched' } });
});

t.test('management keys: create, list, rotate, disable, delete', async (t) => {
  const c = await gql(n, admin, `mutation {
    createManagementKey(input: {name: "ci", permissions: [CanEvaluate, CanRead], application: "default", environment: "production"}) {
      id key managementKey { id name permissions application environment disabled createdAt rotatedAt }
    }
  }`);
  const ck = c.body.data?.createManagementKey;
  t.match(ck, { id: String, key: /^[0-9a-f]{64}$/, managementKey: { name: 'ci', permissions: ['CanEvaluate', 'CanRead'], application: 'default', environment: 'production', disabled: false, createdAt: ISO, rotatedAt: null } });
  t.equal(ck.managementKey.id, ck.id);
  const works = await gql(n, ck.key, '{ environments }');
  t.equal(works.status, 200, 'the new key works');

  const list = await gql(n, admin, '{ managementKeys { id name permissions disabled } }');
  t.match(list.body.data?.managementKeys, [{ name: String }]);
  t.ok(list.body.data?.managementKeys.some((k: any) => k.id === ck.id && k.name === 'ci'), 'the new key is listed');
  t.notOk(JSON.stringify(list.body).includes(ck.key), 'never a key value in the list');

  const rot = await gql(n, admin, `mutation($id: ID!) { rotateManagementKey(id: $id) { id key managementKey { id rotatedAt } } }`, { id: ck.id });
  const rk = rot.body.data?.rotateManagementKey;
  t.match(rk, { id: ck.id, key: /^[0-9a-f]{64}$/, managementKey: { id: ck.id, rotatedAt: ISO } });
  t.not(rk.key, ck.key, 'a new value');
  t.equal((await gql(n, ck.key, '{ environments }')).status, 401, 'the old value stops working');
  t.equal((await gql(n, rk.key, '{ environments }')).status, 200, 'the new value works');

  const dis = await gql(n, admin, `mutation($id: ID!) { disableManagementKey(id: $id) { id disabled } }`, { id: ck.id });
  t.same(dis.body, { data: { disableManagementKey: { id: ck.id, disabled: true } } });
  t.equal((await gql(n, rk.key, '{ environments }')).status, 401, 'a disabled key stops working');

  const del = await gql(n, admin, `mutation($id: ID!) { a: deleteManagementKey(id: $id) b: deleteManagementKey(id: $id) }`, { id: ck.id });
  t.same(del.body.data, { a: true, b: null });
  expectFieldError(t, del, ['b'], 'NOT_FOUND', 'deleting a key twice');
});

t.test('deleteFlag', async (t) => {
  const blocked = await gql(n, admin, 'mutation { deleteFlag(name: "checkout") }');
  expectFieldError(t, blocked, ['deleteFlag'], 'CONFLICT', 'a flag another flag depends on');
  const r = await gql(n, admin, 'mutation { a: deleteFlag(name: "checkout-banner") b: deleteFlag(name: "checkout-banner") }');
  t.same(r.body.data, { a: true, b: null });
  expectFieldError(t, r, ['b'], 'NOT_FOUND', 'deleting twice');
  const gone = await gql(n, admin, '{ flag(name: "checkout-banner") { name } flags { name } }');
  t.same(gone.body.data, { flag: null, flags: [{ name: 'checkout' }] });
});

t.test('every GraphQL error code on purpose; the failed field is null and its siblings answer', async (t) => {
  const reader = await createKey(n, { permissions: ['CanRead'], application: 'default' });
  const evaluator = await createKey(n, { permissions: ['CanEvaluate'], application: 'default', environment: 'production' });
  const orgWideEvaluator = await createKey(n, { permissions: ['CanEvaluate'] });

  // BAD_REQUEST: input that fails validation (services' own checks, same as REST).
  const bad = await gql(n, evaluator, `{
    emptyUser: evaluate(key: "checkout", userId: "", stage: "production") { key }
    emptyStage: evaluate(key: "checkout", userId: "u", stage: "") { key }
    listContext: evaluate(key: "checkout", userId: "u", stage: "production", context: [1]) { key }
    ok: evaluate(key: "checkout", userId: "u", stage: "production") { key }
  }`);
  expectFieldError(t, bad, ['emptyUser'], 'BAD_REQUEST');
  t.match(bad.body.errors?.find((e) => e.path[0] === 'emptyUser')?.message, /userId/);
  expectFieldError(t, bad, ['emptyStage'], 'BAD_REQUEST');
  expectFieldError(t, bad, ['listContext'], 'BAD_REQUEST');
  t.same(bad.body.data?.ok, { key: 'off' }, 'the sibling answers');
  const badType = await gql(n, admin, `mutation { createFlag(input: {name: "x", project: "default", type: "colour", variants: []}) { name } }`);
  expectFieldError(t, badType, ['createFlag'], 'BAD_REQUEST', 'unknown flag type');
  const badField = await gql(n, admin, `mutation { upsertFlagConfig(name: "checkout", input: {stage: "production", enabled: true, defaultVariantKey: "on", rolloutPercentage: 100, rules: [{priority: 1, conditions: [{field: "bad-field", operator: "==", value: 1}], allocations: [{variantKey: "on", percentage: 100}]}]}) { stage } }`);
  expectFieldError(t, badField, ['upsertFlagConfig'], 'BAD_REQUEST', 'hyphen in a condition field');
  t.match(badField.body.errors?.[0].message, /field/);

  // FORBIDDEN: permission or scope.
  const forb = await gql(n, reader, `mutation { createFlag(input: {name: "y", project: "default", type: "boolean", variants: []}) { name } }`);
  expectFieldError(t, forb, ['createFlag'], 'FORBIDDEN', 'CanRead key writing');
  const forb2 = await gql(n, reader, `{ evaluate(key: "checkout", userId: "u", stage: "production") { key } flags { name } managementKeys { id } }`);
  expectFieldError(t, forb2, ['evaluate'], 'FORBIDDEN', 'CanRead key evaluating');
  expectFieldError(t, forb2, ['managementKeys'], 'FORBIDDEN', 'non-admin listing keys');
  t.same(forb2.body.data?.flags, [{ name: 'checkout' }], 'the sibling answers');
  const forb3 = await gql(n, evaluator, `{ evaluate(key: "checkout", userId: "u", stage: "development") { key } }`);
  expectFieldError(t, forb3, ['evaluate'], 'FORBIDDEN', 'environment scope');
  const forb4 = await gql(n, reader, `mutation { replaceKillSwitch(rules: []) { flag } }`);
  expectFieldError(t, forb4, ['replaceKillSwitch'], 'FORBIDDEN', 'kill switch without CanWrite');

  // NOT_FOUND
  const nf = await gql(n, reader, `{ flag(name: "nope") { name } environments }`);
  expectFieldError(t, nf, ['flag'], 'NOT_FOUND', 'flag(name) for an unknown name');
  t.same(nf.body.data?.environments, ['development', 'production', 'qa'], 'the sibling answers');
  const nf2 = await gql(n, evaluator, `{ evaluate(key: "nope", userId: "u", stage: "production") { key } }`);
  expectFieldError(t, nf2, ['evaluate'], 'NOT_FOUND', 'evaluating an unknown flag');

  // CONFLICT
  const cf = await gql(n, admin, `mutation { createFlag(input: {name: "checkout", project: "default", type: "boolean", variants: []}) { name } }`);
  expectFieldError(t, cf, ['createFlag'], 'CONFLICT', 'existing name');
  const cf2 = await gql(n, admin, `mutation { replaceEnvironments(environments: ["development"]) }`);
  expectFieldError(t, cf2, ['replaceEnvironments'], 'CONFLICT', 'removing an environment in use');

  // AUTH_NOT_AUTHORIZED (no status): an organization-wide key asking for evaluate.
  const na = await gql(n, orgWideEvaluator, `{ evaluate(key: "checkout", userId: "u", stage: "production") { key } environments }`);
  const e = expectFieldError(t, na, ['evaluate'], 'AUTH_NOT_AUTHORIZED', 'org-wide key evaluating');
  t.same(Object.keys(e?.extensions ?? {}), ['code'], 'extensions carry only the code');
  expectFieldError(t, na, ['environments'], 'FORBIDDEN', 'CanEvaluate alone cannot read');
});

t.test('mutations run in the written order; a failing middle one does not stop the later ones', async (t) => {
  const r = await gql(n, admin, `mutation Ordered {
    a: createFlag(input: {name: "ordered", project: "default", type: "boolean", variants: [{key: "on", value: true, valueType: "boolean"}, {key: "off", value: false, valueType: "boolean"}]}) { name }
    b: upsertFlagConfig(name: "ordered", input: {stage: "production", enabled: true, defaultVariantKey: "on", rolloutPercentage: 100}) { stage enabled }
    c: createFlag(input: {name: "ordered", project: "default", type: "boolean", variants: []}) { name }
    d: setFlagConfigEnabled(name: "ordered", stage: "production", enabled: false) { enabled }
    e: updateFlag(name: "ordered", input: {description: "after"}) { description configs { stage enabled } }
  }`);
  t.same(r.body.data, {
    a: { name: 'ordered' },
    b: { stage: 'production', enabled: true },
    c: null,
    d: { enabled: false },
    e: { description: 'after', configs: [{ stage: 'production', enabled: false }] },
  }, 'each mutation saw the ones before it');
  t.equal(r.body.errors?.length, 1, 'one error');
  expectFieldError(t, r, ['c'], 'CONFLICT', 'the failing middle mutation');
  const ev = await createKey(n, { permissions: ['CanEvaluate'], application: 'default' });
  const after = await gql(n, ev, '{ evaluate(key: "ordered", userId: "u", stage: "production") { key reason { code } } }');
  t.same(after.body.data?.evaluate, { key: 'on', reason: { code: 'config_disabled' } }, 'evaluation sees the last write');
});

t.test('a field after an organization-level write in the same document reads the new snapshot', async (t) => {
  // renameEnvironment reloads the whole organization (a new snapshot object); Flag.configs reads
  // the snapshot, so it must see the renamed stage.
  const r = await gql(n, admin, `mutation {
    renameEnvironment(from: "production", to: "prod")
    updateFlag(name: "ordered", input: {}) { environments configs { stage } }
    back: renameEnvironment(from: "prod", to: "production")
  }`);
  t.same(r.body, {
    data: {
      renameEnvironment: ['development', 'prod', 'qa'],
      updateFlag: { environments: ['development', 'prod', 'qa'], configs: [{ stage: 'prod' }] },
      back: ['development', 'production', 'qa'],
    },
  });
});

t.test('Any accepts every inline literal kind and variables; DateTime validates', async (t) => {
  const r = await gql(n, admin, `mutation($obj: Any, $d: DateTime, $missing: Any) {
    createFlag(input: {name: "json-flag", project: "default", type: "json", variants: [
      {key: "obj", value: {a: 1, b: [true, null, "s", 2.5], c: {d: {}}}, valueType: "json"},
      {key: "list", value: [1, [2], {x: "y"}], valueType: "json"},
      {key: "str", value: "text", valueType: "json"},
      {key: "num", value: -12, valueType: "json"},
      {key: "float", value: 1.5e3, valueType: "json"},
      {key: "bool", value: false, valueType: "json"},
      {key: "null", value: null, valueType: "json"},
      {key: "absent", valueType: "json"},
      {key: "var", value: $obj, valueType: "json"},
      {key: "nestedVar", value: {inner: $obj, list: [$obj, $missing]}, valueType: "json"}
    ]}) { variants { key value } }
    upsertFlagConfig(name: "json-flag", input: {stage: "development", enabled: true, defaultVariantKey: "obj", rolloutPercentage: 100, activeFrom: $d, activeUntil: "2999-12-31T23:59:59.999-01:00"}) { activeFrom activeUntil }
  }`, { obj: { deep: { list: [1, 'two'] }, __proto__x: 1 }, d: '2024-05-01T12:00:00+02:00' });
  t.notOk(r.body.errors, 'no errors');
  const obj = { deep: { list: [1, 'two'] }, __proto__x: 1 };
  t.same(r.body.data?.createFlag.variants, [
    { key: 'obj', value: { a: 1, b: [true, null, 's', 2.5], c: { d: {} } } },
    { key: 'list', value: [1, [2], { x: 'y' }] },
    { key: 'str', value: 'text' },
    { key: 'num', value: -12 },
    { key: 'float', value: 1500 },
    { key: 'bool', value: false },
    { key: 'null', value: null },
    { key: 'absent', value: null },
    { key: 'var', value: obj },
    { key: 'nestedVar', value: { inner: obj, list: [obj, null] } },
  ]);
  t.same(r.body.data?.upsertFlagConfig, { activeFrom: '2024-05-01T10:00:00.000Z', activeUntil: '3000-01-01T00:59:59.999Z' }, 'DateTime normalised to UTC');
  expectRequestError(t, await gql(n, admin, '{ evaluate(key: "a", userId: "u", stage: "s", context: {__proto__: {x: 1}}) { key } }'), /__proto__/, '__proto__ in an Any literal');
  const viaVar = await gql(n, admin, 'mutation($v: Any) { updateFlag(name: "json-flag", input: {variants: [{key: "obj", value: $v, valueType: "json"}]}) { variants { value } } }', { v: JSON.parse('{"__proto__": {"polluted": true}}') });
  t.notOk(viaVar.body.errors, 'a __proto__ key in a variable is plain data');
  t.equal(JSON.stringify(viaVar.body.data?.updateFlag.variants[0].value), '{"__proto__":{"polluted":true}}', 'kept as an own key');
  t.equal(({} as any).polluted, undefined, 'no prototype pollution');
});

t.test('the bootstrap admin key cannot evaluate (no CanEvaluate): FORBIDDEN, not AUTH_NOT_AUTHORIZED', async (t) => {
  const r = await gql(n, admin, '{ evaluate(key: "checkout", userId: "u", stage: "production") { key } }');
  expectFieldError(t, r, ['evaluate'], 'FORBIDDEN');
});

t.test('viewer and explainEvaluation answer the org-wide admin key', async (t) => {
  const r = await gql(n, admin, `{
    viewer { id name permissions application environment disabled createdAt rotatedAt }
    explainEvaluation(key: "checkout", userId: "u", stage: "production", context: {}, clientId: null) {
      key variant reason { code message ruleId }
    }
  }`);
  t.notOk(r.body.errors, 'no errors');
  t.match(r.body.data?.viewer, { id: String, permissions: ['Admin', 'CanRead', 'CanWrite'], application: null, environment: null, disabled: false });
  t.match(r.body.data?.explainEvaluation, { reason: { code: String, message: String } });
});

t.test('auditLog: every AuditEvent field, for the writes above (more in test/audit/)', async (t) => {
  const r = await gql(n, admin, `{
    org: auditLog(type: "organization", first: 500) {
      id at action application before after
      actor { keyId keyName operator }
      target { type name stage clientId }
    }
    config: auditLog(target: "json-flag", first: 1) { action target { type name stage clientId } application }
  }`);
  t.notOk(r.body.errors, 'no errors');
  const org = r.body.data?.org as any[];
  t.match(org.at(-1), {
    id: /^[0-9]+$/, at: ISO, action: 'org.applications', application: null,
    before: { applications: ['default'] }, after: { applications: ['default', 'mobile'] },
    actor: { keyId: String, keyName: 'admin', operator: false },
    target: { type: 'organization', name: 'default', stage: null, clientId: null },
  }, 'the first write of this file: replaceApplications');
  t.same(r.body.data?.config, [{ action: 'flag.update', target: { type: 'flag', name: 'json-flag', stage: null, clientId: null }, application: 'default' }], 'the newest event of json-flag');
});

t.test('segments: createSegment, updateSegment, deleteSegment, segments, segment, Rule.segments (docs/api.md#segments)', async (t) => {
  const SEGMENT = 'name description application conditions { field operator value } createdAt updatedAt';
  const c = await gql(n, admin, `mutation {
    s1: createSegment(input: {name: "gql-beta", description: "Beta plan", application: "default", conditions: [{field: "plan", operator: "in", value: ["beta", "pro"]}]}) { ${SEGMENT} }
    s2: createSegment(input: {name: "gql-all"}) { ${SEGMENT} }
  }`);
  t.notOk(c.body.errors, c.text);
  t.match(c.body.data?.s1, { name: 'gql-beta', description: 'Beta plan', application: 'default', conditions: [{ field: 'plan', operator: 'in', value: ['beta', 'pro'] }], createdAt: ISO, updatedAt: ISO });
  t.match(c.body.data?.s2, { name: 'gql-all', description: null, application: null, conditions: [] }, 'an org-wide key: organization-wide by default');
  const u = await gql(n, admin, `mutation { updateSegment(name: "gql-beta", input: {description: "Beta", conditions: [{field: "plan", operator: "==", value: "beta"}]}) { ${SEGMENT} } }`);
  t.match(u.body.data?.updateSegment, { description: 'Beta', conditions: [{ field: 'plan', operator: '==', value: 'beta' }] });
  // Reads answer what REST answers.
  const r = await gql(n, admin, `{ segments { ${SEGMENT} } segment(name: "gql-beta") { ${SEGMENT} } }`);
  t.same(r.body.data?.segment, (await n.req('GET', '/api/segments/gql-beta', { key: admin })).body, 'segment(name) equals GET /api/segments/{name}');
  t.same(r.body.data?.segments, (await n.req('GET', '/api/segments', { key: admin })).body, 'segments equals GET /api/segments');

  // A rule naming segments (RuleInput.segments, Rule.segments).
  t.equal((await gql(n, admin, `mutation { createFlag(input: {name: "gql-seg-flag", project: "default", type: "boolean", variants: [{key: "on", value: true, valueType: "boolean"}, {key: "off", value: false, valueType: "boolean"}]}) { name } }`)).body.data?.createFlag?.name, 'gql-seg-flag');
  const up = await gql(n, admin, `mutation { upsertFlagConfig(name: "gql-seg-flag", input: {stage: "production", enabled: true, defaultVariantKey: "off", rolloutPercentage: 100,
    rules: [{id: "r1", priority: 1, conditions: [], segments: ["gql-beta", "gql-all"], allocations: [{variantKey: "on", percentage: 100}]}]}) { rules { id segments } } }`);
  t.same(up.body, { data: { upsertFlagConfig: { rules: [{ id: 'r1', segments: ['gql-beta', 'gql-all'] }] } } });
  const unknown = await gql(n, admin, `mutation { upsertFlagConfig(name: "gql-seg-flag", input: {stage: "production", enabled: true, defaultVariantKey: "off", rolloutPercentage: 100,
    rules: [{priority: 1, conditions: [], segments: ["nope"], allocations: [{variantKey: "on", percentage: 100}]}]}) { stage } }`);
  t.match(expectFieldError(t, unknown, ['upsertFlagConfig'], 'BAD_REQUEST'), { message: /unknown segment 'nope'/ });

  // Errors: the same codes as REST.
  const dup = await gql(n, admin, 'mutation { createSegment(input: {name: "gql-all"}) { name } }');
  t.match(expectFieldError(t, dup, ['createSegment'], 'CONFLICT'), { message: /already exists/ });
  const inUse = await gql(n, admin, 'mutation { deleteSegment(name: "gql-beta") }');
  t.match(expectFieldError(t, inUse, ['deleteSegment'], 'CONFLICT'), { message: /flag 'gql-seg-flag'/ });
  expectFieldError(t, await gql(n, admin, '{ segment(name: "nope") { name } }'), ['segment'], 'NOT_FOUND');
  const reader = await createKey(n, { permissions: ['CanRead'] });
  expectFieldError(t, await gql(n, reader, 'mutation { updateSegment(name: "gql-all", input: {description: "x"}) { name } }'), ['updateSegment'], 'FORBIDDEN');

  t.equal((await gql(n, admin, 'mutation { upsertFlagConfig(name: "gql-seg-flag", input: {stage: "production", enabled: true, defaultVariantKey: "off", rolloutPercentage: 100, rules: []}) { stage } }')).body.data?.upsertFlagConfig?.stage, 'production');
  t.same((await gql(n, admin, 'mutation { deleteSegment(name: "gql-beta") }')).body, { data: { deleteSegment: true } });
  t.same((await gql(n, admin, '{ segments { name } }')).body, { data: { segments: [{ name: 'gql-all' }] } });
});

t.test('scheduled changes: scheduleFlagChange, Flag.schedules, cancelSchedule, AuditEvent.scheduleId', async (t) => {
  const at = new Date(Date.now() + 60_000).toISOString();
  const made = await gql(n, admin, `mutation {
    createFlag(input: {name: "sched", project: "default", type: "boolean", variants: [{key: "on", value: true, valueType: "boolean"}, {key: "off", value: false, valueType: "boolean"}]}) { name }
    upsertFlagConfig(name: "sched", input: {stage: "production", clientId: "c1", enabled: true, defaultVariantKey: "on", rolloutPercentage: 100}) { stage }
    a: scheduleFlagChange(name: "sched", input: {at: "${at}", stage: "production", clientId: "c1", enabled: null,
      config: {stage: "production", clientId: "c1", enabled: true, defaultVariantKey: "off", rolloutPercentage: 100}}) { id status }
    b: scheduleFlagChange(name: "sched", input: {at: "${at}", stage: "production", clientId: "c1", enabled: false}) { id }
  }`);
  t.notOk(made.body.errors, 'no errors');
  const id = made.body.data?.a.id;
  const read = await gql(n, admin, `{ flag(name: "sched") { schedules {
    id flag at stage clientId enabled config { stage clientId defaultVariantKey } createdBy { keyId keyName } status appliedAt error
  } } }`);
  t.match(read.body.data?.flag.schedules.find((s: { id: string }) => s.id === id), {
    id, flag: 'sched', at, stage: 'production', clientId: 'c1', enabled: null, config: { stage: 'production', clientId: 'c1', defaultVariantKey: 'off' },
    createdBy: { keyId: String, keyName: 'admin' }, status: 'pending', appliedAt: null, error: null,
  });
  const cancel = await gql(n, admin, `mutation { cancelSchedule(name: "sched", id: "${id}") }`);
  t.same(cancel.body, { data: { cancelSchedule: true } });
  const log = await gql(n, admin, '{ auditLog(target: "sched", first: 1) { action scheduleId } }');
  t.same(log.body.data?.auditLog, [{ action: 'schedule.cancel', scheduleId: null }], 'only a scheduled change names its schedule');
});

t.test('flag insights, lifecycle: purpose, Flag.insights, insightsSettings, setInsightsSettings, flagConnection(status:)', async (t) => {
  const made = await gql(n, admin, `mutation {
    createFlag(input: {name: "lifecycle", project: "default", type: "boolean", purpose: "experiment", variants: [{key: "on", value: true, valueType: "boolean"}]}) { purpose }
    updateFlag(name: "lifecycle", input: {purpose: "permission"}) { purpose }
    setInsightsSettings(input: {unusedAfter: "P3D", lifetimes: {release: "P30D", experiment: "P30D", operational: "P1D", killSwitch: null, permission: null}}) {
      unusedAfter lifetimes { release experiment operational killSwitch permission }
    }
  }`);
  t.same(made.body.data, {
    createFlag: { purpose: 'experiment' },
    updateFlag: { purpose: 'permission' },
    setInsightsSettings: { unusedAfter: 'P3D', lifetimes: { release: 'P30D', experiment: 'P30D', operational: 'P1D', killSwitch: null, permission: null } },
  });
  const read = await gql(n, admin, `{
    insightsSettings { unusedAfter }
    flag(name: "lifecycle") { insights(from: "2026-01-01T00:00:00Z", to: "2026-01-02T00:00:00Z", bucket: "hour") { status reasons lastEvaluatedAt { stage at } series { stage start count variants } } }
    flagConnection(first: 1, status: "new", search: "lifecycle") { totalCount nodes { name } }
  }`);
  t.same(read.body.data?.insightsSettings, { unusedAfter: 'P3D' });
  t.match(read.body.data?.flag.insights, { status: 'new', reasons: [], series: [] });
  t.same(read.body.data?.flagConnection.nodes, [{ name: 'lifecycle' }]);
  expectFieldError(t, await gql(n, admin, '{ flag(name: "lifecycle") { insights(bucket: "week") { status } } }'), ['flag', 'insights'], 'BAD_REQUEST');
});

t.test('change requests: every field and input of docs/change-requests.md', async (t) => {
  const REVIEW = 'reviewer { keyId keyName operator } decision hash revision comment at voided';
  const ALL = `id title description state approved revision hash author { keyName } changes diff environments
    requiredApprovals { stage required approvals } approvals { ${REVIEW} } rejections { ${REVIEW} }
    createdAt updatedAt appliedAt scheduledAt error reverts
    history { revisions { revision hash author { keyName } changes diff environments createdAt } reviews { ${REVIEW} } }`;
  const made = await gql(n, admin, `mutation {
    createFlag(input: {name: "cr-f", project: "default", type: "boolean", variants: [{key: "on", value: true, valueType: "boolean"}, {key: "off", value: false, valueType: "boolean"}]}) { name }
    upsertFlagConfig(name: "cr-f", input: {stage: "production", clientId: "c9", enabled: true, defaultVariantKey: "off", rolloutPercentage: 100}) { stage }
    createChangeRequest(input: {title: "cr", description: "d", changes: [
      {op: "setConfigEnabled", flag: "cr-f", stage: "production", clientId: "c9", enabled: false}
      {op: "upsertSegment", segment: "cr-s", input: {application: "default", conditions: []}}
    ]}) { ${ALL} }
  }`);
  t.notOk(made.body.errors, 'no errors');
  const cr = made.body.data?.createChangeRequest;
  t.match(cr, { title: 'cr', description: 'd', state: 'open', approved: true, revision: 1, history: null }, 'a mutation answers the request without its history');
  const upd = await gql(n, admin, `mutation { updateChangeRequest(id: "${cr.id}", input: {title: "cr2", description: null, changes: [{op: "setConfigEnabled", flag: "cr-f", stage: "production", clientId: "c9", enabled: false}]}) { id hash title } }`);
  t.match(upd.body.data?.updateChangeRequest, { title: 'cr2' });
  const hash = upd.body.data?.updateChangeRequest.hash;
  const pv = await gql(n, admin, `mutation { previewChangeRequest(id: "${cr.id}", contexts: [{userId: "u", clientId: "c9", context: {a: 1}}], sample: null) {
    evaluated changed flags { flag stage evaluated changed transitions { from to count } } examples { userId flag stage from to } } }`);
  t.match(pv.body.data?.previewChangeRequest, { evaluated: 1, flags: [{ flag: 'cr-f', stage: 'production', evaluated: 1, transitions: [{ count: 1 }] }], examples: Array });
  const rv = await gql(n, admin, `mutation { reviewChangeRequest(id: "${cr.id}", decision: "approve", hash: "${hash}", comment: "ok") { id } }`);
  t.equal(rv.body.errors?.[0]?.extensions?.code, 'FORBIDDEN', 'the Admin key lacks CanApprove');
  const at = new Date(Date.now() + 3_600_000).toISOString();
  t.match((await gql(n, admin, `mutation { scheduleChangeRequest(id: "${cr.id}", at: "${at}", hash: "${hash}") { state } }`)).body.data, { scheduleChangeRequest: { state: 'scheduled' } });
  t.match((await gql(n, admin, `mutation { rebaseChangeRequest(id: "${cr.id}") { revision state } }`)).body.data, { rebaseChangeRequest: { revision: 3, state: 'open' } });
  const h3 = (await gql(n, admin, `{ changeRequest(id: "${cr.id}") { hash } }`)).body.data?.changeRequest.hash;
  t.match((await gql(n, admin, `mutation { applyChangeRequest(id: "${cr.id}", hash: "${h3}") { state } }`)).body.data, { applyChangeRequest: { state: 'applied' } });
  const rev = (await gql(n, admin, `mutation { revertChangeRequest(id: "${cr.id}") { id reverts } }`)).body.data?.revertChangeRequest;
  t.equal(rev.reverts, cr.id);
  t.match((await gql(n, admin, `mutation { closeChangeRequest(id: "${rev.id}") { state } }`)).body.data, { closeChangeRequest: { state: 'closed' } });
  const full = await gql(n, admin, `{ changeRequest(id: "${cr.id}") { history { revisions { revision } reviews { voided } } } }`);
  t.same(full.body.data?.changeRequest.history.revisions.map((r: { revision: number }) => r.revision), [1, 2, 3], 'the history of revisions');
  const page = await gql(n, admin, '{ changeRequestConnection(state: null, first: 10, after: null) { nodes { id } totalCount pageInfo { endCursor hasNextPage } } }');
  t.equal(page.body.data?.changeRequestConnection.totalCount, 2);
  const log = await gql(n, admin, `{ auditLog(target: "${cr.id}", first: 1) { action changeRequestId } }`);
  t.same(log.body.data?.auditLog, [{ action: 'change.apply', changeRequestId: cr.id }]);
});

t.test('environment policies: environmentPolicy, setEnvironmentPolicy, AuditEvent.bypass', async (t) => {
  const set = await gql(n, admin, `mutation { setEnvironmentPolicy(stage: "production", input: {requiredApprovals: 1, allowSelfApproval: true, allowBypass: true}) {
    environment requiredApprovals allowSelfApproval allowBypass } }`);
  t.same(set.body.data?.setEnvironmentPolicy, { environment: 'production', requiredApprovals: 1, allowSelfApproval: true, allowBypass: true }, set.text);
  const read = await gql(n, admin, '{ environmentPolicy(stage: "production") { environment requiredApprovals allowSelfApproval allowBypass } }');
  t.same(read.body.data?.environmentPolicy, { environment: 'production', requiredApprovals: 1, allowSelfApproval: true, allowBypass: true });
  const made = await gql(n, admin, 'mutation { createFlag(input: {name: "pol-f", project: "default", type: "boolean", variants: [{key: "on", value: true, valueType: "boolean"}]}) { name } }');
  t.notOk(made.body.errors, made.text);
  const bypassed = await n.req('POST', '/api/graphql', {
    key: admin,
    headers: { 'x-vexil-bypass-review': 'fields test' },
    body: { query: 'mutation { upsertFlagConfig(name: "pol-f", input: {stage: "production", enabled: true, defaultVariantKey: "on", rolloutPercentage: 100}) { stage } }' },
  });
  t.same(bypassed.body.data?.upsertFlagConfig, { stage: 'production' }, bypassed.text);
  const log = await gql(n, admin, '{ auditLog(target: "pol-f", first: 1) { action bypass { reason } } }');
  t.same(log.body.data?.auditLog, [{ action: 'config.upsert', bypass: { reason: 'fields test' } }]);
  const reset = await gql(n, admin, 'mutation { setEnvironmentPolicy(stage: "production", input: {requiredApprovals: 0}) { requiredApprovals } }');
  t.same(reset.body.data?.setEnvironmentPolicy, { requiredApprovals: 0 });
});

t.test('webhooks (docs/webhooks.md): every webhook field', async (t) => {
  const E = 'id url events description enabled disabledReason createdAt updatedAt';
  const c = await gql(n, admin, `mutation { createWebhook(input: {url: "https://hooks.example.com/gql", events: ["flag.*"], description: "d", enabled: true}) { secret endpoint { ${E} } } }`);
  t.notOk(c.body.errors, 'no errors');
  const id = c.body.data?.createWebhook.endpoint.id;
  t.match(c.body.data?.createWebhook.secret, /^whsec_/);
  const test = await gql(n, admin, `mutation { sendWebhookTest(id: "${id}") }`);
  const messageId = test.body.data?.sendWebhookTest;
  t.match(messageId, /^msg_/);
  const q = await gql(n, admin, `{ webhooks { ${E} } webhook(id: "${id}") { id deliveries(first: 10, after: null) { id messageId type attempt at status durationMs error } } }`);
  t.notOk(q.body.errors);
  t.equal(q.body.data?.webhooks.length, 1);
  const more = await gql(n, admin, `mutation {
    replayWebhookMessage(id: "${id}", messageId: "${messageId}")
    rotateWebhookSecret(id: "${id}") { id secret }
    updateWebhook(id: "${id}", input: {url: "https://hooks.example.com/gql2", events: ["*"], enabled: false}) { url enabled }
  }`);
  t.notOk(more.body.errors);
  t.same((await gql(n, admin, `mutation { deleteWebhook(id: "${id}") }`)).body, { data: { deleteWebhook: true } });
});

t.test('every output field and every input field of the schema was exercised above', async (t) => {
  const schema = vexilSchema();
  const info = new TypeInfo(schema);
  const used = new Set<string>();
  for (const q of sent) {
    visit(parse(q), visitWithTypeInfo(info, {
      Field(node) {
        const parent = info.getParentType();
        if (parent) used.add(`${parent.name}.${node.name.value}`);
      },
      ObjectField(node) {
        const parent = info.getParentInputType();
        const named = parent ? getNamedType(parent) : undefined;
        if (named && isInputObjectType(named)) used.add(`${named.name}.${node.name.value}`);
      },
    }));
  }
  const all: string[] = [];
  for (const type of Object.values(schema.getTypeMap())) {
    if (type.name.startsWith('__')) continue;
    if (isObjectType(type) || isInputObjectType(type)) for (const f of Object.keys(type.getFields())) all.push(`${type.name}.${f}`);
  }
  t.ok(all.length > 100, `${all.length} fields in the schema`);
  t.same(all.filter((f) => !used.has(f)), [], 'none left untested');
});
