/**
 * The in-process provider's evaluation counts (packages/openfeature-provider, `countEvaluation`):
 * it counts by the engine's `Evaluation.index` (one indexed increment into a record preallocated
 * per compiled flag, names from the compiled flag's variant order), and must report exactly what
 * counting by the served key reports: per (flag, variant), no variant as '', type mismatches
 * included, across a data change that reorders a flag's variants, with `metricsSent` /
 * `metricsDropped` adding up to every resolve. The node's side of the reports is tested in
 * test/node/insights/counts.test.ts; here a plain HTTP server stands in for its three routes, and
 * the reference counts come from the engine's own answers on the same feed data.
 */
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import t, { type Test } from 'tap';
import type { Flag, FlagConfig } from '../../../src/domain/types.js';
import { decodeFeed, type FeedSnapshot } from '../../../src/engine/feed-decode.js';
import { evaluateFlag } from '../../../src/engine/index.js';
import { VexilProvider } from '../../helpers/provider.js';
import { config, flag, rule } from '../../helpers/engine-fixtures.js';

const sv = (key: string) => ({ key, value: key.toUpperCase(), valueType: 'string' as const });

function feed(version: number, reversed: boolean): FeedSnapshot {
  const colours = [sv('red'), sv('green'), sv('blue')];
  const proSplit = (allocations: { variantKey: string; percentage: number }[]) => [rule('split', 1, { conditions: [{ field: 'plan', operator: '==', value: 'pro' }], allocations })];
  const flags: { flag: Flag; configs: FlagConfig[] }[] = [
    {
      flag: flag({ name: 'split', type: 'boolean', variants: [{ key: 'on', value: true, valueType: 'boolean' }, { key: 'off', value: false, valueType: 'boolean' }] }),
      configs: [config({ defaultVariantKey: 'off', rules: proSplit([{ variantKey: 'on', percentage: 50 }, { variantKey: 'off', percentage: 50 }]) })],
    },
    {
      flag: flag({ name: 'colour', variants: reversed ? [...colours].reverse() : colours }),
      configs: [config({ defaultVariantKey: 'blue', rolloutPercentage: 90, rules: proSplit([{ variantKey: 'red', percentage: 30 }, { variantKey: 'green', percentage: 30 }, { variantKey: 'ghost', percentage: 40 }]) })],
    },
    { flag: flag({ name: 'empty', variants: [] }), configs: [config()] },
  ];
  return {
    format: 1,
    version,
    stage: 'production',
    application: 'web',
    organization: { id: 'org-1', environments: ['development', 'staging', 'production'], applications: ['web', 'mobile'], killSwitch: [] },
    flags,
    segments: [],
  };
}

/** A stand-in for the node's snapshot, stream and metrics routes. */
async function stubNode(t: Test, first: FeedSnapshot) {
  const reports: { flag: string; variant: string; count: number }[][] = [];
  const streams: ServerResponse[] = [];
  const server = createServer((req, res) => {
    if (req.method === 'GET' && req.url?.startsWith('/sdk/v1/snapshot')) {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(first));
    } else if (req.method === 'GET' && req.url?.startsWith('/sdk/v1/stream')) {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(': hello\n\n');
      streams.push(res);
    } else if (req.method === 'POST' && req.url?.startsWith('/sdk/v1/metrics')) {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        reports.push(JSON.parse(body).counts);
        res.writeHead(202).end();
      });
    } else res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => {
    for (const s of streams) s.destroy();
    server.closeAllConnections();
    return new Promise<void>((r) => server.close(() => r()));
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, reports, streams };
}

const contexts = Array.from({ length: 200 }, (_, i) => ({ targetingKey: `user-${i}`, plan: i % 4 === 0 ? 'free' : 'pro' }));
const asks: [string, 'boolean' | 'string'][] = [
  ['split', 'boolean'],
  ['colour', 'string'],
  ['colour', 'boolean'], // TYPE_MISMATCH: the served key is counted all the same
  ['empty', 'string'],
];

/** Resolves every ask for every context; adds the served keys (from the engine on the same data) to `want`. */
function resolveAll(provider: VexilProvider, data: FeedSnapshot, want: Map<string, number>): number {
  const snapshot = decodeFeed(data);
  let n = 0;
  for (const ctx of contexts) {
    for (const [name, type] of asks) {
      provider.resolve(name, type === 'boolean' ? false : '', ctx, type);
      const ev = evaluateFlag(snapshot, snapshot.flags.get(name)!, { userId: ctx.targetingKey, stage: 'production', clientId: null, context: ctx }, Date.now());
      const k = `${name}\u0000${ev.key ?? ''}`;
      want.set(k, (want.get(k) ?? 0) + 1);
      n++;
    }
  }
  return n;
}

const summed = (reports: { flag: string; variant: string; count: number }[][]) => {
  const m = new Map<string, number>();
  for (const r of reports) for (const c of r) m.set(`${c.flag}\u0000${c.variant}`, (m.get(`${c.flag}\u0000${c.variant}`) ?? 0) + c.count);
  return m;
};
const sorted = (m: Map<string, number>) => [...m].sort(([a], [b]) => (a < b ? -1 : 1));

t.test('the report by index equals the counts by served key, across a data change that reorders the variants', async (t) => {
  const first = feed(1, false);
  const node = await stubNode(t, first);
  const provider = new VexilProvider({ url: node.url, key: 'k', stage: 'production', metricsIntervalMs: 3_600_000 });
  t.teardown(() => provider.onClose());
  await provider.initialize();
  const want = new Map<string, number>();
  let total = resolveAll(provider, first, want);
  await provider.sendMetrics();
  t.equal(node.reports.length, 1, 'one report');
  for (const c of node.reports[0]) t.ok(c.count > 0, `no zero count is sent (${c.flag}/${c.variant})`);
  t.equal(new Set(node.reports[0].map((c) => `${c.flag}\u0000${c.variant}`)).size, node.reports[0].length, 'each (flag, variant) once per report');

  // Counts held across a data change: resolves on the old data, then the change, then resolves on the new.
  total += resolveAll(provider, first, want);
  const second = feed(2, true);
  node.streams[0].write(`event: snapshot\ndata: ${JSON.stringify(second)}\n\n`);
  const until = Date.now() + 5000;
  while (provider.version !== 2 && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
  t.equal(provider.version, 2, 'the new data is held');
  total += resolveAll(provider, second, want);
  await provider.sendMetrics();

  t.same(sorted(summed(node.reports)), sorted(want), 'the reports add up to the counts by served key');
  const keys = [...want.keys()].map((k) => k.replace('\u0000', '/')).sort();
  t.same(keys, ['colour/', 'colour/blue', 'colour/green', 'colour/red', 'empty/', 'split/off', 'split/on'], 'every kind of served variant came up');
  t.equal(provider.metricsSent, total, 'metricsSent: every resolve');
  t.equal(provider.metricsDropped, 0);
});

t.test('bounded: past metricsMaxEntries the counts are dropped and counted, sent + dropped = resolves', async (t) => {
  const first = feed(1, false);
  const node = await stubNode(t, first);
  const provider = new VexilProvider({ url: node.url, key: 'k', stage: 'production', metricsIntervalMs: 3_600_000, metricsMaxEntries: 3 });
  t.teardown(() => provider.onClose());
  await provider.initialize();
  const total = resolveAll(provider, first, new Map());
  await provider.sendMetrics();
  t.equal(node.reports[0].length, 3, 'three distinct (flag, variant) counts sent');
  t.ok(provider.metricsDropped > 0, 'the rest dropped');
  t.equal(provider.metricsSent + provider.metricsDropped, total, 'every resolve sent or dropped');
});

t.test('metricsIntervalMs 0: nothing counted', async (t) => {
  const first = feed(1, false);
  const node = await stubNode(t, first);
  const provider = new VexilProvider({ url: node.url, key: 'k', stage: 'production', metricsIntervalMs: 0 });
  await provider.initialize();
  resolveAll(provider, first, new Map());
  await provider.onClose();
  t.equal(node.reports.length, 0);
  t.equal(provider.metricsSent + provider.metricsDropped, 0);
});
