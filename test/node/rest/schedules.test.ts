/**
 * Scheduled changes over REST and GraphQL on one node on the embedded database (docs/api.md
 * "Scheduled changes"): create, list, cancel, apply within 1 s after `at`, fail when the change is
 * refused when due, the audit events, the 400s that change nothing, deleting the flag or the
 * configuration cancelling, scopes, and the pending-schedule quotas.
 */
import t from 'tap';
import { rmSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { createOrg, expectProblem, getFlag, makeKey, must, OPERATOR_TOKEN, postConfig, postFlag, putFlag, startNode, CONFIG_FIELDS, type TapTest } from '../../helpers/flags.js';
import { z } from 'zod';
import { pgliteCopy, type TestNode } from '../../helpers/node.js';
import { ScheduleSchema } from '../../../src/features/schedules/openapi.js';
import { AuditEventSchema } from '../../../src/openapi/schemas.js';
import { loadConfig } from '../../../src/config.js';
import { cancelSchedule, flagEvents, inMs, listSchedules, postSchedule, SCHEDULE_FIELDS, schedulesPath, settled } from '../../helpers/schedules.js';

/** The flag with its configurations, its schedules and its audit events: a refused write changes none. */
async function everything(n: TestNode, key: string, flag: string) {
  return { flag: (await getFlag(n, key, flag)).body, schedules: (await listSchedules(n, key, flag)).body, events: await flagEvents(n, key, flag) };
}

async function expectRefused(t: TapTest, n: TestNode, key: string, flag: string, body: Record<string, unknown>, status: number, code: string, detail?: RegExp) {
  const before = await everything(n, key, flag);
  expectProblem(t, await postSchedule(n, key, flag, body), status, code, detail);
  t.same(await everything(n, key, flag), before, 'nothing changed');
}

// Several real nodes (PGlite start-up is seconds each): more than tap's default 120 s on a busy machine.
t.setTimeout(300_000);

t.test('scheduled changes on the embedded database', async (t) => {
  const n = await startNode(t);

  t.test('a config schedule: 201 the schedule, listed, applied within 1 s after at, audited with scheduleId', async (t) => {
    const org = await createOrg(n);
    must(t, await postFlag(n, org.adminKey, 'f'), 201, 'create');
    must(t, await postConfig(n, org.adminKey, 'f', { defaultVariantKey: 'off' }), 200, 'config');
    const at = inMs(1500);
    const config = {
      stage: 'production',
      enabled: true,
      defaultVariantKey: 'on',
      rolloutPercentage: 50,
      rules: [{ priority: 1, conditions: [{ field: 'country', operator: '==', value: 'NL' }], allocations: [{ variantKey: 'off', percentage: 100 }] }],
    };
    const r = must(t, await postSchedule(n, org.adminKey, 'f', { at, stage: 'production', config }), 201, 'schedule');
    t.match(r.headers.get('content-type') ?? '', /^application\/json/);
    t.same(Object.keys(r.body).sort(), SCHEDULE_FIELDS, 'the Schedule fields');
    t.equal(r.body.flag, 'f');
    t.equal(r.body.at, at);
    t.equal(r.body.stage, 'production');
    t.equal(r.body.clientId, null);
    t.equal(r.body.enabled, null);
    t.equal(r.body.status, 'pending');
    t.equal(r.body.appliedAt, null);
    t.equal(r.body.error, null);
    t.same(Object.keys(r.body.config).sort(), CONFIG_FIELDS, 'config is a FlagConfig');
    t.equal(r.body.config.defaultVariantKey, 'on');
    t.type(r.body.config.rules[0].id, 'string', 'rule ids are fixed when scheduled');
    t.same(Object.keys(r.body.createdBy).sort(), ['keyId', 'keyName']);
    t.ok(ScheduleSchema.strict().safeParse(r.body).success, 'matches the OpenAPI Schedule schema');

    // A later one is listed after it: soonest first.
    const later = must(t, await postSchedule(n, org.adminKey, 'f', { at: inMs(60_000), stage: 'production', enabled: false }), 201, 'later');
    const sooner = must(t, await postSchedule(n, org.adminKey, 'f', { at: inMs(30_000), stage: 'production', enabled: false }), 201, 'sooner');
    const list = must(t, await listSchedules(n, org.adminKey, 'f'), 200, 'list');
    t.same(list.body.map((s: { id: string }) => s.id), [r.body.id, sooner.body.id, later.body.id], 'bare array, soonest first');
    t.ok(z.array(ScheduleSchema.strict()).safeParse(list.body).success, 'the list matches the OpenAPI schema');

    const done = await settled(n, org.adminKey, 'f', r.body.id);
    t.equal(done.status, 'applied');
    const delay = Date.parse(done.appliedAt) - Date.parse(at);
    t.ok(delay >= 0 && delay < 1000, `applied ${delay} ms after at`);
    const cfg = (await getFlag(n, org.adminKey, 'f')).body.configs[0];
    t.equal(cfg.defaultVariantKey, 'on', 'the configuration changed');
    t.equal(cfg.rolloutPercentage, 50);
    t.equal(cfg.rules[0].id, r.body.config.rules[0].id, 'with the rule ids the schedule showed');

    const events = await flagEvents(n, org.adminKey, 'f');
    const creates = events.filter((e) => e.action === 'schedule.create');
    t.equal(creates.length, 3, 'one schedule.create each');
    t.same(creates[0].target, { type: 'flag', name: 'f', stage: 'production', clientId: null });
    t.equal(creates[0].before, null);
    t.same(creates[0].after, r.body, "after: the schedule");
    const applied = events.filter((e) => e.scheduleId === r.body.id);
    t.equal(applied.length, 1, 'one event names the schedule');
    t.equal(applied[0].action, 'config.upsert', 'audited as the change it makes');
    t.same(applied[0].actor, r.body.createdBy, "by the scheduling key");
    t.equal(applied[0].before.defaultVariantKey, 'off');
    t.equal(applied[0].after.defaultVariantKey, 'on');
    t.ok(AuditEventSchema.strict().safeParse(applied[0]).success, 'the event matches the OpenAPI AuditEvent schema');
    t.notOk(events.filter((e) => e.scheduleId === undefined).some((e) => 'scheduleId' in e), 'other events carry no scheduleId');
  });

  t.test('an enabled schedule disables the configuration (config.disable)', async (t) => {
    const org = await createOrg(n);
    must(t, await postFlag(n, org.adminKey, 'g'), 201, 'create');
    must(t, await postConfig(n, org.adminKey, 'g', { clientId: 'web-1', defaultVariantKey: 'on' }), 200, 'config');
    const r = must(t, await postSchedule(n, org.adminKey, 'g', { at: inMs(800), stage: 'PRODUCTION', clientId: 'web-1', enabled: false }), 201, 'schedule');
    t.equal(r.body.stage, 'production', 'the stage as the flag spells it');
    t.equal(r.body.enabled, false);
    t.equal(r.body.config, null);
    const done = await settled(n, org.adminKey, 'g', r.body.id);
    t.equal(done.status, 'applied');
    t.equal((await getFlag(n, org.adminKey, 'g')).body.configs[0].enabled, false, 'disabled');
    const ev = (await flagEvents(n, org.adminKey, 'g')).filter((e) => e.scheduleId === r.body.id);
    t.same(ev.map((e) => e.action), ['config.disable']);
    t.same(ev[0].target, { type: 'flag', name: 'g', stage: 'production', clientId: 'web-1' });
  });

  t.test('cancel: 204 while pending, 409 after, 404 for an unknown id; never applied; audited', async (t) => {
    const org = await createOrg(n);
    must(t, await postFlag(n, org.adminKey, 'c'), 201, 'create');
    must(t, await postConfig(n, org.adminKey, 'c'), 200, 'config');
    const r = must(t, await postSchedule(n, org.adminKey, 'c', { at: inMs(700), stage: 'production', enabled: false }), 201, 'schedule');
    t.equal((await cancelSchedule(n, org.adminKey, 'c', r.body.id)).status, 204, 'cancelled');
    expectProblem(t, await cancelSchedule(n, org.adminKey, 'c', r.body.id), 409, 'CONFLICT', /cancelled/);
    expectProblem(t, await cancelSchedule(n, org.adminKey, 'c', 'no-such-id'), 404, 'NOT_FOUND');
    await sleep(1500);
    const [s] = (await listSchedules(n, org.adminKey, 'c')).body;
    t.equal(s.status, 'cancelled');
    t.equal(s.appliedAt, null);
    t.equal((await getFlag(n, org.adminKey, 'c')).body.configs[0].enabled, true, 'never applied');
    const events = await flagEvents(n, org.adminKey, 'c');
    const cancel = events.filter((e) => e.action === 'schedule.cancel');
    t.equal(cancel.length, 1, 'one schedule.cancel');
    t.equal(cancel[0].before.status, 'pending');
    t.equal(cancel[0].after.status, 'cancelled');
    t.notOk(events.some((e) => e.action === 'config.disable'), 'no change recorded');
    // An applied schedule cannot be cancelled either.
    const a = must(t, await postSchedule(n, org.adminKey, 'c', { at: inMs(300), stage: 'production', enabled: false }), 201, 'schedule');
    t.equal((await settled(n, org.adminKey, 'c', a.body.id)).status, 'applied');
    expectProblem(t, await cancelSchedule(n, org.adminKey, 'c', a.body.id), 409, 'CONFLICT', /applied/);
  });

  t.test('the key disabled before at: failed, error set, the flag unchanged', async (t) => {
    const org = await createOrg(n);
    must(t, await postFlag(n, org.adminKey, 'k'), 201, 'create');
    must(t, await postConfig(n, org.adminKey, 'k'), 200, 'config');
    const writer = await makeKey(n, org.adminKey, { name: 'scheduler', permissions: ['CanWrite'] });
    const r = must(t, await postSchedule(n, writer, 'k', { at: inMs(2000), stage: 'production', enabled: false }), 201, 'schedule');
    t.equal(r.body.createdBy.keyName, 'scheduler');
    must(t, await n.req('POST', `/api/keys/${r.body.createdBy.keyId}/disable`, { key: org.adminKey }), 200, 'disable key');
    const before = (await getFlag(n, org.adminKey, 'k')).body;
    const done = await settled(n, org.adminKey, 'k', r.body.id);
    t.equal(done.status, 'failed');
    t.match(done.error, /disabled/);
    t.equal(done.appliedAt, null);
    t.same((await getFlag(n, org.adminKey, 'k')).body, before, 'flag unchanged');
    t.notOk((await flagEvents(n, org.adminKey, 'k')).some((e) => e.scheduleId === r.body.id), 'no event for a failed change');
  });

  t.test('the key deleted before at: failed, the flag unchanged', async (t) => {
    const org = await createOrg(n);
    must(t, await postFlag(n, org.adminKey, 'kd'), 201, 'create');
    must(t, await postConfig(n, org.adminKey, 'kd'), 200, 'config');
    const writer = await makeKey(n, org.adminKey, { permissions: ['CanWrite'] });
    const r = must(t, await postSchedule(n, writer, 'kd', { at: inMs(2000), stage: 'production', enabled: false }), 201, 'schedule');
    t.equal((await n.req('DELETE', `/api/keys/${r.body.createdBy.keyId}`, { key: org.adminKey })).status, 204, 'delete key');
    const done = await settled(n, org.adminKey, 'kd', r.body.id);
    t.equal(done.status, 'failed');
    t.match(done.error, /no longer exists/);
    t.equal((await getFlag(n, org.adminKey, 'kd')).body.configs[0].enabled, true, 'unchanged');
  });

  t.test('the subscription ended before at: failed, nothing changes', async (t) => {
    const org = await createOrg(n);
    must(t, await postFlag(n, org.adminKey, 'sub'), 201, 'create');
    must(t, await postConfig(n, org.adminKey, 'sub'), 200, 'config');
    const r = must(t, await postSchedule(n, org.adminKey, 'sub', { at: inMs(2000), stage: 'production', enabled: false }), 201, 'schedule');
    const patch = (active: boolean) => n.req('PATCH', `/api/operator/organizations/${org.name}`, { headers: { 'x-operator-token': OPERATOR_TOKEN }, body: { subscriptionActive: active } });
    must(t, await patch(false), 200, 'subscription off');
    await sleep(Math.max(0, Date.parse(r.body.at) - Date.now()) + 700);
    must(t, await patch(true), 200, 'subscription on');
    const [s] = (await listSchedules(n, org.adminKey, 'sub')).body;
    t.equal(s.status, 'failed');
    t.match(s.error, /subscription/);
    t.equal((await getFlag(n, org.adminKey, 'sub')).body.configs[0].enabled, true, 'unchanged');
  });

  t.test('an environment rename renames it in schedules too; the schedule still applies', async (t) => {
    const org = await createOrg(n);
    must(t, await postFlag(n, org.adminKey, 'ren'), 201, 'create');
    must(t, await postConfig(n, org.adminKey, 'ren'), 200, 'config');
    const r = must(t, await postSchedule(n, org.adminKey, 'ren', { at: inMs(2000), stage: 'production', config: { stage: 'production', enabled: true, defaultVariantKey: 'on', rolloutPercentage: 100 } }), 201, 'schedule');
    const g = await n.req('POST', '/api/graphql', { key: org.adminKey, body: { query: 'mutation { renameEnvironment(from: "production", to: "prod") }' } });
    t.same(g.body, { data: { renameEnvironment: ['development', 'prod'] } });
    const done = await settled(n, org.adminKey, 'ren', r.body.id);
    t.equal(done.stage, 'prod');
    t.equal(done.config.stage, 'prod');
    t.equal(done.status, 'applied');
    t.same((await getFlag(n, org.adminKey, 'ren')).body.configs.map((c: { stage: string; defaultVariantKey: string }) => [c.stage, c.defaultVariantKey]), [['prod', 'on']]);
  });

  t.test("the config's variant deleted before at: failed with the validation error, nothing changes", async (t) => {
    const org = await createOrg(n);
    const variants = [
      { key: 'on', value: true, valueType: 'boolean' },
      { key: 'off', value: false, valueType: 'boolean' },
      { key: 'maybe', value: true, valueType: 'boolean' },
    ];
    must(t, await postFlag(n, org.adminKey, 'v', { variants }), 201, 'create');
    must(t, await postConfig(n, org.adminKey, 'v'), 200, 'config');
    const config = { stage: 'production', enabled: true, defaultVariantKey: 'maybe', rolloutPercentage: 100 };
    const r = must(t, await postSchedule(n, org.adminKey, 'v', { at: inMs(2000), stage: 'production', config }), 201, 'schedule');
    must(t, await putFlag(n, org.adminKey, 'v', { variants: variants.slice(0, 2) }), 200, 'remove the variant');
    const before = (await getFlag(n, org.adminKey, 'v')).body;
    const done = await settled(n, org.adminKey, 'v', r.body.id);
    t.equal(done.status, 'failed');
    t.match(done.error, /maybe/);
    t.same((await getFlag(n, org.adminKey, 'v')).body, before, 'flag unchanged');
  });

  t.test('a segment the config names: unknown when scheduling is 400; deleted before at, the schedule fails and nothing changes', async (t) => {
    const org = await createOrg(n);
    must(t, await postFlag(n, org.adminKey, 's'), 201, 'create');
    must(t, await postConfig(n, org.adminKey, 's'), 200, 'config');
    const rule = (segment: string) => ({ priority: 1, conditions: [], segments: [segment], allocations: [{ variantKey: 'off', percentage: 100 }] });
    const config = (segment: string) => ({ stage: 'production', enabled: true, defaultVariantKey: 'on', rolloutPercentage: 100, rules: [rule(segment)] });
    const refused = await postSchedule(n, org.adminKey, 's', { at: inMs(2000), stage: 'production', config: config('nobody') });
    t.equal(refused.status, 400, 'an unknown segment is refused when scheduled');
    t.match(refused.body, { code: 'BAD_REQUEST', detail: /nobody/ });
    must(t, await n.req('POST', '/api/segments', { key: org.adminKey, body: { name: 'beta', conditions: [] } }), 201, 'segment');
    const r = must(t, await postSchedule(n, org.adminKey, 's', { at: inMs(2000), stage: 'production', config: config('beta') }), 201, 'schedule');
    // Only stored configurations hold a segment in use: a pending schedule does not.
    must(t, await n.req('DELETE', '/api/segments/beta', { key: org.adminKey }), 204, 'delete the segment');
    const before = (await getFlag(n, org.adminKey, 's')).body;
    const done = await settled(n, org.adminKey, 's', r.body.id);
    t.equal(done.status, 'failed');
    t.match(done.error, /beta/);
    t.same((await getFlag(n, org.adminKey, 's')).body, before, 'flag unchanged');
  });

  t.test('bad input is 400 problem+json and stores nothing', async (t) => {
    const org = await createOrg(n);
    must(t, await postFlag(n, org.adminKey, 'b'), 201, 'create');
    must(t, await postConfig(n, org.adminKey, 'b'), 200, 'config');
    const k = org.adminKey;
    const cfg = { stage: 'production', enabled: true, defaultVariantKey: 'on', rolloutPercentage: 100 };
    await expectRefused(t, n, k, 'b', { at: inMs(-1000), stage: 'production', enabled: false }, 400, 'BAD_REQUEST', /at: must be in the future/);
    await expectRefused(t, n, k, 'b', { at: inMs(366 * 24 * 3600 * 1000), stage: 'production', enabled: false }, 400, 'BAD_REQUEST', /a year/);
    await expectRefused(t, n, k, 'b', { at: '2030-01-01T00:00:00', stage: 'production', enabled: false }, 400, 'BAD_REQUEST', /^at:/);
    await expectRefused(t, n, k, 'b', { stage: 'production', enabled: false }, 400, 'BAD_REQUEST', /at/);
    await expectRefused(t, n, k, 'b', { at: inMs(60_000), stage: 'production' }, 400, 'BAD_REQUEST', /exactly one/);
    await expectRefused(t, n, k, 'b', { at: inMs(60_000), stage: 'production', enabled: true, config: cfg }, 400, 'BAD_REQUEST', /exactly one/);
    await expectRefused(t, n, k, 'b', { at: inMs(60_000), stage: 'production', enabled: 'yes' }, 400, 'BAD_REQUEST', /enabled/);
    await expectRefused(t, n, k, 'b', { at: inMs(60_000), stage: 'production', config: { ...cfg, defaultVariantKey: 'nope' } }, 400, 'BAD_REQUEST', /nope/);
    await expectRefused(t, n, k, 'b', { at: inMs(60_000), stage: 'production', config: { ...cfg, rolloutPercentage: 101 } }, 400, 'BAD_REQUEST', /^config/);
    await expectRefused(t, n, k, 'b', { at: inMs(60_000), stage: 'production', config: { ...cfg, stage: 'development' } }, 400, 'BAD_REQUEST', /config.stage/);
    await expectRefused(t, n, k, 'b', { at: inMs(60_000), stage: 'production', config: { ...cfg, clientId: 'x' } }, 400, 'BAD_REQUEST', /config.clientId/);
    await expectRefused(t, n, k, 'b', { at: inMs(60_000), stage: 'production', enabled: false, colour: 'red' }, 400, 'BAD_REQUEST', /colour/);
    // The same checks as the write itself: no configuration to disable, a stage the flag does not use.
    await expectRefused(t, n, k, 'b', { at: inMs(60_000), stage: 'production', clientId: 'none', enabled: false }, 404, 'NOT_FOUND');
    await expectRefused(t, n, k, 'b', { at: inMs(60_000), stage: 'staging', enabled: false }, 409, 'CONFLICT');
    expectProblem(t, await postSchedule(n, k, 'missing', { at: inMs(60_000), stage: 'production', enabled: false }), 404, 'NOT_FOUND');
    expectProblem(t, await listSchedules(n, k, 'missing'), 404, 'NOT_FOUND');
    const raw = await n.req('POST', schedulesPath('b'), { key: k, raw: '[1]', headers: { 'content-type': 'application/json' } });
    expectProblem(t, raw, 400, 'BAD_REQUEST');
  });

  t.test('Idempotency-Key: a repeated schedule request answers the first schedule and stores one', async (t) => {
    const org = await createOrg(n);
    must(t, await postFlag(n, org.adminKey, 'idem'), 201, 'create');
    must(t, await postConfig(n, org.adminKey, 'idem'), 200, 'config');
    const body = { at: inMs(60_000), stage: 'production', enabled: false };
    const send = () => n.req('POST', schedulesPath('idem'), { key: org.adminKey, body, headers: { 'idempotency-key': 'sched-1' } });
    const first = must(t, await send(), 201, 'first');
    const again = must(t, await send(), 201, 'repeat');
    t.same(again.body, first.body, 'the same schedule');
    t.equal(again.headers.get('idempotent-replayed'), 'true');
    t.equal((await listSchedules(n, org.adminKey, 'idem')).body.length, 1, 'one stored');
  });

  t.test('scopes: CanRead lists but cannot schedule; an environment-scoped key schedules only its environment', async (t) => {
    const org = await createOrg(n);
    must(t, await postFlag(n, org.adminKey, 's'), 201, 'create');
    must(t, await postConfig(n, org.adminKey, 's'), 200, 'config');
    must(t, await postConfig(n, org.adminKey, 's', { stage: 'development' }), 200, 'config dev');
    const reader = await makeKey(n, org.adminKey, { permissions: ['CanRead'] });
    const devWriter = await makeKey(n, org.adminKey, { permissions: ['CanWrite'], environment: 'development' });
    const billing = await makeKey(n, org.adminKey, { permissions: ['CanWrite'], application: 'billing' });
    t.equal((await listSchedules(n, reader, 's')).status, 200);
    expectProblem(t, await postSchedule(n, reader, 's', { at: inMs(60_000), stage: 'production', enabled: false }), 403, 'FORBIDDEN');
    expectProblem(t, await postSchedule(n, devWriter, 's', { at: inMs(60_000), stage: 'production', enabled: false }), 403, 'FORBIDDEN');
    expectProblem(t, await postSchedule(n, billing, 's', { at: inMs(60_000), stage: 'production', enabled: false }), 403, 'FORBIDDEN');
    expectProblem(t, await listSchedules(n, billing, 's'), 403, 'FORBIDDEN');
    const ok = must(t, await postSchedule(n, devWriter, 's', { at: inMs(60_000), stage: 'development', enabled: false }), 201, 'own environment');
    const prod = must(t, await postSchedule(n, org.adminKey, 's', { at: inMs(60_000), stage: 'production', enabled: false }), 201, 'admin');
    expectProblem(t, await cancelSchedule(n, devWriter, 's', prod.body.id), 403, 'FORBIDDEN');
    expectProblem(t, await cancelSchedule(n, reader, 's', ok.body.id), 403, 'FORBIDDEN');
    t.equal((await cancelSchedule(n, devWriter, 's', ok.body.id)).status, 204);
  });

  t.test('deleting the configuration or the flag cancels its pending schedules', async (t) => {
    const org = await createOrg(n);
    must(t, await postFlag(n, org.adminKey, 'd'), 201, 'create');
    must(t, await postConfig(n, org.adminKey, 'd'), 200, 'config');
    must(t, await postConfig(n, org.adminKey, 'd', { stage: 'development' }), 200, 'config dev');
    const at = inMs(3000);
    const dev = must(t, await postSchedule(n, org.adminKey, 'd', { at, stage: 'development', enabled: false }), 201, 'dev');
    const prod = must(t, await postSchedule(n, org.adminKey, 'd', { at, stage: 'production', enabled: false }), 201, 'prod');
    must(t, await n.req('POST', '/api/graphql', { key: org.adminKey, body: { query: 'mutation { deleteFlagConfig(name: "d", stage: "development") }' } }), 200, 'delete dev config');
    let list = (await listSchedules(n, org.adminKey, 'd')).body;
    t.equal(list.find((s: { id: string }) => s.id === dev.body.id).status, 'cancelled', "the configuration's schedule");
    t.equal(list.find((s: { id: string }) => s.id === prod.body.id).status, 'pending', 'the other stays');
    t.equal((await n.req('DELETE', '/api/flags/d', { key: org.adminKey })).status, 204);
    must(t, await postFlag(n, org.adminKey, 'd'), 201, 'a new flag of the same name');
    must(t, await postConfig(n, org.adminKey, 'd'), 200, 'config');
    t.ok(Date.now() < Date.parse(at), 'all of it before at');
    await sleep(Math.max(0, Date.parse(at) - Date.now()) + 700);
    list = (await listSchedules(n, org.adminKey, 'd')).body;
    t.same(list.map((s: { status: string }) => s.status), ['cancelled', 'cancelled'], 'both cancelled');
    t.equal((await getFlag(n, org.adminKey, 'd')).body.configs[0].enabled, true, 'nothing applied to the new flag');
  });

  t.test('GraphQL: scheduleFlagChange, Flag.schedules, cancelSchedule, AuditEvent.scheduleId', async (t) => {
    const org = await createOrg(n);
    must(t, await postFlag(n, org.adminKey, 'q'), 201, 'create');
    must(t, await postConfig(n, org.adminKey, 'q'), 200, 'config');
    const gql = async (query: string, variables: Record<string, unknown> = {}) => {
      const r = await n.req('POST', '/api/graphql', { key: org.adminKey, body: { query, variables } });
      if (r.status !== 200) throw new Error(`graphql ${r.status} ${r.text}`);
      return r.body;
    };
    const fields = 'id flag at stage clientId enabled status appliedAt error createdBy { keyId keyName } config { stage defaultVariantKey rules { id } }';
    const made = await gql(`mutation($in: ScheduleInput!) { scheduleFlagChange(name: "q", input: $in) { ${fields} } }`, {
      in: { at: inMs(2500), stage: 'production', config: { stage: 'production', enabled: true, defaultVariantKey: 'off', rolloutPercentage: 100 } },
    });
    t.notOk(made.errors, 'no errors');
    const s = made.data.scheduleFlagChange;
    t.equal(s.status, 'pending');
    t.equal(s.config.defaultVariantKey, 'off');
    const other = (await gql(`mutation { scheduleFlagChange(name: "q", input: {at: "${inMs(60_000)}", stage: "production", enabled: false}) { id } }`)).data.scheduleFlagChange;
    const listed = await gql(`{ flag(name: "q") { schedules { id status } } }`);
    t.same(listed.data.flag.schedules, [{ id: s.id, status: 'pending' }, { id: other.id, status: 'pending' }]);
    const bad = await gql(`mutation { scheduleFlagChange(name: "q", input: {at: "2001-01-01T00:00:00Z", stage: "production", enabled: false}) { id } }`);
    t.equal(bad.data.scheduleFlagChange, null);
    t.equal(bad.errors[0].extensions.code, 'BAD_REQUEST');
    t.same((await gql(`mutation { cancelSchedule(name: "q", id: "${other.id}") }`)).data, { cancelSchedule: true });
    const again = await gql(`mutation { cancelSchedule(name: "q", id: "${other.id}") }`);
    t.equal(again.errors[0].extensions.code, 'CONFLICT');
    t.equal((await settled(n, org.adminKey, 'q', s.id)).status, 'applied');
    const log = await gql(`{ auditLog(target: "q") { action scheduleId } }`);
    t.same(log.data.auditLog.filter((e: { scheduleId: string | null }) => e.scheduleId !== null), [{ action: 'config.upsert', scheduleId: s.id }]);
  });
});

t.test('pending schedules are bounded per flag and per organization (409 QUOTA_EXCEEDED)', async (t) => {
  for (const k of ['VEXIL_MAX_PENDING_SCHEDULES_PER_FLAG', 'VEXIL_MAX_PENDING_SCHEDULES_PER_ORG']) {
    t.throws(() => loadConfig({ [k]: '0' }), new RegExp(`Invalid setting ${k}`), `${k}=0 refused at start`);
    t.throws(() => loadConfig({ [k]: 'lots' }), new RegExp(k), `${k}=lots refused at start`);
  }
  const n = await startNode(t, { env: { VEXIL_MAX_PENDING_SCHEDULES_PER_FLAG: '2', VEXIL_MAX_PENDING_SCHEDULES_PER_ORG: '3' } });
  const org = await createOrg(n);
  for (const f of ['x', 'y']) {
    must(t, await postFlag(n, org.adminKey, f), 201, 'create');
    must(t, await postConfig(n, org.adminKey, f), 200, 'config');
  }
  const body = () => ({ at: inMs(60_000), stage: 'production', enabled: false });
  const first = must(t, await postSchedule(n, org.adminKey, 'x', body()), 201, 'x 1');
  must(t, await postSchedule(n, org.adminKey, 'x', body()), 201, 'x 2');
  await expectRefused(t, n, org.adminKey, 'x', body(), 409, 'QUOTA_EXCEEDED', /VEXIL_MAX_PENDING_SCHEDULES_PER_FLAG=2/);
  must(t, await postSchedule(n, org.adminKey, 'y', body()), 201, 'y 1');
  await expectRefused(t, n, org.adminKey, 'y', body(), 409, 'QUOTA_EXCEEDED', /VEXIL_MAX_PENDING_SCHEDULES_PER_ORG=3/);
  t.equal((await cancelSchedule(n, org.adminKey, 'x', first.body.id)).status, 204);
  must(t, await postSchedule(n, org.adminKey, 'y', body()), 201, 'a cancelled schedule no longer counts');
});

t.test('pending schedules survive a restart on the embedded database; one due while it was down is applied at start', async (t) => {
  const dataDir = await pgliteCopy();
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const first = await startNode(t, { dataDir });
  const key = first.adminKey;
  must(t, await postFlag(first, key, 'p', { project: 'default' }), 201, 'create');
  must(t, await postConfig(first, key, 'p'), 200, 'config');
  const due = must(t, await postSchedule(first, key, 'p', { at: inMs(3000), stage: 'production', enabled: false }), 201, 'due while down');
  const later = must(t, await postSchedule(first, key, 'p', { at: inMs(60_000), stage: 'production', enabled: true }), 201, 'later');
  await first.close();
  t.ok(Date.now() < Date.parse(due.body.at), 'stopped before at');
  await sleep(Math.max(0, Date.parse(due.body.at) - Date.now()) + 500);
  const startedAt = Date.now();
  const second = await startNode(t, { dataDir, adminKey: key });
  const done = await settled(second, key, 'p', due.body.id, 3000);
  t.equal(done.status, 'applied', 'applied at start');
  t.ok(Date.parse(done.appliedAt) >= startedAt - 5000, 'after the restart');
  t.equal((await getFlag(second, key, 'p')).body.configs[0].enabled, false);
  t.equal((await settled(second, key, 'p', later.body.id, 0)).status, 'pending', 'the later one still pending');
});
