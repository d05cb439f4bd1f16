/**
 * The in-process provider answers as the node (docs/feed.md, "Evaluating from the feed";
 * docs/ofrep.md, "Answers"): for thousands of generated (flag, user, context, clientId) cases over
 * flags of every type with every operator, splits, rollout and enrollment, dependencies, a kill
 * switch, time windows, clientId configurations, segments, archived and disabled flags, the answer
 * of the real `@openfeature/server-sdk` client through the provider (value, variant, reason,
 * `flagMetadata.reasonCode`) equals the node's OFREP answer and `POST /flags/{name}?explain`, from
 * the same node. Missing flags, other applications' flags, type mismatches and bad contexts are
 * errors with the code default, never a throw.
 */
import t from 'tap';
import { OpenFeature, type Client, type EvaluationDetails, type FlagValue } from '@openfeature/server-sdk';
import type { TestNode } from '../../helpers/node.js';
import { createOrg, evalKey, must, postConfig, postFlag, putFlag, setKillSwitch, startNode, type TapTest } from '../../helpers/flags.js';
import { providerClient } from '../../helpers/provider.js';

/** A small deterministic generator (mulberry32), so that a failure can be replayed. */
function rng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = a;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)];
  const chance = (p: number) => next() < p;
  const some = <T>(xs: readonly T[], max = xs.length): T[] => xs.filter(() => chance(0.5)).sort(() => next() - 0.5).slice(0, Math.floor(next() * (max + 1)));
  return { next, pick, chance, some };
}

const TYPES = ['boolean', 'string', 'number', 'json'] as const;
const VARIANTS: Record<(typeof TYPES)[number], { key: string; value: unknown; valueType: string }[]> = {
  boolean: [
    { key: 'on', value: true, valueType: 'boolean' },
    { key: 'off', value: false, valueType: 'boolean' },
  ],
  string: ['a', 'b', 'c'].map((k) => ({ key: k, value: `v-${k}`, valueType: 'string' })),
  number: [
    { key: 'one', value: 1, valueType: 'number' },
    { key: 'pi', value: 3.14, valueType: 'number' },
    { key: 'big', value: 1e6, valueType: 'number' },
  ],
  json: [
    { key: 'x', value: { limits: { rpm: 10 }, tags: ['x'] }, valueType: 'json' },
    { key: 'y', value: { limits: { rpm: 99 } }, valueType: 'json' },
  ],
};
const SPLITS = [[100], [50, 50], [30, 30, 40], [0, 100], [25.5, 74.5], [10, 90]];
const CONDITIONS = [
  { field: 'plan', operator: '==', value: 'pro' },
  { field: 'plan', operator: '!=', value: 'free' },
  { field: 'country', operator: 'in', value: ['de', 'fr'] },
  { field: 'country', operator: 'not_in', value: ['us'] },
  { field: 'email', operator: 'contains', value: '@acme' },
  { field: 'tags', operator: 'contains', value: 'vip' },
  { field: 'email', operator: 'starts_with', value: 'a' },
  { field: 'email', operator: 'ends_with', value: '.de' },
  { field: 'age', operator: '<', value: 30 },
  { field: 'age', operator: '<=', value: 30 },
  { field: 'age', operator: '>', value: 50 },
  { field: 'age', operator: '>=', value: 50 },
  { field: 'userId', operator: 'in', value: ['u1', 'u2', 'u3'] },
  { field: 'device.os', operator: '==', value: 'ios' },
];
const SEGMENTS = ['beta', 'eu', 'adults'];
const HOUR = 3_600_000;

interface Made {
  name: string;
  type: (typeof TYPES)[number];
}

/** Generates and writes the organization's flags over the REST API; returns the flags to ask for. */
async function seed(t: TapTest, n: TestNode, admin: string, r: ReturnType<typeof rng>): Promise<Made[]> {
  must(t, await n.req('POST', '/api/segments', { key: admin, body: { name: 'beta', conditions: [{ field: 'plan', operator: '==', value: 'beta' }] } }), 201, 'segment beta');
  must(t, await n.req('POST', '/api/segments', { key: admin, body: { name: 'eu', application: 'web', conditions: [{ field: 'country', operator: 'in', value: ['de', 'fr'] }] } }), 201, 'segment eu');
  must(t, await n.req('POST', '/api/segments', { key: admin, body: { name: 'adults', conditions: [{ field: 'age', operator: '>=', value: 18 }] } }), 201, 'segment adults');
  const made: Made[] = [];
  const now = Date.now();
  const config = (type: Made['type'], extra: Record<string, unknown>, plain = false) => {
    const keys = VARIANTS[type].map((v) => v.key);
    const rules = Array.from({ length: Math.floor(r.next() * 4) }, (_, i) => {
      const split = r.pick(SPLITS.filter((s) => s.length <= keys.length));
      const shuffled = [...keys].sort(() => r.next() - 0.5);
      return {
        id: `r${i}`,
        priority: Math.floor(r.next() * 3),
        conditions: r.some(CONDITIONS, 2).map((c) => (c.field === 'plan' && r.chance(0.3) ? { ...c, value: 'beta' } : c)),
        segments: r.some(SEGMENTS, 1),
        allocations: split.map((p, j) => ({ variantKey: shuffled[j], percentage: p })),
      };
    });
    const window = r.pick([
      {},
      {},
      {},
      {},
      {},
      {},
      {},
      { activeFrom: new Date(now + HOUR).toISOString() },
      { activeUntil: new Date(now - HOUR).toISOString() },
      { activeFrom: new Date(now - HOUR).toISOString(), activeUntil: new Date(now + HOUR).toISOString() },
    ]);
    return {
      enabled: r.chance(0.9),
      defaultVariantKey: r.pick(keys),
      rolloutPercentage: r.pick([100, 100, 100, 50, 0, 12.5]),
      enrollmentCutoff: r.chance(0.15) ? r.pick([50, 80]) : null,
      rules,
      ...(plain ? { enabled: true, rolloutPercentage: 100, enrollmentCutoff: null } : window),
      ...extra,
    };
  };
  for (let i = 0; i < 24; i++) {
    const type = TYPES[i % TYPES.length];
    const name = `f${i}`;
    // The first flags reach their rules: enabled, no window, no parent.
    const plain = i < 10;
    const parents = plain ? [] : made.filter((m) => m.name !== 'f-dev' && r.chance(0.1)).slice(0, 2);
    const dependencies = parents.map((p) => ({ flag: p.name, variants: r.chance(0.7) ? null : [VARIANTS[p.type][0].key] }));
    must(t, await postFlag(n, admin, name, { type, variants: VARIANTS[type], dependencies }), 201, `flag ${name}`);
    if (plain || !r.chance(0.05)) must(t, await postConfig(n, admin, name, config(type, {}, plain)), 200, `${name} production`);
    if (r.chance(0.3)) must(t, await postConfig(n, admin, name, config(type, { clientId: 'ios' }, plain)), 200, `${name} ios`);
    if (r.chance(0.2)) must(t, await postConfig(n, admin, name, config(type, { clientId: 'web:android' }, plain)), 200, `${name} web:android`);
    if (r.chance(0.3)) must(t, await postConfig(n, admin, name, config(type, { stage: 'development' })), 200, `${name} development`);
    made.push({ name, type });
  }
  // A flag not enabled in production, an archived flag, a killed flag, another application's flag as a parent.
  must(t, await postFlag(n, admin, 'f-dev', { environments: ['development'] }), 201, 'f-dev');
  must(t, await postConfig(n, admin, 'f-dev', { stage: 'development' }), 200, 'f-dev config');
  made.push({ name: 'f-dev', type: 'boolean' });
  must(t, await putFlag(n, admin, 'f3', { isArchived: true }), 200, 'archive f3');
  must(t, await postFlag(n, admin, 'o-parent', { project: 'other' }), 201, 'o-parent');
  must(t, await postConfig(n, admin, 'o-parent', { defaultVariantKey: 'on', rules: [{ priority: 1, conditions: [{ field: 'plan', operator: '==', value: 'free' }], allocations: [{ variantKey: 'off', percentage: 100 }] }] }), 200, 'o-parent config');
  must(t, await postFlag(n, admin, 'f-child', { dependencies: [{ flag: 'o-parent', variants: ['on'] }] }), 201, 'f-child');
  must(t, await postConfig(n, admin, 'f-child', { defaultVariantKey: 'on' }), 200, 'f-child config');
  made.push({ name: 'f-child', type: 'boolean' });
  await setKillSwitch(n, admin, [{ flag: 'f5' }, { application: 'other', environment: 'development' }]);
  // Rules on reserved OpenFeature properties (targetingKey, clientId, stage) never match: they are
  // not evaluation context, directly, through a segment or through a parent. The provider strips
  // them for such flags and hands every other flag the context as it is.
  must(t, await n.req('POST', '/api/segments', { key: admin, body: { name: 'staged', conditions: [{ field: 'stage', operator: '!=', value: 'nowhere' }] } }), 201, 'segment staged');
  const on = [{ variantKey: 'on', percentage: 100 }];
  must(t, await postFlag(n, admin, 'f-reserved'), 201, 'f-reserved');
  must(t, await postConfig(n, admin, 'f-reserved', {
    rules: [
      { priority: 1, conditions: [{ field: 'clientId', operator: '==', value: 'ios' }], allocations: on },
      { priority: 2, conditions: [{ field: 'targetingKey', operator: 'starts_with', value: 'u1' }], allocations: on },
      { priority: 3, conditions: [], segments: ['staged'], allocations: on },
    ],
  }), 200, 'f-reserved config');
  must(t, await postFlag(n, admin, 'f-reserved-child', { dependencies: [{ flag: 'f-reserved', variants: ['off'] }] }), 201, 'f-reserved-child');
  must(t, await postConfig(n, admin, 'f-reserved-child', { defaultVariantKey: 'on', rules: [{ priority: 1, conditions: [{ field: 'plan', operator: '==', value: 'pro' }], allocations: [{ variantKey: 'off', percentage: 100 }] }] }), 200, 'f-reserved-child config');
  made.push({ name: 'f-reserved', type: 'boolean' }, { name: 'f-reserved-child', type: 'boolean' });
  return made;
}

function contextOf(r: ReturnType<typeof rng>, i: number): Record<string, unknown> {
  const c: Record<string, unknown> = { targetingKey: `u${i % 40}` };
  if (r.chance(0.7)) c.plan = r.pick(['free', 'pro', 'beta']);
  if (r.chance(0.7)) c.country = r.pick(['de', 'fr', 'us']);
  if (r.chance(0.6)) c.age = Math.floor(r.next() * 80);
  if (r.chance(0.5)) c.email = r.pick(['ann@acme.de', 'bob@example.com', 'al@acme.com']);
  if (r.chance(0.3)) c.tags = r.some(['vip', 'new', 'old']);
  if (r.chance(0.3)) c.device = { os: r.pick(['ios', 'android']) };
  const clientId = r.pick([undefined, undefined, 'ios', 'web:ios', 'web:android', 'other:ios', 'android']);
  if (clientId !== undefined) c.clientId = clientId;
  return c;
}

function details(client: Client, m: Made, ctx: Record<string, unknown>): Promise<EvaluationDetails<FlagValue>> {
  switch (m.type) {
    case 'boolean':
      return client.getBooleanDetails(m.name, false, ctx);
    case 'string':
      return client.getStringDetails(m.name, 'code-default', ctx);
    case 'number':
      return client.getNumberDetails(m.name, -1, ctx);
    default:
      return client.getObjectDetails(m.name, { code: 'default' }, ctx);
  }
}
const codeDefault = { boolean: false, string: 'code-default', number: -1, json: { code: 'default' } };

t.teardown(() => OpenFeature.close());

t.test('provider answers equal the node answers', async (t) => {
  const n = await startNode(t);
  const org = await createOrg(n, ['development', 'production'], ['web', 'other']);
  const admin = org.adminKey;
  const r = rng(19);
  const made = await seed(t, n, admin, r);
  const key = await evalKey(n, admin, 'web', 'production');
  const { provider, client } = await providerClient(t, { url: n.url, key, stage: 'production' });
  t.equal(client.providerStatus, 'READY', 'READY after initialize');

  const cases: { m: Made; ctx: Record<string, unknown> }[] = [];
  for (let i = 0; i < 125; i++) {
    const ctx = contextOf(r, i);
    for (const m of made) cases.push({ m, ctx });
  }
  const codes = new Map<string, number>();
  const reasons = new Map<string, number>();
  let mismatches = 0;
  let compared = 0;
  let restCompared = 0;
  const check = async (i: number) => {
    const { m, ctx } = cases[i];
    const d = await details(client, m, ctx);
    const o = await n.req('POST', `/ofrep/v1/evaluate/flags/${m.name}`, { key, body: { context: ctx } });
    const want = o.body;
    const got: Record<string, unknown> = { key: m.name, reason: d.reason, metadata: { reasonCode: d.flagMetadata.reasonCode } };
    if (want.value !== undefined) {
      got.value = d.value;
      got.variant = d.variant;
    } else if (JSON.stringify(d.value) !== JSON.stringify(codeDefault[m.type]) || d.variant !== undefined) {
      got.value = d.value;
    }
    compared++;
    codes.set(want.metadata?.reasonCode, (codes.get(want.metadata?.reasonCode) ?? 0) + 1);
    reasons.set(want.reason, (reasons.get(want.reason) ?? 0) + 1);
    if (o.status !== 200 || d.errorCode !== undefined || JSON.stringify(sorted(got)) !== JSON.stringify(sorted(want))) {
      if (mismatches++ < 5) t.fail(`${m.name} ${JSON.stringify(ctx)}: provider ${JSON.stringify(got)} (error ${d.errorCode}), node ${o.status} ${o.text}`);
    }
    if (i % 5 === 0) {
      const { targetingKey, clientId, ...context } = ctx;
      const rest = await n.req('POST', `/flags/${m.name}?explain=true`, { key, body: { userId: targetingKey, stage: 'production', clientId: clientId ?? null, context } });
      restCompared++;
      if (rest.status !== 200 || rest.body.key !== (d.variant ?? null) || rest.body.reason?.code !== d.flagMetadata.reasonCode) {
        if (mismatches++ < 5) t.fail(`${m.name} ${JSON.stringify(ctx)}: REST ${rest.status} ${rest.text}, provider ${JSON.stringify(d)}`);
      }
    }
  };
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < cases.length) await check(next++);
    }),
  );
  t.equal(mismatches, 0, `${compared} cases compared with OFREP, ${restCompared} with POST /flags/{name}?explain`);
  t.ok(compared >= 3000, 'thousands of cases');
  const want = ['rule_matched', 'default', 'rollout_excluded', 'config_disabled', 'killswitch', 'archived', 'not_yet_active', 'expired', 'disabled_dependency', 'project_or_env_mismatch'];
  t.same(want.filter((c) => !codes.has(c)), [], `reason codes met: ${JSON.stringify(Object.fromEntries(codes))}`);
  t.same(['TARGETING_MATCH', 'SPLIT', 'STATIC', 'DISABLED', 'UNKNOWN'].filter((x) => !reasons.has(x)), [], `every OFREP reason met: ${JSON.stringify(Object.fromEntries(reasons))}`);

  t.test('errors are answers with the code default, never throws', async (t) => {
    const ctx = { targetingKey: 'u1' };
    const missing = await client.getBooleanDetails('no-such-flag', true, ctx);
    t.match(missing, { value: true, errorCode: 'FLAG_NOT_FOUND', reason: 'ERROR' }, 'a missing flag: FLAG_NOT_FOUND, the default');
    const parent = await client.getBooleanDetails('o-parent', true, ctx);
    t.match(parent, { value: true, errorCode: 'FLAG_NOT_FOUND' }, "another application's flag (held as a parent): FLAG_NOT_FOUND");
    const numberFlag = made.find((m) => m.type === 'number' && m.name !== 'f3')!;
    const wrong = await client.getBooleanDetails(numberFlag.name, true, { targetingKey: 'u1' });
    t.equal(wrong.value, true, 'type mismatch: the default');
    if (wrong.variant === undefined && wrong.errorCode === undefined) t.pass('no variant for this one: no mismatch to see');
    else t.equal(wrong.errorCode, 'TYPE_MISMATCH', 'type mismatch: TYPE_MISMATCH');
    const noKey = await client.getBooleanDetails('f0', true, {});
    t.match(noKey, { value: true, errorCode: 'TARGETING_KEY_MISSING' }, 'no targetingKey');
    const badClient = await client.getBooleanDetails('f0', true, { targetingKey: 'u1', clientId: 7 as unknown as string });
    t.match(badClient, { value: true, errorCode: 'INVALID_CONTEXT' }, 'a clientId that is no string');
    for (const [type, call] of [
      ['boolean', () => provider.resolveBooleanEvaluation('f1', false, { targetingKey: 'u' })],
      ['string', () => provider.resolveStringEvaluation('f1', 'd', { targetingKey: 'u' })],
      ['number', () => provider.resolveNumberEvaluation('f1', 0, { targetingKey: 'u' })],
      ['object', () => provider.resolveObjectEvaluation('f1', {}, { targetingKey: 'u' })],
    ] as const) {
      let threw = false;
      try {
        await call();
        provider.resolve('f1', null, null as unknown as Record<string, never>, type);
        provider.resolve(undefined as unknown as string, null, { targetingKey: 'u' }, type);
      } catch {
        threw = true;
      }
      t.notOk(threw, `${type}: odd arguments do not throw`);
    }
    t.equal(provider.resolve('f1', 'd', null as unknown as Record<string, never>, 'string').errorCode, 'GENERAL', 'a null context: GENERAL error');
  });
});

function sorted(o: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).sort(([a], [b]) => (a < b ? -1 : 1)));
}
