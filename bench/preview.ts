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
import type { Measurement } from './harness.js';

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

export function runPreviewBench(): { ms: number[]; median: number; changed: number } {
  const before = buildSnapshot(org, [flag('p'), flag('child', [{ flag: 'p', variants: ['b'] }])], new Map([
    ['p', [config([rule('r1', 1, [['country', '==', 'DE']], 'a'), rule('r2', 2, [['plan', 'in', ['pro', 'team']], ['age', '>=', 30]], 'b'), rule('r3', 3, [['email', 'ends_with', '@corp.example']], 'c'), rule('r4', 4, [], 'b', ['adults'])], 100)]],
    ['child', [{ ...config([], 100), defaultVariantKey: 'b' }]],
  ]), [segment]);
  const after = buildSnapshot(org, [flag('p'), flag('child', [{ flag: 'p', variants: ['b'] }])], new Map([
    ['p', [config([rule('r1', 1, [['country', '!=', 'DE'], ['age', '<', 20]], 'c'), rule('r2', 2, [['plan', 'not_in', ['free']]], 'a'), rule('r3', 3, [['email', 'contains', 'mail']], 'b'), rule('r4', 4, [], 'a', ['adults'])], 70)]],
    ['child', [{ ...config([], 100), defaultVariantKey: 'b' }]],
  ]), [segment]);
  const countries = ['DE', 'FR', 'US', 'GB', 'JP'];
  const plans = ['free', 'pro', 'team'];
  const contexts = Array.from({ length: CONTEXTS }, (_, i) => ({
    userId: `user-${i}`,
    context: { country: countries[i % 5], plan: plans[i % 3], age: i % 90, email: i % 2 === 0 ? `u${i}@corp.example` : `u${i}@mail.example` },
  }));
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

export const previewScenario: CustomScenario = {
  name: 'preview',
  description: `Change-request preview: the engine before and after on ${CONTEXTS} contexts (a flag with rules of every operator family, a segment, a dependant), in process on one core; aim < 500 ms`,
  async run() {
    const r = runPreviewBench();
    const row: Measurement = {
      name: 'preview-10000',
      description: this.description,
      status: 'ok',
      notes: [`${RUNS} runs: ${r.ms.map((x) => x.toFixed(0)).join(', ')} ms (median ${r.median.toFixed(0)} ms; first one cold); ${r.changed} answers changed`],
      extra: { ms: r.ms, medianMs: r.median, contexts: CONTEXTS },
    };
    return [row];
  },
};
