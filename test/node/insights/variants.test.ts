/**
 * CONTRACT 18: every evaluation is counted per flag, environment, application and *variant*,
 * through every transport and the in-process provider. The counters find a variant's cell by the
 * engine's `Evaluation.index` (src/insights/counter.ts; the provider's record, packages/
 * openfeature-provider), so a count can land on the wrong variant while the totals stay right;
 * test/node/insights/counts.test.ts serves one variant per flag and stage, which would not show it.
 * Here a flag whose three variants are listed out of name order is split three ways (and a flag
 * without variants serves none), evaluated through REST on several front threads, REST handed to
 * the pool, OFREP single and bulk, GraphQL in the pool and in the management actor, and the
 * provider; the stored counts per variant must be exactly the variants the answers named.
 */
import t from 'tap';
import { OpenFeature } from '@openfeature/server-sdk';
import { createOrg, evalKey, makeKey, must, postConfig, postFlag, startNode } from '../../helpers/flags.js';
import type { TestNode } from '../../helpers/node.js';
import { until } from '../../helpers/cluster.js';
import { providerClient } from '../../helpers/provider.js';
import { loadNativeUws } from '../../../src/http/uws.js';

const threaded = loadNativeUws().ok && process.env.VEXIL_HTTP_FRONT !== 'node';

/** Listed out of name order, so that a variant's position (its index) is not its rank by name. */
const COLOURS = ['green', 'red', 'blue'].map((key) => ({ key, value: key.toUpperCase(), valueType: 'string' }));
const SPLIT = {
  defaultVariantKey: 'blue',
  rules: [{ id: 'pro', priority: 1, conditions: [{ field: 'plan', operator: '==', value: 'pro' }], allocations: [{ variantKey: 'red', percentage: 34 }, { variantKey: 'blue', percentage: 33 }, { variantKey: 'green', percentage: 33 }] }],
};

const fresh = (n: TestNode, path: string, key: string, body: unknown) => n.req('POST', path, { key, body, headers: { connection: 'close' } });

t.test('counts land on the variant each transport answered', async (t) => {
  const n = await startNode(t, {
    env: { VEXIL_FRONT_THREADS: threaded ? '3' : '1', VEXIL_EVAL_WORKERS: '1', VEXIL_EVAL_HANDOFF: 'always', VEXIL_INSIGHTS_FLUSH_MS: '200' },
  });
  const org = await createOrg(n);
  const orgId = (await n.node.db.query<{ id: string }>('select id from organizations where name = $1', [org.name]))[0].id;
  must(t, await postFlag(n, org.adminKey, 'colour', { type: 'string', variants: COLOURS }), 201, 'colour');
  must(t, await postConfig(n, org.adminKey, 'colour', SPLIT), 200, 'colour config');
  must(t, await postFlag(n, org.adminKey, 'empty', { type: 'string', variants: [] }), 201, 'a flag without variants');
  const key = await evalKey(n, org.adminKey, 'web');
  const readerKey = await makeKey(n, org.adminKey, { permissions: ['CanEvaluate', 'CanRead'], application: 'web' });

  /** What the answers named, per "flag/variant" ('' for none). */
  const answered = new Map<string, number>();
  const saw = (flag: string, variant: string | null | undefined) => answered.set(`${flag}/${variant ?? ''}`, (answered.get(`${flag}/${variant ?? ''}`) ?? 0) + 1);
  const plan = (i: number) => (i % 5 === 0 ? 'free' : 'pro');

  for (let i = 0; i < 30; i++) {
    const r = must(t, await fresh(n, '/flags/colour', key, { userId: `r${i}`, stage: 'production', context: { plan: plan(i) } }), 200, 'REST');
    saw('colour', r.body.key);
  }
  for (let i = 0; i < 4; i++) saw('empty', must(t, await fresh(n, '/flags/empty', key, { userId: `r${i}`, stage: 'production' }), 200, 'REST, no variant').body.key);
  for (let i = 0; i < 20; i++) {
    const r = must(t, await fresh(n, '/ofrep/v1/evaluate/flags/colour', key, { context: { targetingKey: `o${i}`, stage: 'production', plan: plan(i) } }), 200, 'OFREP');
    saw('colour', r.body.variant);
  }
  for (let i = 0; i < 10; i++) {
    const r = must(t, await n.req('POST', '/ofrep/v1/evaluate/flags', { key, body: { context: { targetingKey: `b${i}`, stage: 'production', plan: plan(i) } } }), 200, 'OFREP bulk');
    const flags = r.body.flags as { key: string; variant?: string }[];
    t.ok(flags.some((f) => f.key === 'colour'), 'bulk answers colour');
    for (const f of flags) saw(f.key, f.variant);
  }
  const aliases = Array.from({ length: 12 }, (_, i) => `a${i}: evaluate(key: "colour", userId: "g${i}", stage: "production", context: { plan: "${plan(i)}" }) { key }`).join(' ');
  for (let d = 0; d < 2; d++) {
    const r = must(t, await n.req('POST', '/api/graphql', { key, body: { query: `{ ${aliases} }` } }), 200, 'GraphQL');
    for (let i = 0; i < 12; i++) saw('colour', r.body.data[`a${i}`].key);
  }
  const mixed = must(t, await n.req('POST', '/api/graphql', { key: readerKey, body: { query: '{ e: evaluate(key: "colour", userId: "m1", stage: "production", context: { plan: "pro" }) { key } flag(name: "colour") { name } }' } }), 200, 'mixed GraphQL');
  saw('colour', mixed.body.data.e.key);

  const { provider, client, domain } = await providerClient(t, { url: n.url, key, stage: 'production', metricsIntervalMs: 60_000 });
  for (let i = 0; i < 25; i++) saw('colour', (await client.getStringDetails('colour', 'x', { targetingKey: `p${i}`, plan: plan(i) })).variant);
  for (let i = 0; i < 3; i++) saw('empty', (await client.getStringDetails('empty', 'x', { targetingKey: `p${i}` })).variant);
  await OpenFeature.clearProviders(domain);
  t.equal(provider.metricsSent, 28, 'the provider sent its counts at close');

  const colours = [...answered.keys()].filter((k) => k.startsWith('colour/')).sort();
  t.same(colours, ['colour/blue', 'colour/green', 'colour/red'], 'the answers named all three variants');
  t.same([...answered.keys()].filter((k) => k.startsWith('empty/')), ['empty/'], 'and no variant for the flag without variants');
  const want = Object.fromEntries([...answered].sort(([a], [b]) => (a < b ? -1 : 1)));
  const stored = async () => {
    const rows = await n.node.db.query<{ k: string; count: number }>(
      `select flag_name || '/' || variant as k, sum(count)::int as count from flag_evaluation_counts
       where org_id = $1 and granularity = 'hour' and stage = 'production' and application = 'web' group by 1 order by 1`,
      [orgId],
    );
    return Object.fromEntries(rows.map((r) => [r.k, r.count]));
  };
  const got = await until(stored, (c) => JSON.stringify(c) === JSON.stringify(want), 8000, 50);
  t.same(got, want, 'stored per variant exactly as answered');
  const series = await n.req('GET', '/api/flags/colour/insights?bucket=day', { key: org.adminKey });
  t.equal(series.status, 200);
  const production = (series.body.series as { stage: string; variants: Record<string, number> }[]).find((s) => s.stage === 'production');
  t.same(production?.variants, { blue: want['colour/blue'], green: want['colour/green'], red: want['colour/red'] }, 'GET /api/flags/{name}/insights: the same, per variant');
});
