/**
 * Change-request preview (docs/change-requests.md, "Previewing"): the engine part of
 * `POST /api/change-requests/{id}/preview`, `compare` of src/features/change-requests/preview.ts,
 * on 10,000 contexts for a flag with rules over every operator family, a segment and a dependant,
 * in one environment, before and after a change of its rules: in this process, on one core. The
 * aim is under 500 ms; the database part of a preview (two reads of the organization) is not in it.
 */
import { performance } from 'node:perf_hooks';
import type { Flag, FlagConfig, Organization, Segment } from '../src/domain/types.js';
import { buildSnapshot } from '../src/engine/index.js';
import { affectedFlags, compare } from '../src/features/change-requests/preview.js';
import type { CustomScenario } from './custom-scenario.js';
import { log, startService, type Measurement } from './harness.js';

const CONTEXTS = 10_000;
const RUNS = 5;

const org: Organization = { id: 'o', name: 'bench', subscriptionActive: true, environments: ['production'], applications: ['web'], killSwitch: [], version: 1 };
const now = new Date().toISOString();
const flag = (name: string, deps: Flag['dependencies'] = []): Flag => ({
  name, project: 'web', type: 'string', description: null, tags: [], isArchived: false, environments: ['production'], dependencies: deps, createdAt: now, updatedAt: now,
  variants: ['a', 'b', 'c'].map((k) => ({ key: k, value: k, valueType: 'string' as const })),
});
const rule = (id: string, priority: number, conditions: [string, string, unknown][], variantKey: string, segments: string[] = []) => ({
  id, priority, segments, conditions: conditions.map(([field, operator, value]) => ({ field, operator, value })), allocations: [{ variantKey, percentage: 100 }],
}) as FlagConfig['rules'][number];
const config = (rules: FlagConfig['rules'], rollout: number): FlagConfig => ({
  stage: 'production', clientId: null, enabled: true, defaultVariantKey: 'a', rolloutPercentage: rollout, rules, activeFrom: null, activeUntil: null, enrollmentCutoff: null,
});
const segment: Segment = { name: 'adults', description: null, application: 'web', conditions: [{ field: 'age', operator: '>=', value: 18 }], createdAt: now, updatedAt: now } as Segment;

const countries = ['DE', 'FR', 'US', 'GB', 'JP'];
const plans = ['free', 'pro', 'team'];
/** The 10,000 contexts (about 0.9 MB of JSON: under the 1 MiB body cap, as the HTTP row sends them). */
const benchContexts = () =>
  Array.from({ length: CONTEXTS }, (_, i) => ({
    userId: `user-${i}`,
    context: { country: countries[i % 5], plan: plans[i % 3], age: i % 90, email: i % 2 === 0 ? `u${i}@corp.example` : `u${i}@mail.example` },
  }));

export function runPreviewBench(): { ms: number[]; median: number; changed: number } {
  const before = buildSnapshot(org, [flag('p'), flag('child', [{ flag: 'p', variants: ['b'] }])], new Map([
    ['p', [config([rule('r1', 1, [['country', '==', 'DE']], 'a'), rule('r2', 2, [['plan', 'in', ['pro', 'team']], ['age', '>=', 30]], 'b'), rule('r3', 3, [['email', 'ends_with', '@corp.example']], 'c'), rule('r4', 4, [], 'b', ['adults'])], 100)]],
    ['child', [{ ...config([], 100), defaultVariantKey: 'b' }]],
  ]), [segment]);
  const after = buildSnapshot(org, [flag('p'), flag('child', [{ flag: 'p', variants: ['b'] }])], new Map([
    ['p', [config([rule('r1', 1, [['country', '!=', 'DE'], ['age', '<', 20]], 'c'), rule('r2', 2, [['plan', 'not_in', ['free']]], 'a'), rule('r3', 3, [['email', 'contains', 'mail']], 'b'), rule('r4', 4, [], 'a', ['adults'])], 70)]],
    ['child', [{ ...config([], 100), defaultVariantKey: 'b' }]],
  ]), [segment]);
  const contexts = benchContexts();
  const flags = affectedFlags([{ type: 'config', flag: 'p', stage: 'production', clientId: null }], before, after);
  const ms: number[] = [];
  let changed = 0;
  for (let r = 0; r < RUNS; r++) {
    const t0 = performance.now();
    changed = compare(before, after, flags, ['production'], contexts, Date.now()).changed;
    ms.push(performance.now() - t0);
  }
  const sorted = [...ms].sort((x, y) => x - y);
  return { ms, median: sorted[Math.floor(sorted.length / 2)], changed };
}

/** A REST rule from the bench's condition triples. */
const restRule = (priority: number, conditions: [string, string, unknown][], variantKey: string, segments: string[] = []) => ({
  priority, segments, conditions: conditions.map(([field, operator, value]) => ({ field, operator, value })), allocations: [{ variantKey, percentage: 100 }],
});

/** The whole preview over HTTP on a fresh node: `RUNS` timed requests, each from its send to its whole answer. */
async function runHttpPreview(rc: Parameters<CustomScenario['run']>[0]): Promise<{ ms: number[]; median: number; changed: number; bodyBytes: number }> {
  const { opts, adminKey } = rc;
  const target = await startService(opts, adminKey, { label: 'preview-http', env: { VEXIL_LOG_LEVEL: 'warn' } });
  try {
    const call = async (method: string, path: string, body: unknown, expect: number): Promise<any> => {
      const r = await fetch(target.baseUrl + path, { method, headers: { 'x-management-key': adminKey, 'content-type': 'application/json' }, body: typeof body === 'string' ? body : JSON.stringify(body) });
      const text = await r.text();
      if (r.status !== expect) throw new Error(`${method} ${path}: ${r.status} ${text.slice(0, 300)}`);
      return JSON.parse(text);
    };
    const variants = ['a', 'b', 'c'].map((k) => ({ key: k, value: k, valueType: 'string' }));
    await call('POST', '/api/segments', { name: 'adults', application: 'default', conditions: [{ field: 'age', operator: '>=', value: 18 }] }, 201);
    await call('POST', '/api/flags', { name: 'p', project: 'default', type: 'string', variants }, 201);
    await call('POST', '/api/flags', { name: 'child', project: 'default', type: 'string', variants, dependencies: [{ flag: 'p', variants: ['b'] }] }, 201);
    const config = (rules: ReturnType<typeof restRule>[], rolloutPercentage: number) => ({ stage: 'production', enabled: true, defaultVariantKey: 'a', rolloutPercentage, rules });
    await call('POST', '/api/flags/p/configs', config([restRule(1, [['country', '==', 'DE']], 'a'), restRule(2, [['plan', 'in', ['pro', 'team']], ['age', '>=', 30]], 'b'), restRule(3, [['email', 'ends_with', '@corp.example']], 'c'), restRule(4, [], 'b', ['adults'])], 100), 200);
    await call('POST', '/api/flags/child/configs', { ...config([], 100), defaultVariantKey: 'b' }, 200);
    const after = config([restRule(1, [['country', '!=', 'DE'], ['age', '<', 20]], 'c'), restRule(2, [['plan', 'not_in', ['free']]], 'a'), restRule(3, [['email', 'contains', 'mail']], 'b'), restRule(4, [], 'a', ['adults'])], 70);
    const cr = await call('POST', '/api/change-requests', { title: 'bench preview', changes: [{ op: 'upsertConfig', flag: 'p', input: after }] }, 201);
    const body = JSON.stringify({ contexts: benchContexts() });
    const ms: number[] = [];
    let changed = 0;
    for (let r = 0; r < RUNS; r++) {
      const t0 = performance.now();
      const answer = await call('POST', `/api/change-requests/${cr.id}/preview`, body, 200);
      ms.push(performance.now() - t0);
      changed = answer.changed;
    }
    const sorted = [...ms].sort((x, y) => x - y);
    return { ms, median: sorted[Math.floor(sorted.length / 2)], changed, bodyBytes: Buffer.byteLength(body) };
  } finally {
    await target.stop();
  }
}

export const previewScenario: CustomScenario = {
  name: 'preview',
  description: `Change-request preview on ${CONTEXTS} contexts (a flag with rules of every operator family, a segment, a dependant): the engine before and after in process on one core, then the whole request over HTTP; aim < 500 ms`,
  async run(rc) {
    const r = runPreviewBench();
    const rows: Measurement[] = [
      {
        name: 'preview-10000',
        description: `the engine part in this process (one core): ${this.description}`,
        status: 'ok',
        notes: [`${RUNS} runs: ${r.ms.map((x) => x.toFixed(0)).join(', ')} ms (median ${r.median.toFixed(0)} ms; first one cold); ${r.changed} answers changed`],
        extra: { ms: r.ms, medianMs: r.median, contexts: CONTEXTS },
      },
    ];
    const row: Measurement = { name: 'preview-10000-http', description: `POST /api/change-requests/{id}/preview over HTTP, a fresh node on PGlite: ${this.description}`, status: 'ok' };
    try {
      const h = await runHttpPreview(rc);
      row.notes = [`${RUNS} requests (${(h.bodyBytes / 1e6).toFixed(2)} MB each): ${h.ms.map((x) => x.toFixed(0)).join(', ')} ms (median ${h.median.toFixed(0)} ms; first one cold); ${h.changed} answers changed; aim < 500 ms`];
      row.extra = { ms: h.ms, medianMs: h.median, contexts: CONTEXTS, bodyBytes: h.bodyBytes };
      log(`preview-10000-http: ${row.notes[0]}`);
    } catch (err) {
      row.status = 'failed';
      row.error = err instanceof Error ? err.message : String(err);
    }
    rows.push(row);
    return rows;
  },
};
