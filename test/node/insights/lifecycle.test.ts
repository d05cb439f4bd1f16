/**
 * Flag insights, lifecycle half (CONTRACT 18, docs/insights.md "Lifecycle"), on one node on the
 * embedded database: purpose, the settings, every status and reason with durations of seconds,
 * exactly one `flag.stale` per turn, `?status=` paging (REST and GraphQL), the insights route's
 * shape and its 400s, and the `vexil_flags` gauges. Usage and counts are written straight into the
 * counting half's tables, with the timestamps each case needs.
 */
import t from 'tap';
import { setTimeout as sleep } from 'node:timers/promises';
import { createOrg, expectProblem, makeKey, must, postFlag, putFlag, startNode, type Org } from '../../helpers/flags.js';
import { gql } from '../../helpers/graphql.js';
import { until } from '../../helpers/cluster.js';
import type { TestNode } from '../../helpers/node.js';

t.setTimeout(300_000);

const ENV = { VEXIL_INSIGHTS_STATUS_MS: '100' };

async function orgId(n: TestNode, org: Org): Promise<string> {
  const rows = await n.node.db.query<{ id: string }>('select id from organizations where name = $1', [org.name]);
  return rows[0].id;
}

/** Sets (or moves) the usage row of a flag, stage and variant: first and last evaluation `firstAgo` / `lastAgo` ms ago. */
async function usage(n: TestNode, id: string, flag: string, stage: string, variant: string, firstAgo: number, lastAgo: number, now = Date.now()): Promise<void> {
  await n.node.db.query(
    `insert into flag_variant_usage (org_id, flag_name, stage, variant, first_at, last_at) values ($1, $2, $3, $4, $5, $6)
     on conflict (org_id, flag_name, stage, variant) do update set first_at = excluded.first_at, last_at = excluded.last_at`,
    [id, flag, stage, variant, new Date(now - firstAgo), new Date(now - lastAgo)],
  );
}

const insights = (n: TestNode, key: string, flag: string, query = '') => n.req('GET', `/api/flags/${flag}/insights${query}`, { key });
const settings = (n: TestNode, key: string, body: unknown) => n.req('PUT', '/api/insights/settings', { key, body });

async function statusOf(n: TestNode, key: string, flag: string): Promise<{ status: string; reasons: string[] }> {
  const r = await insights(n, key, flag);
  if (r.status !== 200) throw new Error(`insights ${flag}: ${r.status} ${r.text}`);
  return { status: r.body.status, reasons: r.body.reasons };
}

/** Names of the flags `?status=` lists, every page walked with `limit`. */
async function listed(n: TestNode, key: string, status: string, limit = 1000): Promise<{ names: string[]; total: number }> {
  const names: string[] = [];
  let path: string | null = `/api/flags?status=${status}&limit=${limit}`;
  let total = -1;
  while (path !== null) {
    const r = await n.req('GET', path, { key });
    if (r.status !== 200) throw new Error(`list: ${r.status} ${r.text}`);
    names.push(...r.body.map((f: { name: string }) => f.name));
    total = Number(r.headers.get('x-total-count'));
    const link = r.headers.get('link');
    path = link === null ? null : new URL(/<([^>]+)>/.exec(link)![1], n.url).pathname + new URL(/<([^>]+)>/.exec(link)![1], n.url).search;
  }
  return { names, total };
}

async function staleEvents(n: TestNode, key: string, flag: string): Promise<any[]> {
  const r = await n.req('GET', `/api/audit?target=${flag}&limit=500`, { key });
  return (r.body as any[]).filter((e) => e.action === 'flag.stale');
}

t.test('flag lifecycle on one node', async (t) => {
  const n = await startNode(t, { env: ENV });

  t.test('purpose: release by default, validated, updatable, audited, over GraphQL', async (t) => {
    const org = await createOrg(n);
    const c = must(t, await postFlag(n, org.adminKey, 'p1'), 201, 'create');
    t.equal(c.body.purpose, 'release');
    must(t, await postFlag(n, org.adminKey, 'p2', { purpose: 'experiment' }), 201, 'create experiment');
    expectProblem(t, await postFlag(n, org.adminKey, 'p3', { purpose: 'forever' }), 400, 'BAD_REQUEST', /purpose/);
    t.equal((await n.req('GET', '/api/flags/p3', { key: org.adminKey })).status, 404, 'a refused create creates nothing');
    const u = must(t, await putFlag(n, org.adminKey, 'p2', { purpose: 'killSwitch' }), 200, 'update');
    t.equal(u.body.purpose, 'killSwitch');
    expectProblem(t, await putFlag(n, org.adminKey, 'p2', { purpose: 'Release' }), 400, 'BAD_REQUEST', /purpose/);
    t.equal((await n.req('GET', '/api/flags/p2', { key: org.adminKey })).body.purpose, 'killSwitch', 'unchanged by a 400');
    const log = (await n.req('GET', '/api/audit?target=p2&limit=10', { key: org.adminKey })).body as any[];
    const upd = log.find((e) => e.action === 'flag.update');
    t.equal(upd.before.purpose, 'experiment');
    t.equal(upd.after.purpose, 'killSwitch');
    const g = await gql(n, org.adminKey, `mutation { createFlag(input: {name: "p4", project: "web", type: "boolean", purpose: "operational", variants: [{key: "on", value: true, valueType: "boolean"}]}) { purpose } }`);
    t.same(g.body.data, { createFlag: { purpose: 'operational' } });
    const q = await gql(n, org.adminKey, '{ flag(name: "p1") { purpose } }');
    t.same(q.body.data, { flag: { purpose: 'release' } });
  });

  t.test('settings: defaults, partial PUT, validation, Admin only, audited', async (t) => {
    const org = await createOrg(n);
    const defaults = { lifetimes: { release: 'P40D', experiment: 'P40D', operational: 'P7D', killSwitch: null, permission: null }, unusedAfter: 'P7D' };
    t.same((await n.req('GET', '/api/insights/settings', { key: org.adminKey })).body, defaults);
    const reader = await makeKey(n, org.adminKey, { permissions: ['CanRead', 'CanWrite'] });
    t.same((await n.req('GET', '/api/insights/settings', { key: reader })).body, defaults, 'CanRead reads');
    expectProblem(t, await settings(n, reader, { unusedAfter: 'PT1S' }), 403, 'FORBIDDEN');
    for (const bad of [
      { unusedAfter: 'PT0S' },
      { unusedAfter: 'P' },
      { unusedAfter: 'PT' },
      { unusedAfter: '7 days' },
      { unusedAfter: 'P1DT' },
      { unusedAfter: null },
      { unusedAfter: 7 },
      { lifetimes: { release: 'PT0.5S' } },
      { lifetimes: { forever: 'P1D' } },
      { colour: 'red' },
      {},
    ]) {
      expectProblem(t, await settings(n, org.adminKey, bad), 400, 'BAD_REQUEST', undefined);
    }
    t.same((await n.req('GET', '/api/insights/settings', { key: org.adminKey })).body, defaults, 'no 400 changed anything');
    const r = must(t, await settings(n, org.adminKey, { lifetimes: { release: 'PT1S', killSwitch: 'P1Y', experiment: null } }), 200, 'put');
    t.same(r.body, { lifetimes: { release: 'PT1S', experiment: null, operational: 'P7D', killSwitch: 'P1Y', permission: null }, unusedAfter: 'P7D' });
    const r2 = must(t, await settings(n, org.adminKey, { unusedAfter: 'P1W' }), 200, 'put unusedAfter');
    t.equal(r2.body.lifetimes.release, 'PT1S', 'absent fields kept');
    t.equal(r2.body.unusedAfter, 'P1W');
    const log = (await n.req('GET', '/api/audit?limit=10', { key: org.adminKey })).body as any[];
    const events = log.filter((e) => e.action === 'org.insights');
    t.equal(events.length, 2, 'each PUT audited');
    t.equal(events[0].after.unusedAfter, 'P1W');
    t.equal(events[0].before.unusedAfter, 'P7D');
    const g = await gql(n, org.adminKey, 'mutation { setInsightsSettings(input: {unusedAfter: "PT5S", lifetimes: {permission: "P2D"}}) { unusedAfter lifetimes { permission release } } }');
    t.same(g.body.data, { setInsightsSettings: { unusedAfter: 'PT5S', lifetimes: { permission: 'P2D', release: 'PT1S' } } });
    const q = await gql(n, reader, '{ insightsSettings { unusedAfter } }');
    t.same(q.body.data, { insightsSettings: { unusedAfter: 'PT5S' } });
  });

  t.test('every status and reason, with durations of seconds', async (t) => {
    const org = await createOrg(n);
    const id = await orgId(n, org);
    // unusedAfter 10 s; operational flags grow old after 4 s; release never (null). Each case sets
    // its flag's usage right before reading its status, with margins of seconds on either side
    // (the exact edges are unit tested: test/unit/insights/lifecycle-pure.test.ts).
    must(t, await settings(n, org.adminKey, { unusedAfter: 'PT10S', lifetimes: { release: null, operational: 'PT4S' } }), 200, 'settings');
    for (const f of ['fnew', 'factive', 'funused', 'fsingle', 'fshort', 'fgone']) must(t, await postFlag(n, org.adminKey, f), 201, f);
    must(t, await postFlag(n, org.adminKey, 'fage', { purpose: 'operational' }), 201, 'fage');
    const ageCreated = Date.now();
    const expect = async (flag: string, rows: [stage: string, variant: string, firstAgo: number, lastAgo: number][], want: { status: string; reasons: string[] }, what: string) => {
      for (const [stage, variant, first, last] of rows) await usage(n, id, flag, stage, variant, first, last);
      t.same(await statusOf(n, org.adminKey, flag), want, what);
    };
    t.same(await statusOf(n, org.adminKey, 'fnew'), { status: 'new', reasons: [] }, 'never evaluated: new');
    if (Date.now() - ageCreated < 3000) {
      await expect('fage', [['development', 'on', 20_000, 0], ['development', 'off', 20_000, 0]], { status: 'active', reasons: [] }, 'younger than its lifetime: active');
    }
    await expect('factive', [['development', 'on', 20_000, 0], ['production', 'off', 20_000, 3_000]], { status: 'active', reasons: [] }, 'two variants: active');
    await expect('funused', [['production', 'on', 60_000, 15_000]], { status: 'unused', reasons: ['unused'] }, 'nothing for 15 s: unused');
    await expect('fsingle', [['development', 'on', 30_000, 0], ['production', 'on', 30_000, 1_000], ['production', 'off', 60_000, 15_000]], { status: 'stale', reasons: ['singleVariant'] }, 'one variant in every environment for the window: stale');
    await expect('fshort', [['development', 'on', 3_000, 0]], { status: 'active', reasons: [] }, 'one variant, but history shorter than the window: active');
    // The lists follow within a round or two: every flag's, not only the first to settle (the
    // tracker takes the flags whose usage moved in turn, so fsingle may be listed a round before fshort).
    const lists = async () => ({
      stale: (await listed(n, org.adminKey, 'stale')).names,
      unused: (await listed(n, org.adminKey, 'unused')).names,
      new: (await listed(n, org.adminKey, 'new')).names,
      active: (await listed(n, org.adminKey, 'active')).names.filter((x) => x !== 'fage'),
    });
    const want = { stale: ['fsingle'], unused: ['funused'], new: ['fgone', 'fnew'], active: ['factive', 'fshort'] };
    t.same(await until(lists, (l) => JSON.stringify(l) === JSON.stringify(want), 5000, 50), want, 'every list follows within 5 s');
    // fage grows old at 4 s.
    const wait = ageCreated + 4_200 - Date.now();
    if (wait > 0) await sleep(wait);
    await expect('fage', [['development', 'on', 20_000, 0], ['development', 'off', 20_000, 0]], { status: 'stale', reasons: ['age'] }, 'past its lifetime: stale (age)');
    await expect('fage', [['development', 'on', 60_000, 12_000], ['development', 'off', 60_000, 12_000]], { status: 'unused', reasons: ['age', 'unused'] }, 'unused comes first; no variant in the window is not singleVariant');
    await expect('fage', [['development', 'off', 60_000, 30_000], ['development', 'on', 60_000, 1_000]], { status: 'stale', reasons: ['age', 'singleVariant'] }, 'every stale reason');
    // A new flag stays new however old it is; its age still shows.
    must(t, await settings(n, org.adminKey, { lifetimes: { release: 'PT1S' } }), 200, 'release lifetime 1 s');
    t.same(await statusOf(n, org.adminKey, 'fnew'), { status: 'new', reasons: ['age'] }, 'new, with age');
    await until(() => listed(n, org.adminKey, 'new'), (l) => l.names.join() === 'fgone,fnew', 5000, 50);
    // lastEvaluatedAt: every environment, null where never evaluated.
    const r = await insights(n, org.adminKey, 'fshort');
    t.same(Object.keys(r.body.lastEvaluatedAt).sort(), ['development', 'production']);
    t.equal(r.body.lastEvaluatedAt.production, null);
    t.match(r.body.lastEvaluatedAt.development, /^\d{4}-\d{2}-\d{2}T/);
  });

  t.test('exactly one flag.stale per turn, recorded once across rounds', async (t) => {
    const org = await createOrg(n);
    const id = await orgId(n, org);
    must(t, await settings(n, org.adminKey, { unusedAfter: 'PT3S', lifetimes: { release: null } }), 200, 'settings');
    must(t, await postFlag(n, org.adminKey, 'turn'), 201, 'create');
    // Both variants last evaluated at the same moment: otherwise, for the moments between their
    // last evaluations, the window sees one variant only and the flag is stale (singleVariant)
    // before it is unused, which is a turn (and an event) of its own.
    // In one statement: a status round between two writes would see one variant only.
    const use = async () => {
      const first = new Date(Date.now() - 500);
      const last = new Date();
      await n.node.db.query(
        `insert into flag_variant_usage (org_id, flag_name, stage, variant, first_at, last_at) values ($1, 'turn', 'production', 'on', $2, $3), ($1, 'turn', 'production', 'off', $2, $3)
         on conflict (org_id, flag_name, stage, variant) do update set first_at = excluded.first_at, last_at = excluded.last_at`,
        [id, first, last],
      );
    };
    await use();
    await until(() => statusOf(n, org.adminKey, 'turn'), (s) => s.status === 'active', 3000, 50);
    t.equal((await staleEvents(n, org.adminKey, 'turn')).length, 0, 'active: no event');
    // Unused after 3 s without evaluations: one event, however many rounds pass.
    await until(() => staleEvents(n, org.adminKey, 'turn'), (e) => e.length === 1, 10_000, 100);
    await sleep(600);
    const first = await staleEvents(n, org.adminKey, 'turn');
    t.equal(first.length, 1, `one event for the first turn: ${JSON.stringify(first.map((e) => [e.at, e.before, e.after]))}`);
    t.same(first[0].actor, { system: true });
    t.same(first[0].after, { status: 'unused', reasons: ['unused'] });
    t.equal(first[0].target.name, 'turn');
    t.equal(first[0].application, 'web');
    // Evaluated again: active (no event); unused again: a second event.
    await use();
    await until(() => n.node.db.query<{ status: string }>("select status from flag_lifecycle where flag_name = 'turn' and org_id = $1", [id]), (r) => r[0]?.status === 'active', 3000, 50);
    const afterActive = await staleEvents(n, org.adminKey, 'turn');
    t.equal(afterActive.length, 1, `turning active records no event: ${JSON.stringify(afterActive.map((e) => [e.at, e.before, e.after]))}`);
    await until(() => staleEvents(n, org.adminKey, 'turn'), (e) => e.length === 2, 10_000, 100);
    await sleep(600);
    t.equal((await staleEvents(n, org.adminKey, 'turn')).length, 2, 'one event per turn');
    // A decision made elsewhere (another node, a restart) is not repeated: the row says unused already.
    const rows = await n.node.db.query<{ status: string }>("select status from flag_lifecycle where flag_name = 'turn' and org_id = $1", [id]);
    t.equal(rows[0].status, 'unused');
  });

  t.test('?status= pages like the other filters; GraphQL flagConnection(status:); gauges', async (t) => {
    const org = await createOrg(n);
    const id = await orgId(n, org);
    must(t, await settings(n, org.adminKey, { unusedAfter: 'PT60S', lifetimes: { release: null } }), 200, 'settings');
    const active: string[] = [];
    const fresh: string[] = [];
    for (let i = 0; i < 24; i++) {
      const name = `g${String(i).padStart(2, '0')}`;
      must(t, await postFlag(n, org.adminKey, name), 201, name);
      if (i % 3 === 0) {
        await usage(n, id, name, 'production', 'on', 1000, 0);
        active.push(name);
      } else fresh.push(name);
    }
    await until(() => listed(n, org.adminKey, 'active'), (l) => l.names.length === active.length, 3000, 50);
    const pagedActive = await listed(n, org.adminKey, 'active', 3);
    t.same(pagedActive.names, active, 'active flags, pages of 3');
    t.equal(pagedActive.total, active.length, 'X-Total-Count counts the status');
    const pagedNew = await listed(n, org.adminKey, 'new', 5);
    t.same(pagedNew.names, fresh);
    t.equal(pagedNew.total, fresh.length);
    t.same((await listed(n, org.adminKey, 'stale')).names, []);
    // With the other filters and a scoped key.
    const billing = await makeKey(n, org.adminKey, { permissions: ['CanRead'], application: 'billing' });
    t.same((await listed(n, billing, 'new')).names, [], 'scope applies');
    const q = await n.req('GET', '/api/flags?status=active&q=g0&limit=2', { key: org.adminKey });
    t.same(q.body.map((f: any) => f.name), ['g00', 'g03']);
    t.equal(q.headers.get('x-total-count'), '4');
    expectProblem(t, await n.req('GET', '/api/flags?status=old', { key: org.adminKey }), 400, 'BAD_REQUEST', /status/);
    const g = await gql(n, org.adminKey, '{ flagConnection(first: 2, status: "active") { nodes { name } totalCount pageInfo { hasNextPage endCursor } } }');
    t.same(g.body.data.flagConnection, { nodes: [{ name: 'g00' }, { name: 'g03' }], totalCount: active.length, pageInfo: { hasNextPage: true, endCursor: 'g03' } });
    const bad = await gql(n, org.adminKey, '{ flagConnection(first: 2, status: "old") { totalCount } }');
    t.ok(bad.body.errors?.length > 0, 'a bad status is an error');
    // vexil_flags gauges on /metrics.
    // The gauges follow each round (a flag created while a round runs is counted by the next one):
    // wait until both have followed, then check them together.
    const gauge = (status: string, count: number) => `vexil_flags{organization="${org.name}",status="${status}"} ${count}`;
    const text = await until(() => n.req('GET', '/metrics').then((r) => r.text), (s) => s.includes(gauge('active', active.length)) && s.includes(gauge('new', fresh.length)), 3000, 100);
    t.match(text, gauge('active', active.length));
    t.match(text, gauge('new', fresh.length));
    t.match(text, gauge('stale', 0));
  });

  t.test('insights: shape, series summed over applications, 400s, 403, 404', async (t) => {
    const org = await createOrg(n, ['development', 'production'], ['web', 'billing']);
    const id = await orgId(n, org);
    must(t, await postFlag(n, org.adminKey, 'chart'), 201, 'create');
    const hour = Math.floor(Date.now() / 3_600_000) * 3_600_000;
    const rows: [string, string, string, number, number][] = [
      ['production', 'web', 'on', hour - 3_600_000, 5],
      ['production', 'web-ios', 'on', hour - 3_600_000, 2],
      ['production', '', 'off', hour - 3_600_000, 1],
      ['development', 'web', 'on', hour, 4],
    ];
    for (const [stage, app, variant, start, count] of rows) {
      await n.node.db.query(
        `insert into flag_evaluation_counts (org_id, flag_name, stage, application, variant, granularity, bucket_start, count) values ($1, 'chart', $2, $3, $4, 'hour', $5, $6)`,
        [id, stage, app, variant, new Date(start), count],
      );
    }
    await n.node.db.query(
      `insert into flag_evaluation_counts (org_id, flag_name, stage, application, variant, granularity, bucket_start, count) values ($1, 'chart', 'production', 'web', 'on', 'day', $2, 7)`,
      [id, new Date(Math.floor(Date.now() / 86_400_000) * 86_400_000)],
    );
    await usage(n, id, 'chart', 'production', 'on', 3_600_000, 1000);
    const r = must(t, await insights(n, org.adminKey, 'chart'), 200, 'insights');
    t.same(Object.keys(r.body), ['flag', 'status', 'reasons', 'lastEvaluatedAt', 'series']);
    t.equal(r.body.flag, 'chart');
    t.same(r.body.series, [
      { stage: 'production', start: new Date(hour - 3_600_000).toISOString(), count: 8, variants: { off: 1, on: 7 } },
      { stage: 'development', start: new Date(hour).toISOString(), count: 4, variants: { on: 4 } },
    ].sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : a.stage < b.stage ? -1 : 1)));
    const day = must(t, await insights(n, org.adminKey, 'chart', '?bucket=day'), 200, 'by day');
    t.same(day.body.series.map((p: any) => p.count), [7]);
    const narrow = must(t, await insights(n, org.adminKey, 'chart', `?from=${new Date(hour).toISOString()}&to=${new Date(hour + 3_600_000).toISOString()}`), 200, 'range');
    t.same(narrow.body.series.map((p: any) => p.stage), ['development'], 'from inclusive, to exclusive');
    const g = await gql(n, org.adminKey, '{ flag(name: "chart") { insights(bucket: "hour") { status lastEvaluatedAt { stage at } series { stage count variants } } } }');
    t.equal(g.body.data.flag.insights.series.length, 2);
    t.same(g.body.data.flag.insights.lastEvaluatedAt.map((x: any) => x.stage), ['development', 'production']);
    for (const q of ['?bucket=week', '?from=yesterday', '?to=2024-01-01T00:00:00', `?from=${new Date().toISOString()}&to=${new Date(Date.now() - 1000).toISOString()}`, '?from=2020-01-01T00:00:00Z&to=2020-03-01T00:00:00Z', '?colour=red', '?bucket=day&bucket=hour']) {
      expectProblem(t, await insights(n, org.adminKey, 'chart', q), 400, 'BAD_REQUEST', undefined);
    }
    t.equal((await insights(n, org.adminKey, 'chart', '?from=2020-01-01T00:00:00Z&to=2020-03-01T00:00:00Z&bucket=day')).status, 200, '60 days by day');
    expectProblem(t, await insights(n, org.adminKey, 'missing'), 404, 'NOT_FOUND');
    const billing = await makeKey(n, org.adminKey, { permissions: ['CanRead'], application: 'billing' });
    expectProblem(t, await insights(n, billing, 'chart'), 403, 'FORBIDDEN');
    const evaluator = await makeKey(n, org.adminKey, { permissions: ['CanEvaluate'], application: 'web' });
    expectProblem(t, await insights(n, evaluator, 'chart'), 403, 'FORBIDDEN');
  });
});
