/**
 * Flag insights, the counting half (CONTRACT 18, docs/insights.md): known numbers of evaluations
 * through every transport and thread — REST and OFREP single on 3 front threads (fresh
 * connections), REST on the main thread handed to the evaluation pool, OFREP bulk and GraphQL in
 * the pool, a GraphQL document run by the management actor, and the in-process provider's reports
 * (`POST /sdk/v1/metrics`) — must reach `flag_evaluation_counts` (hour and day buckets) and
 * `flag_variant_usage` exactly, written by one statement per interval. A graceful stop writes the
 * last counts. Bad reports are 400 and count nothing.
 */
import t from 'tap';
import { OpenFeature } from '@openfeature/server-sdk';
import { rmSync } from 'node:fs';
import { createOrg, evalKey, makeKey, must, postConfig, postFlag, startNode } from '../../helpers/flags.js';
import { expectProblem, pgliteCopy, startTestNode, type TestNode } from '../../helpers/node.js';
import { CuttableProxy, until } from '../../helpers/cluster.js';
import { providerClient } from '../../helpers/provider.js';
import { loadNativeUws } from '../../../src/http/uws.js';
import { applyRetention, InsightsFlusher } from '../../../src/insights/flush.js';
import { createLogger } from '../../../src/util/log.js';
import { flagSeries, flagUsage } from '../../../src/insights/store.js';

const threaded = loadNativeUws().ok && process.env.VEXIL_HTTP_FRONT !== 'node';
const FLUSH_MS = 200;

interface CountRow {
  flag: string;
  stage: string;
  application: string;
  variant: string;
  granularity: string;
  count: number;
}

/** The organization's counts, summed per flag, stage, application, variant and granularity ("f1/production/web/on/hour" → n). */
async function counts(n: TestNode, orgId: string): Promise<Record<string, number>> {
  const rows = await n.node.db.query<CountRow>(
    `select flag_name as flag, stage, application, variant, granularity, sum(count)::int as count
     from flag_evaluation_counts where org_id = $1 group by 1, 2, 3, 4, 5 order by 1, 2, 3, 4, 5`,
    [orgId],
  );
  return Object.fromEntries(rows.map((r) => [`${r.flag}/${r.stage}/${r.application}/${r.variant}/${r.granularity}`, r.count]));
}

/** Expected counts in both granularities. */
const both = (m: Record<string, number>): Record<string, number> =>
  Object.fromEntries(Object.entries(m).flatMap(([k, v]) => [[`${k}/day`, v], [`${k}/hour`, v]]).sort(([a], [b]) => (a < b ? -1 : 1)));

async function orgIdOf(n: TestNode, name: string): Promise<string> {
  const rows = await n.node.db.query<{ id: string }>('select id from organizations where name = $1', [name]);
  return rows[0].id;
}

const fresh = (n: TestNode, method: string, path: string, opts: { key?: string; body?: unknown } = {}) =>
  n.req(method, path, { ...opts, headers: { connection: 'close' } });

t.test('every transport, thread and the provider add up exactly', async (t) => {
  const n = await startNode(t, {
    env: {
      VEXIL_FRONT_THREADS: threaded ? '3' : '1',
      VEXIL_EVAL_WORKERS: '1',
      VEXIL_EVAL_HANDOFF: 'always',
      VEXIL_INSIGHTS_FLUSH_MS: String(FLUSH_MS),
    },
  });
  const org = await createOrg(n);
  const orgId = await orgIdOf(n, org.name);
  must(t, await postFlag(n, org.adminKey, 'f1'), 201, 'f1');
  must(t, await postFlag(n, org.adminKey, 'f2'), 201, 'f2');
  must(t, await postConfig(n, org.adminKey, 'f1', { defaultVariantKey: 'on' }), 200, 'f1 production');
  must(t, await postConfig(n, org.adminKey, 'f1', { stage: 'development', defaultVariantKey: 'off' }), 200, 'f1 development');
  must(t, await postConfig(n, org.adminKey, 'f2', { defaultVariantKey: 'off' }), 200, 'f2 production');
  const key = await evalKey(n, org.adminKey, 'web');
  const readerKey = await makeKey(n, org.adminKey, { permissions: ['CanEvaluate', 'CanRead'], application: 'web' });
  const pool = n.node.runtime.pool!;
  const sentBefore = pool.itemsSent;

  // REST and OFREP single, each on a connection of its own: spread over the front threads.
  const ids = new Set<string>();
  for (let i = 0; i < 12; i++) {
    const r = must(t, await fresh(n, 'POST', '/flags/f1', { key, body: { userId: `u${i}`, stage: 'production' } }), 200, 'REST');
    ids.add((r.headers.get('x-request-id') ?? '').split('-')[0]);
  }
  for (let i = 0; i < 5; i++) must(t, await fresh(n, 'POST', '/flags/f1', { key, body: { userId: `u${i}`, stage: 'development' } }), 200, 'REST development');
  for (let i = 0; i < 7; i++) {
    const r = must(t, await fresh(n, 'POST', '/ofrep/v1/evaluate/flags/f2', { key, body: { context: { targetingKey: `u${i}`, stage: 'production' } } }), 200, 'OFREP');
    ids.add((r.headers.get('x-request-id') ?? '').split('-')[0]);
  }
  if (threaded) t.ok(ids.size >= 2, `answered by several threads (${[...ids].join(', ')})`);
  // OFREP bulk: f1 and f2 each time (in the pool).
  for (let i = 0; i < 3; i++) must(t, await n.req('POST', '/ofrep/v1/evaluate/flags', { key, body: { context: { targetingKey: `b${i}`, stage: 'production' } } }), 200, 'bulk');
  // GraphQL, 10 aliases a document (in the pool), and a document with a management field (in the actor).
  const aliases = Array.from({ length: 10 }, (_, i) => `a${i}: evaluate(key: "f1", userId: "g${i}", stage: "production") { key }`).join(' ');
  for (let i = 0; i < 2; i++) {
    const r = must(t, await n.req('POST', '/api/graphql', { key, body: { query: `{ ${aliases} }` } }), 200, 'GraphQL');
    t.equal(r.body.data?.a9?.key, 'on');
  }
  const mixed = must(t, await n.req('POST', '/api/graphql', { key: readerKey, body: { query: '{ e: evaluate(key: "f2", userId: "m", stage: "production") { key } flag(name: "f2") { name } }' } }), 200, 'mixed GraphQL');
  t.equal(mixed.body.data?.e?.key, 'off', 'the mixed document evaluated');
  t.ok(pool.itemsSent - sentBefore >= 5, 'the pool evaluated');

  // The in-process provider: 9 + 4 evaluations, sent at close.
  const { provider, client, domain } = await providerClient(t, { url: n.url, key, stage: 'production', metricsIntervalMs: 60_000 });
  for (let i = 0; i < 9; i++) t.equal(await client.getBooleanValue('f1', false, { targetingKey: `p${i}` }), true);
  for (let i = 0; i < 4; i++) t.equal(await client.getBooleanValue('f2', true, { targetingKey: `p${i}` }), false);
  await OpenFeature.clearProviders(domain);
  t.equal(provider.metricsSent, 13, 'the provider sent its 13 counts at close');
  t.equal(provider.metricsDropped, 0);

  const expected = both({
    'f1/development/web/off': 5,
    'f1/production/web/on': 12 + 3 + 20 + 9,
    'f2/production/web/off': 7 + 3 + 1 + 4,
  });
  const got = await until(() => counts(n, orgId), (c) => JSON.stringify(c) === JSON.stringify(expected), 8000, 50);
  t.same(got, expected, 'exact counts per flag, stage, application, variant, in hour and day buckets');
  // A few more intervals: nothing is written twice.
  await new Promise((r) => setTimeout(r, FLUSH_MS * 3));
  t.same(await counts(n, orgId), expected, 'still exact after more intervals');

  const usage = await n.node.db.query<{ flag: string; stage: string; variant: string; ok: boolean }>(
    `select flag_name as flag, stage, variant, (first_at <= last_at and last_at <= now() + interval '1 second' and last_at > now() - interval '1 minute') as ok
     from flag_variant_usage where org_id = $1 order by 1, 2, 3`,
    [orgId],
  );
  t.same(
    usage.map((u) => `${u.flag}/${u.stage}/${u.variant}/${u.ok}`),
    ['f1/development/off/true', 'f1/production/on/true', 'f2/production/off/true'],
    'first and last evaluation per flag, stage and variant',
  );
  // The reads the insights API uses (src/insights/store.ts).
  const series = await flagSeries(n.node.db, orgId, 'f1', 'day', new Date(Date.now() - 2 * 86_400_000), new Date(Date.now() + 86_400_000));
  t.same(
    series.map((b) => [b.stage, b.count, b.variants]),
    [['development', 5, { off: 5 }], ['production', 44, { on: 44 }]],
    'flagSeries: the day bucket per stage, per variant',
  );
  t.same([...(await flagUsage(n.node.db, orgId, 'f1')).entries()].map(([s, u]) => [s, u.variants]), [['development', ['off']], ['production', ['on']]], 'flagUsage: per stage');
  const buckets = await n.node.db.query<{ ok: boolean }>(
    `select bool_and((granularity = 'hour' and bucket_start = date_trunc('hour', bucket_start)) or (granularity = 'day' and bucket_start = date_trunc('day', bucket_start at time zone 'UTC') at time zone 'UTC')) as ok
     from flag_evaluation_counts where org_id = $1`,
    [orgId],
  );
  t.equal(buckets[0].ok, true, 'hour buckets start on the hour, day buckets at midnight UTC');

  t.test('the provider keeps counting while the node cannot be reached, within its bound', async (t) => {
    must(t, await postFlag(n, org.adminKey, 'f3'), 201, 'f3');
    must(t, await postConfig(n, org.adminKey, 'f3', { defaultVariantKey: 'on' }), 200, 'f3 production');
    const before = await counts(n, orgId);
    const proxy = await CuttableProxy.start('127.0.0.1', n.node.port);
    t.teardown(() => proxy.close());
    const { provider, client, domain } = await providerClient(t, { url: `http://127.0.0.1:${proxy.port}`, key, stage: 'production', metricsIntervalMs: 100, metricsMaxEntries: 2, minReconnectDelayMs: 50 });
    for (let i = 0; i < 2; i++) await client.getBooleanValue('f1', false, { targetingKey: `q${i}` });
    await until(async () => provider.metricsSent, (v) => v === 2, 5000, 20);
    proxy.cut();
    const started = performance.now();
    for (let i = 0; i < 5; i++) t.equal(await client.getBooleanValue('f1', false, { targetingKey: `q${i}` }), true, 'answers while the node is away');
    for (let i = 0; i < 3; i++) await client.getBooleanValue('f2', true, { targetingKey: `q${i}` });
    t.ok(performance.now() - started < 200, 'evaluations do not wait on the network');
    await new Promise((r) => setTimeout(r, 350)); // a few failed sends
    for (let i = 0; i < 4; i++) await client.getBooleanValue('f3', false, { targetingKey: `q${i}` });
    await new Promise((r) => setTimeout(r, 250));
    t.equal(provider.metricsSent, 2, 'nothing more sent while the node is away');
    t.equal(provider.metricsDropped, 4, 'past its bound (2 distinct flag and variant counts) the third is dropped, and counted');
    proxy.restore();
    await until(async () => provider.metricsSent, (v) => v === 10, 8000, 20);
    t.pass('the kept counts were sent once the node was back');
    // Close while the node is away: close does not hang, and what it could not send is counted as dropped.
    proxy.cut();
    await client.getBooleanValue('f1', false, { targetingKey: 'last' });
    const closing = performance.now();
    await OpenFeature.clearProviders(domain);
    t.ok(performance.now() - closing < 3000, 'close returned');
    t.equal(provider.metricsDropped, 5, 'the unsent count at close is counted as dropped');
    const want = { ...before };
    want['f1/production/web/on/day'] += 7;
    want['f1/production/web/on/hour'] += 7;
    want['f2/production/web/off/day'] += 3;
    want['f2/production/web/off/hour'] += 3;
    t.same(await until(() => counts(n, orgId), (c) => c['f2/production/web/off/hour'] === want['f2/production/web/off/hour'], 5000, 50), want, 'the node counted exactly what the provider sent');
  });

  t.test('metricsIntervalMs 0 turns the provider\'s counting and reports off, close included', async (t) => {
    const before = await counts(n, orgId);
    const { provider, client, domain } = await providerClient(t, { url: n.url, key, stage: 'production', metricsIntervalMs: 0 });
    for (let i = 0; i < 6; i++) t.equal(await client.getBooleanValue('f1', false, { targetingKey: `z${i}` }), true);
    await OpenFeature.clearProviders(domain);
    t.equal(provider.metricsSent, 0, 'nothing sent, not even at close');
    t.equal(provider.metricsDropped, 0, 'nothing counted, so nothing dropped');
    await new Promise((r) => setTimeout(r, FLUSH_MS * 3));
    t.same(await counts(n, orgId), before, 'the node counted nothing from it');
  });

  t.test('one statement per interval, bounded between writes; retention', async (t) => {
    const statements: string[] = [];
    const db = {
      query: <T>(text: string, params?: unknown[]) => {
        statements.push(text);
        return n.node.db.query<T>(text, params);
      },
      exec: (s: string) => n.node.db.exec(s),
    };
    const lines: string[] = [];
    const flusher = new InsightsFlusher(db, createLogger('info', {}, (l) => lines.push(l)), { flushMs: 60_000, maxPending: 3, own: null });
    const h0 = Math.floor(Date.now() / 3_600_000) * 3600 - 7200; // two hours ago, on the hour
    const o = 'flusher-test-org';
    flusher.add([o, 'x', 'production', 'web', 'on', 2, h0 + 10, h0 + 20, o, 'x', 'production', 'web', 'on', 3, h0 + 5, h0 + 30]);
    flusher.add([o, 'x', 'production', 'web', 'on', 4, h0 + 3600, h0 + 3700, o, 'x', 'production', 'web', 'off', 1, h0 + 40, h0 + 40]);
    flusher.add([o, 'y', 'production', 'web', 'on', 7, h0, h0]); // a fourth counter: past maxPending 3
    await flusher.flush();
    await flusher.flush(); // nothing left: no statement
    t.equal(statements.length, 1, 'one statement for the whole batch, none for an empty one');
    t.match(lines.join('\n'), /"evaluations":7,"msg":"insights counts dropped/, 'the dropped count is logged');
    const rows = await n.node.db.query<{ k: string }>(
      `select variant || ' ' || granularity || ' ' || (extract(epoch from bucket_start)::bigint - $2) || ' ' || count as k from flag_evaluation_counts where org_id = $1 order by 1`,
      [o, h0],
    );
    const dayStart = Math.floor(h0 / 86_400) * 86_400 - h0;
    const sameDay = Math.floor(h0 / 86_400) === Math.floor((h0 + 3600) / 86_400);
    t.same(
      rows.map((r) => r.k),
      [
        ...(sameDay ? [`off day ${dayStart} 1`, `off hour 0 1`, `on day ${dayStart} 9`] : [`off day ${dayStart} 1`, `off hour 0 1`, `on day ${dayStart} 5`, `on day ${dayStart + 86_400} 4`]),
        'on hour 0 5',
        'on hour 3600 4',
      ].sort(),
      'hour and day buckets, summed',
    );
    const usage = await n.node.db.query<{ k: string }>(
      `select variant || ' ' || (extract(epoch from first_at)::bigint - $2) || ' ' || (extract(epoch from last_at)::bigint - $2) as k from flag_variant_usage where org_id = $1 order by 1`,
      [o, h0],
    );
    t.same(usage.map((u) => u.k), ['off 40 40', 'on 5 3700'], 'first and last evaluation per variant');

    const r = 'retention-test-org';
    const day = 86_400_000;
    const at = (msAgo: number) => new Date(Date.now() - msAgo).toISOString();
    for (const [g, ago, label] of [['hour', 15 * day, 'h15'], ['hour', 13 * day, 'h13'], ['day', 401 * day, 'd401'], ['day', 399 * day, 'd399']] as const) {
      await n.node.db.query(
        `insert into flag_evaluation_counts (org_id, flag_name, stage, application, variant, granularity, bucket_start, count) values ($1, $2, 'production', 'web', 'on', $3, $4, 1)`,
        [r, label, g, at(ago)],
      );
    }
    t.ok((await applyRetention(n.node.db, Date.now())) >= 2, 'old buckets deleted');
    const left = await n.node.db.query<{ flag_name: string }>('select flag_name from flag_evaluation_counts where org_id = $1 order by 1', [r]);
    t.same(left.map((x) => x.flag_name), ['d399', 'h13'], 'hour buckets kept 14 days, day buckets 400 days');
  });

  t.test('POST /sdk/v1/metrics: bad reports are 400 and count nothing', async (t) => {
    const before = await counts(n, orgId);
    const now = new Date().toISOString();
    const post = (body: unknown, q = '?stage=production', k = key) => n.req('POST', `/sdk/v1/metrics${q}`, { key: k, body });
    const ok = { start: now, end: now, counts: [{ flag: 'f1', variant: 'on', count: 1 }] };
    expectProblem(t, await post({ ...ok, counts: 'x' }), 400, 'BAD_REQUEST', 'counts not an array');
    expectProblem(t, await post({ ...ok, extra: 1 }), 400, 'BAD_REQUEST', 'unknown field');
    expectProblem(t, await post({ ...ok, start: 'yesterday' }), 400, 'BAD_REQUEST', 'bad date');
    expectProblem(t, await post({ ...ok, start: '2026-01-01T10:00:00' }), 400, 'BAD_REQUEST', 'no time zone');
    expectProblem(t, await post({ ...ok, start: new Date(Date.now() + 60_000).toISOString() }), 400, 'BAD_REQUEST', 'end before start');
    expectProblem(t, await post({ ...ok, counts: [{ flag: 'f1', variant: 'on', count: -1 }] }), 400, 'BAD_REQUEST', 'negative count');
    expectProblem(t, await post({ ...ok, counts: [{ flag: 'f1', variant: 'on', count: 1.5 }] }), 400, 'BAD_REQUEST', 'fractional count');
    expectProblem(t, await post({ ...ok, counts: [...ok.counts, { flag: 'f1', variant: 'on', count: 1, extra: true }] }), 400, 'BAD_REQUEST', 'a bad entry among good ones');
    expectProblem(t, await post({ ...ok, counts: Array.from({ length: 10_001 }, () => ({ flag: 'f1', variant: 'on', count: 1 })) }), 400, 'BAD_REQUEST', 'more than 10,000 entries');
    expectProblem(t, await post(ok, ''), 400, 'BAD_REQUEST', 'no stage, key without environment scope');
    expectProblem(t, await post(ok, '?stage=nowhere'), 404, 'NOT_FOUND', 'unknown stage');
    expectProblem(t, await post(ok, '?stage=production&x=1'), 400, 'BAD_REQUEST', 'unknown parameter');
    expectProblem(t, await post(ok, '?stage=production', org.adminKey), 403, 'FORBIDDEN', 'an org-wide key');
    expectProblem(t, await post(ok, '?stage=production', 'nope'), 401, 'UNAUTHENTICATED', 'no such key');
    const raw = await n.req('POST', '/sdk/v1/metrics?stage=production', { key, raw: 'not json', headers: { 'content-type': 'application/json' } });
    t.equal(raw.status, 400, 'not JSON');
    // Unknown flags and variants are not counted; the answer says so.
    const r = must(t, await post({ start: now, end: now, counts: [{ flag: 'nope', variant: 'on', count: 5 }, { flag: 'f1', variant: 'purple', count: 5 }, { flag: 'f1', variant: 'on', count: 0 }] }), 202, 'unknown flag and variant');
    t.same(r.body, { accepted: 0, ignored: 2 });
    await new Promise((r) => setTimeout(r, FLUSH_MS * 3));
    t.same(await counts(n, orgId), before, 'nothing was counted');
    // A good one is counted in the key's environment scope when no stage is given.
    const devKey = await evalKey(n, org.adminKey, 'web', 'development');
    const good = must(t, await post({ start: now, end: now, counts: [{ flag: 'f1', variant: 'off', count: 1000 }, { flag: 'f2', variant: '', count: 2 }] }, '', devKey), 202, 'good report');
    t.same(good.body, { accepted: 2, ignored: 0 });
    const want = { ...before, 'f1/development/web/off/day': 1005, 'f1/development/web/off/hour': 1005, 'f2/development/web//day': 2, 'f2/development/web//hour': 2 };
    t.same(await until(() => counts(n, orgId), (c) => c['f2/development/web//hour'] === 2, 5000, 50), Object.fromEntries(Object.entries(want).sort(([a], [b]) => (a < b ? -1 : 1))));
  });
});

t.test('a graceful stop writes the last counts', async (t) => {
  const dataDir = await pgliteCopy();
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const env = { VEXIL_INSIGHTS_FLUSH_MS: '10000', VEXIL_FRONT_THREADS: '1', VEXIL_EVAL_WORKERS: '0', VEXIL_RATE_LIMIT_EVAL: '1000000', VEXIL_OPERATOR_TOKEN: 'test-operator-token-0123456789abcdef' };
  const n = await startTestNode(null, { dataDir, env });
  let orgId = '';
  try {
    orgId = await orgIdOf(n, 'default');
    must(t, await n.req('POST', '/api/flags', { key: n.adminKey, body: { name: 'g1', project: 'default', type: 'boolean', variants: [{ key: 'on', value: true, valueType: 'boolean' }, { key: 'off', value: false, valueType: 'boolean' }] } }), 201, 'flag');
    must(t, await n.req('POST', '/api/flags/g1/configs', { key: n.adminKey, body: { stage: 'production', enabled: true, defaultVariantKey: 'on', rolloutPercentage: 100 } }), 200, 'config');
    const key = await makeKey(n, n.adminKey, { permissions: ['CanEvaluate'], application: 'default' });
    for (let i = 0; i < 6; i++) must(t, await n.req('POST', '/flags/g1', { key, body: { userId: `u${i}`, stage: 'production' } }), 200, 'REST');
    t.same(await counts(n, orgId), {}, 'nothing written yet (the interval is 10 s)');
  } finally {
    await n.close();
  }
  const again = await startTestNode(t, { dataDir, adminKey: n.adminKey, env });
  t.same(await counts(again, orgId), both({ 'g1/production/default/on': 6 }), 'the stop wrote them');
});
