/**
 * The feed's parity with the server (docs/feed.md, "Evaluating from the feed"): for random
 * organizations (operators, splits, rollout and enrollment, dependencies with cycles and missing
 * parents, kill-switch rules, time windows, clientId configurations and namespaced clientIds,
 * segments, archived flags, flags not enabled in the stage), the OrgSnapshot decoded from the feed
 * of one application and stage evaluates every flag of that application, for many users and
 * contexts, to the same value, variant key and reason (code and message) as the server's own
 * snapshot. Pure: the engine, feed.ts and decode.ts, no node.
 */
import fc from 'fast-check';
import t from 'tap';
import type { Flag, FlagConfig, KillSwitchRule, Organization, Segment } from '../../../src/domain/types.js';
import { buildSnapshot, evaluateFlag } from '../../../src/engine/index.js';
import { decodeFeed, readFeedSnapshot } from '../../../src/engine/feed-decode.js';
import { feedBody, feedParts } from '../../../src/feed/feed.js';

const NOW = Date.parse('2026-06-01T12:00:00Z');
const FLAGS = ['f0', 'f1', 'f2', 'f3', 'f4', 'f5', 'f6', 'f7'];
const SEGMENTS = ['s0', 's1', 's2'];
const STAGES = ['production', 'development'];
const APPS = ['web', 'other'];
const KEYS = ['a', 'b', 'c'];

const condition = fc.oneof(
  fc.record({ field: fc.constantFrom('plan', 'country'), operator: fc.constantFrom('==', '!=', 'contains', 'starts_with', 'ends_with'), value: fc.constantFrom('pro', 'free', 'de', 'fr', 'p') }),
  fc.record({ field: fc.constantFrom('plan', 'country', 'userId'), operator: fc.constantFrom('in', 'not_in'), value: fc.subarray(['pro', 'free', 'de', 'u1', 'u2', 'u3']) }),
  fc.record({ field: fc.constant('age'), operator: fc.constantFrom('<', '<=', '>', '>='), value: fc.integer({ min: 0, max: 80 }) }),
);
const time = fc.option(fc.integer({ min: -3, max: 3 }).map((h) => new Date(NOW + h * 3_600_000 + 1).toISOString()), { nil: null });
const percentage = fc.oneof(fc.constantFrom(0, 100), fc.integer({ min: 0, max: 10000 }).map((n) => n / 100));

const rule = (i: number) =>
  fc.record({
    id: fc.constant(`r${i}`),
    priority: fc.integer({ min: 0, max: 3 }),
    conditions: fc.array(condition, { maxLength: 2 }),
    segments: fc.subarray([...SEGMENTS, 'missing'], { maxLength: 2 }),
    allocations: fc.array(fc.record({ variantKey: fc.constantFrom(...KEYS, 'zz'), percentage }), { maxLength: 3 }),
  });

const config = (stage: string, clientId: string | null): fc.Arbitrary<FlagConfig> =>
  fc.record({
    stage: fc.constant(stage),
    clientId: fc.constant(clientId),
    enabled: fc.boolean(),
    defaultVariantKey: fc.constantFrom(...KEYS, 'zz'),
    rolloutPercentage: percentage,
    rules: fc.tuple(rule(1), rule(2), rule(3)).chain((rs) => fc.subarray(rs)),
    activeFrom: time,
    activeUntil: time,
    enrollmentCutoff: fc.option(percentage, { nil: null }),
  });

const flag = (name: string): fc.Arbitrary<{ flag: Flag; configs: FlagConfig[] }> =>
  fc
    .record({
      project: fc.constantFrom(...APPS),
      variantCount: fc.integer({ min: 0, max: 3 }),
      isArchived: fc.boolean().map((b) => b && Math.random() < 0.3),
      environments: fc.subarray(STAGES),
      dependencies: fc.array(fc.record({ flag: fc.constantFrom(...FLAGS, 'fx'), variants: fc.option(fc.subarray(KEYS), { nil: null }) }), { maxLength: 2 }),
      slots: fc.subarray(
        STAGES.flatMap((s) => [
          [s, null],
          [s, 'web:ios'],
          [s, 'ios'],
        ] as [string, string | null][]),
      ),
    })
    .chain((f) =>
      fc.tuple(...f.slots.map(([s, c]) => config(s, c))).map((configs) => ({
        flag: {
          name,
          project: f.project,
          type: 'string' as const,
          description: null,
          tags: [],
          isArchived: f.isArchived,
          variants: KEYS.slice(0, f.variantCount).map((k) => ({ key: k, value: `v-${k}`, valueType: 'string' as const })),
          environments: f.environments,
          dependencies: f.dependencies,
          createdAt: '2026-01-01T00:00:00.000Z',
          updatedAt: '2026-01-01T00:00:00.000Z',
        },
        configs,
      })),
    );

const segment = (name: string): fc.Arbitrary<Segment> =>
  fc.record({
    name: fc.constant(name),
    description: fc.constant(null),
    application: fc.constantFrom(null, 'web'),
    conditions: fc.array(condition, { maxLength: 2 }),
    createdAt: fc.constant('2026-01-01T00:00:00.000Z'),
    updatedAt: fc.constant('2026-01-01T00:00:00.000Z'),
  });

const killSwitch: fc.Arbitrary<KillSwitchRule[]> = fc.array(
  fc.record({ flag: fc.constantFrom(null, ...FLAGS), application: fc.constantFrom(null, ...APPS), environment: fc.constantFrom(null, ...STAGES) }),
  { maxLength: 3 },
);

const request = fc.record({
  userId: fc.constantFrom('u1', 'u2', 'u3', 'u4', 'u5', 'u6', 'u7', 'u8', 'u9'),
  clientId: fc.constantFrom(null, 'web:ios', 'other:ios', 'ios'),
  context: fc.option(fc.record({ plan: fc.constantFrom('pro', 'free'), country: fc.constantFrom('de', 'fr'), age: fc.integer({ min: 0, max: 80 }) }, { requiredKeys: [] }), { nil: null }),
});

const world = fc.record({
  flags: fc.tuple(...FLAGS.map(flag)),
  segments: fc.tuple(...SEGMENTS.map(segment)).chain((s) => fc.subarray(s)),
  killSwitch,
  requests: fc.array(request, { minLength: 20, maxLength: 20 }),
  stage: fc.constantFrom(...STAGES),
});

t.test('the decoded feed evaluates every flag of the application as the server snapshot', async (t) => {
  let evaluations = 0;
  const codes = new Set<string>();
  fc.assert(
    fc.property(world, (w) => {
      const org: Organization = { id: 'o1', name: 'acme', subscriptionActive: true, environments: STAGES, applications: APPS, killSwitch: w.killSwitch, version: 7 };
      const configs = new Map(w.flags.map((f) => [f.flag.name, f.configs]));
      const server = buildSnapshot(org, w.flags.map((f) => f.flag), configs, w.segments);
      const body = JSON.parse(feedBody(feedParts(server, 'web', w.stage)));
      const local = decodeFeed(body);
      for (const f of w.flags) {
        if (f.flag.project !== 'web') continue;
        for (const r of w.requests) {
          const req = { ...r, stage: w.stage };
          const a = evaluateFlag(server, server.flags.get(f.flag.name)!, req, NOW);
          const b = evaluateFlag(local, local.flags.get(f.flag.name)!, req, NOW);
          evaluations++;
          codes.add(a.reason.code);
          if (a.key !== b.key || JSON.stringify(a.variant) !== JSON.stringify(b.variant) || a.reason.code !== b.reason.code || a.reason.message !== b.reason.message) {
            throw new Error(`${f.flag.name} ${JSON.stringify(req)}: server ${JSON.stringify(a)}, feed ${JSON.stringify(b)}`);
          }
        }
      }
      // Nothing else: no other application's flag unless it is a parent, no other stage.
      for (const f of body.flags) {
        if (f.flag.project !== 'web' && !w.flags.some((x) => x.flag.dependencies.some((d) => d.flag === f.flag.name))) throw new Error(`${f.flag.name}: another application's flag that is no parent`);
        for (const c of f.configs) if (c.stage !== w.stage) throw new Error(`a configuration of another stage: ${c.stage}`);
      }
    }),
    { numRuns: 300, seed: 19 },
  );
  t.ok(evaluations > 10_000, `${evaluations} evaluations compared`);
  t.same(
    [...codes].sort(),
    ['archived', 'config_disabled', 'config_missing', 'default', 'disabled_dependency', 'enrollment_closed', 'expired', 'killswitch', 'no_variants', 'not_yet_active', 'project_or_env_mismatch', 'rollout_excluded', 'rule_matched'],
    'every reason code was reached',
  );
});

t.test('the decoder reads format 1 only', async (t) => {
  t.throws(() => decodeFeed({ format: 2 }), /format 1/);
  t.throws(() => readFeedSnapshot({ format: 1, version: 'x' }), /Malformed/);
});
