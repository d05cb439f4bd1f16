/**
 * Audit log (docs/audit.md): every action of every transport records exactly one event with the
 * right actor, target, application, before and after; operator changes land in the changed
 * organization's log; no event ever holds a key value or key hash. Run on PGlite, and on
 * PostgreSQL when DATABASE_URL is set.
 */
import { createHash } from 'node:crypto';
import t from 'tap';
import {
  boolVariants,
  HEX64_ANYWHERE,
  operatorRequest,
  skipWithoutPostgres,
  startTestNode,
  type TestNode,
} from '../../helpers/node.js';
import { gql } from '../../helpers/graphql.js';
import { AUDIT_ENV, oneNewEvent, readLog } from '../../helpers/audit.js';

t.setTimeout(300_000);

const env = AUDIT_ENV;
const sha256 = (v: string) => createHash('sha256').update(v).digest('hex');
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

type T = typeof t;

async function scenario(t: T, n: TestNode): Promise<void> {
  /** Every key value issued in this test: none may appear in any event. */
  const issued: string[] = [];

  // ---- operator API: org.create ------------------------------------------------------------
  const created = await operatorRequest(n, 'POST', '/organizations', {
    name: 'acme', environments: ['development', 'production'], applications: ['web', 'mobile'],
  });
  t.equal(created.status, 201, 'operator creates acme');
  const A: string = created.body.adminKey;
  issued.push(A);
  const adminRecord = (await n.req('GET', '/api/keys', { key: A })).body[0];
  const adminActor = { keyId: adminRecord.id, keyName: 'admin' };

  const initial = await readLog(t, n, A);
  t.equal(initial.length, 1, 'the new organization has one event: its creation');
  t.same(initial[0], {
    id: initial[0].id,
    at: initial[0].at,
    actor: { operator: true },
    action: 'org.create',
    target: { type: 'organization', name: 'acme' },
    application: null,
    before: null,
    after: { name: 'acme', subscriptionActive: true, environments: ['development', 'production'], applications: ['web', 'mobile'] },
  }, 'org.create: operator actor, the settings as after, no admin key');
  t.match(initial[0].at, ISO, 'at is ISO 8601');
  t.match(initial[0].id, /^[0-9]+$/, 'id is a decimal string');
  t.same(await readLog(t, n, n.adminKey), [], 'organization default has no event of acme');

  // ---- REST ----------------------------------------------------------------------------------
  const rest = (method: string, path: string, body?: unknown) => n.req(method, path, { key: A, body });
  let res: any;
  let e = await oneNewEvent(t, n, A, 'REST flag.create', async () => {
    res = await rest('POST', '/api/flags', { name: 'checkout', project: 'web', type: 'boolean', variants: boolVariants });
    t.equal(res.status, 201);
  });
  t.same(e, { id: e.id, at: e.at, actor: adminActor, action: 'flag.create', target: { type: 'flag', name: 'checkout' }, application: 'web', before: null, after: res.body }, 'flag.create event');
  let flag = res.body;

  e = await oneNewEvent(t, n, A, 'REST flag.update', async () => {
    res = await rest('PUT', '/api/flags/checkout', { description: 'new checkout', tags: ['q3'] });
    t.equal(res.status, 200);
  });
  t.same(e, { id: e.id, at: e.at, actor: adminActor, action: 'flag.update', target: { type: 'flag', name: 'checkout' }, application: 'web', before: flag, after: res.body }, 'flag.update event');
  flag = res.body;

  e = await oneNewEvent(t, n, A, 'REST flag.archive', async () => {
    res = await rest('PUT', '/api/flags/checkout', { isArchived: true });
    t.equal(res.status, 200);
  });
  t.match(e, { action: 'flag.archive', target: { type: 'flag', name: 'checkout' }, application: 'web', before: { isArchived: false }, after: { isArchived: true } }, 'PUT {isArchived: true} is flag.archive');
  t.same(e.before, flag, 'archive: before is the flag');

  e = await oneNewEvent(t, n, A, 'REST flag.restore', async () => {
    t.equal((await rest('PUT', '/api/flags/checkout', { isArchived: false })).status, 200);
  });
  t.match(e, { action: 'flag.restore', before: { isArchived: true }, after: { isArchived: false } }, 'PUT {isArchived: false} is flag.restore');

  e = await oneNewEvent(t, n, A, 'REST config.upsert (new)', async () => {
    res = await rest('POST', '/api/flags/checkout/configs', { stage: 'production', enabled: true, defaultVariantKey: 'off', rolloutPercentage: 50 });
    t.equal(res.status, 200);
  });
  t.same(e, {
    id: e.id, at: e.at, actor: adminActor, action: 'config.upsert',
    target: { type: 'flag', name: 'checkout', stage: 'production', clientId: null },
    application: 'web', before: null, after: res.body,
  }, 'config.upsert event: the flag with stage and clientId, before null');
  const config = res.body;

  e = await oneNewEvent(t, n, A, 'REST config.upsert (update, clientId)', async () => {
    t.equal((await rest('POST', '/api/flags/checkout/configs', { stage: 'production', enabled: true, defaultVariantKey: 'off', rolloutPercentage: 75 })).status, 200);
  });
  t.same(e.before, config, 'second upsert: before is the previous configuration');
  t.equal(e.after.rolloutPercentage, 75, 'second upsert: after is the new configuration');

  let keyId = '';
  e = await oneNewEvent(t, n, A, 'REST key.create', async () => {
    res = await rest('POST', '/api/keys', { name: 'ci', permissions: ['CanRead', 'CanWrite'], application: 'web' });
    t.equal(res.status, 201);
    issued.push(res.body.key);
    keyId = res.body.id;
  });
  const { key: _value, ...createdRecord } = res.body;
  t.same(e, {
    id: e.id, at: e.at, actor: adminActor, action: 'key.create', target: { type: 'key', name: keyId },
    application: null, before: null, after: { ...createdRecord, rotatedAt: null },
  }, 'key.create event: the key record without its value');

  e = await oneNewEvent(t, n, A, 'REST key.rotate', async () => {
    res = await rest('POST', `/api/keys/${keyId}/rotate`);
    t.equal(res.status, 200);
    issued.push(res.body.key);
  });
  t.match(e, { action: 'key.rotate', target: { type: 'key', name: keyId }, before: { id: keyId, rotatedAt: null }, after: { id: keyId, rotatedAt: ISO } }, 'key.rotate event');

  // The rotated key acts: its events carry its id and name.
  const ciKey = issued[issued.length - 1];
  e = await oneNewEvent(t, n, A, 'flag.update by another key', async () => {
    t.equal((await n.req('PUT', '/api/flags/checkout', { key: ciKey, body: { description: 'by ci' } })).status, 200);
  });
  t.same(e.actor, { keyId, keyName: 'ci' }, 'the actor is the key that wrote');

  e = await oneNewEvent(t, n, A, 'REST key.disable', async () => {
    t.equal((await rest('POST', `/api/keys/${keyId}/disable`)).status, 200);
  });
  t.match(e, { action: 'key.disable', target: { type: 'key', name: keyId }, before: { disabled: false }, after: { disabled: true } }, 'key.disable event');

  e = await oneNewEvent(t, n, A, 'REST key.delete', async () => {
    t.equal((await rest('DELETE', `/api/keys/${keyId}`)).status, 204);
  });
  t.match(e, { action: 'key.delete', target: { type: 'key', name: keyId }, before: { id: keyId, disabled: true }, after: null }, 'key.delete event');

  e = await oneNewEvent(t, n, A, 'REST flag.delete', async () => {
    t.equal((await rest('DELETE', '/api/flags/checkout')).status, 204);
  });
  t.match(e, { action: 'flag.delete', target: { type: 'flag', name: 'checkout' }, application: 'web', before: { name: 'checkout', description: 'by ci' }, after: null }, 'flag.delete event');

  // ---- GraphQL: every mutation ---------------------------------------------------------------
  const mutate = async (what: string, doc: string, vars?: Record<string, unknown>) => {
    let body: any;
    const ev = await oneNewEvent(t, n, A, `GraphQL ${what}`, async () => {
      const r = await gql(n, A, doc, vars);
      t.equal(r.body.errors, undefined, `${what}: no errors (${JSON.stringify(r.body.errors)})`);
      body = r.body.data;
    });
    t.same(ev.actor, adminActor, `${what}: actor`);
    return { ev, data: body };
  };
  const FLAG = 'name project type description tags isArchived variants { key value valueType } environments dependencies { flag variants } purpose createdAt updatedAt';
  const CONFIG = 'stage clientId enabled defaultVariantKey rolloutPercentage rules { id priority conditions { field operator value } allocations { variantKey percentage } } activeFrom activeUntil enrollmentCutoff';

  let g = await mutate('createFlag', `mutation { createFlag(input: {name: "banner", project: "mobile", type: "boolean", variants: [{key: "on", value: true, valueType: "boolean"}, {key: "off", value: false, valueType: "boolean"}]}) { ${FLAG} } }`);
  t.same(g.ev, { ...g.ev, action: 'flag.create', target: { type: 'flag', name: 'banner' }, application: 'mobile', before: null, after: g.data.createFlag }, 'createFlag → flag.create');
  g = await mutate('updateFlag', `mutation { updateFlag(name: "banner", input: {description: "d"}) { ${FLAG} } }`);
  t.match(g.ev, { action: 'flag.update', before: { description: null }, after: { description: 'd' } }, 'updateFlag → flag.update');
  t.same(g.ev.after, g.data.updateFlag, 'updateFlag: after is the answer');
  g = await mutate('archiveFlag', `mutation { archiveFlag(name: "banner") { ${FLAG} } }`);
  t.match(g.ev, { action: 'flag.archive', application: 'mobile', before: { isArchived: false }, after: { isArchived: true } }, 'archiveFlag → flag.archive');
  g = await mutate('restoreFlag', `mutation { restoreFlag(name: "banner") { ${FLAG} } }`);
  t.match(g.ev, { action: 'flag.restore', before: { isArchived: true }, after: { isArchived: false } }, 'restoreFlag → flag.restore');
  g = await mutate('updateFlagEnvironments', `mutation { updateFlagEnvironments(name: "banner", environments: ["production"]) { ${FLAG} } }`);
  t.match(g.ev, { action: 'flag.environments', before: { environments: ['development', 'production'] }, after: { environments: ['production'] } }, 'updateFlagEnvironments → flag.environments');
  g = await mutate('upsertFlagConfig', `mutation { upsertFlagConfig(name: "banner", input: {stage: "production", clientId: "ios", enabled: true, defaultVariantKey: "off", rolloutPercentage: 100}) { ${CONFIG} } }`);
  t.same(g.ev, { ...g.ev, action: 'config.upsert', target: { type: 'flag', name: 'banner', stage: 'production', clientId: 'ios' }, application: 'mobile', before: null, after: g.data.upsertFlagConfig }, 'upsertFlagConfig → config.upsert with clientId');
  g = await mutate('setFlagConfigEnabled false', `mutation { setFlagConfigEnabled(name: "banner", stage: "production", clientId: "ios", enabled: false) { ${CONFIG} } }`);
  t.match(g.ev, { action: 'config.disable', target: { stage: 'production', clientId: 'ios' }, before: { enabled: true }, after: { enabled: false } }, 'setFlagConfigEnabled(false) → config.disable');
  g = await mutate('setFlagConfigEnabled true', `mutation { setFlagConfigEnabled(name: "banner", stage: "production", clientId: "ios", enabled: true) { ${CONFIG} } }`);
  t.match(g.ev, { action: 'config.enable', before: { enabled: false }, after: { enabled: true } }, 'setFlagConfigEnabled(true) → config.enable');
  g = await mutate('deleteFlagConfig', `mutation { deleteFlagConfig(name: "banner", stage: "production", clientId: "ios") }`);
  t.match(g.ev, { action: 'config.delete', target: { type: 'flag', name: 'banner', stage: 'production', clientId: 'ios' }, application: 'mobile', before: { stage: 'production', clientId: 'ios', enabled: true }, after: null }, 'deleteFlagConfig → config.delete');

  g = await mutate('replaceEnvironments', `mutation { replaceEnvironments(environments: ["development", "production", "staging"]) }`);
  t.same(g.ev, { ...g.ev, action: 'org.environments', target: { type: 'organization', name: 'acme' }, application: null, before: { environments: ['development', 'production'] }, after: { environments: ['development', 'production', 'staging'] } }, 'replaceEnvironments → org.environments');
  g = await mutate('renameEnvironment', `mutation { renameEnvironment(from: "staging", to: "qa") }`);
  t.match(g.ev, { action: 'org.environments', before: { environments: ['development', 'production', 'staging'] }, after: { environments: ['development', 'production', 'qa'] } }, 'renameEnvironment → org.environments');
  g = await mutate('replaceApplications', `mutation { replaceApplications(applications: ["web", "mobile", "tv"]) }`);
  t.same(g.ev, { ...g.ev, action: 'org.applications', target: { type: 'organization', name: 'acme' }, application: null, before: { applications: ['web', 'mobile'] }, after: { applications: ['web', 'mobile', 'tv'] } }, 'replaceApplications → org.applications');
  g = await mutate('renameApplication', `mutation { renameApplication(from: "tv", to: "television") }`);
  t.match(g.ev, { action: 'org.applications', after: { applications: ['web', 'mobile', 'television'] } }, 'renameApplication → org.applications');
  g = await mutate('replaceKillSwitch', `mutation { replaceKillSwitch(rules: [{flag: "banner", environment: "production"}]) { flag application environment } }`);
  t.same(g.ev, { ...g.ev, action: 'org.killswitch', target: { type: 'organization', name: 'acme' }, application: null, before: { killSwitch: [] }, after: { killSwitch: [{ flag: 'banner', application: null, environment: 'production' }] } }, 'replaceKillSwitch → org.killswitch');

  const KEY = 'id name permissions application environment disabled createdAt rotatedAt';
  g = await mutate('createManagementKey', `mutation { createManagementKey(input: {name: "reader", permissions: [CanRead]}) { id key managementKey { ${KEY} } } }`);
  issued.push(g.data.createManagementKey.key);
  const readerId = g.data.createManagementKey.id;
  t.same(g.ev, { ...g.ev, action: 'key.create', target: { type: 'key', name: readerId }, application: null, before: null, after: g.data.createManagementKey.managementKey }, 'createManagementKey → key.create');
  g = await mutate('rotateManagementKey', `mutation { rotateManagementKey(id: "${readerId}") { id key managementKey { ${KEY} } } }`);
  issued.push(g.data.rotateManagementKey.key);
  t.same(g.ev.after, g.data.rotateManagementKey.managementKey, 'rotateManagementKey → key.rotate, after is the record');
  t.equal(g.ev.action, 'key.rotate');
  g = await mutate('disableManagementKey', `mutation { disableManagementKey(id: "${readerId}") { ${KEY} } }`);
  t.match(g.ev, { action: 'key.disable', after: { disabled: true } }, 'disableManagementKey → key.disable');
  g = await mutate('deleteManagementKey', `mutation { deleteManagementKey(id: "${readerId}") }`);
  t.match(g.ev, { action: 'key.delete', target: { type: 'key', name: readerId }, after: null }, 'deleteManagementKey → key.delete');
  g = await mutate('deleteFlag', `mutation { deleteFlag(name: "banner") }`);
  t.match(g.ev, { action: 'flag.delete', target: { type: 'flag', name: 'banner' }, application: 'mobile', after: null }, 'deleteFlag → flag.delete');

  // Several mutations in one document: one event each, in order.
  const beforeBatch = await readLog(t, n, A);
  const batch = await gql(n, A, `mutation {
    a: createFlag(input: {name: "b1", project: "web", type: "boolean", variants: [{key: "on", value: true, valueType: "boolean"}]}) { name }
    b: archiveFlag(name: "b1") { name }
    c: archiveFlag(name: "no-such-flag") { name }
  }`);
  t.equal(batch.body.errors?.length, 1, 'the failed field has its error');
  const batchEvents = (await readLog(t, n, A)).slice(0, -beforeBatch.length);
  t.same(batchEvents.map((x) => x.action), ['flag.archive', 'flag.create'], 'two successful mutations, two events (the failed one records nothing)');

  // ---- operator API: org.subscription, in acme's log -----------------------------------------
  const lastBefore = Number((await readLog(t, n, A))[0].id);
  t.equal((await operatorRequest(n, 'PATCH', '/organizations/acme', { subscriptionActive: false })).status, 200, 'operator suspends acme');
  t.equal((await operatorRequest(n, 'PATCH', '/organizations/acme', { subscriptionActive: true })).status, 200, 'operator resumes acme');
  const subs = (await readLog(t, n, A)).filter((x) => Number(x.id) > lastBefore);
  t.same(subs.map(({ id: _i, at: _a, ...rest }) => rest), [
    { actor: { operator: true }, action: 'org.subscription', target: { type: 'organization', name: 'acme' }, application: null, before: { subscriptionActive: false }, after: { subscriptionActive: true } },
    { actor: { operator: true }, action: 'org.subscription', target: { type: 'organization', name: 'acme' }, application: null, before: { subscriptionActive: true }, after: { subscriptionActive: false } },
  ], 'two org.subscription events by the operator, newest first');
  t.same(await readLog(t, n, n.adminKey), [], 'organization default still has no event');

  // ---- every action seen, and no key material anywhere -----------------------------------------
  const all = await readLog(t, n, A);
  const actions = new Set(all.map((x) => x.action));
  for (const a of ['flag.create', 'flag.update', 'flag.archive', 'flag.restore', 'flag.delete', 'flag.environments', 'config.upsert',
    'config.enable', 'config.disable', 'config.delete', 'org.environments', 'org.applications', 'org.killswitch', 'key.create',
    'key.rotate', 'key.disable', 'key.delete', 'org.create', 'org.subscription']) {
    t.ok(actions.has(a), `action ${a} was recorded`);
  }
  const ids = all.map((x) => Number(x.id));
  t.same(ids, [...ids].sort((a, b) => b - a), 'newest first, ids decreasing');

  // Through the API and straight from the table: neither a key value nor its hash.
  const apiText = JSON.stringify(all);
  const rows = await n.node.db.query<{ row: string }>('select row_to_json(a)::text as row from audit_events a');
  const dbText = rows.map((r) => r.row).join('\n');
  t.ok(rows.length >= all.length, 'the table holds the events');
  for (const v of issued) {
    t.notOk(apiText.includes(v) || dbText.includes(v), 'no key value in any event');
    t.notOk(apiText.includes(sha256(v)) || dbText.includes(sha256(v)), 'no key hash in any event');
  }
  t.notOk(HEX64_ANYWHERE.test(apiText), 'no 64-hex string at all in the API answer');
  t.notOk(HEX64_ANYWHERE.test(dbText), 'no 64-hex string at all in the table');
  t.equal(issued.length, 5, 'five key values were issued and checked');

  // GraphQL answers the same events as REST.
  const viaGql = await gql(n, A, `{ auditLog(first: 500) { id at actor { keyId keyName operator } action target { type name stage clientId } application before after } }`);
  t.equal(viaGql.body.errors, undefined, 'auditLog: no errors');
  const norm = (x: any) => ({
    ...x,
    actor: 'operator' in x.actor ? { keyId: null, keyName: null, operator: true } : { ...x.actor, operator: false },
    target: { stage: null, clientId: null, ...x.target },
  });
  t.same(viaGql.body.data?.auditLog, all.map(norm), 'GraphQL auditLog equals REST GET /api/audit');
}

t.test('PGlite', async (t) => {
  await scenario(t, await startTestNode(t, { env }));
});

t.test('PostgreSQL', { skip: skipWithoutPostgres() }, async (t) => {
  await scenario(t, await startTestNode(t, { db: 'postgres', env }));
});
