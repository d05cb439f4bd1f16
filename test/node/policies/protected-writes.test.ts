/**
 * The walk (issue 29, item 2; docs/change-requests.md, "What protection covers"): EVERY write route
 * of the REST API (read from the node's OpenAPI document) and EVERY GraphQL mutation (read from the
 * schema's Mutation type) against a protected environment. Each is either refused with 409
 * `reason: "review_required"` naming the environment (and changes nothing), or listed as allowed
 * with a reason that docs/change-requests.md states word for word. A route or mutation added later
 * fails here until it is classified.
 */
import t from 'tap';
import { readFileSync } from 'node:fs';
import { buildSchema } from 'graphql';
import { typeDefs } from '../../../src/graphql/schema.js';
import { projectPath } from '../../../src/util/paths.js';
import { boolVariants, createFlag, createOrganization, OPERATOR_TOKEN, startTestNode, upsertConfig, type Res, type TestNode } from '../../helpers/node.js';
import { gql } from '../../helpers/graphql.js';

t.setTimeout(180_000);

const env = { VEXIL_OPERATOR_TOKEN: OPERATOR_TOKEN, VEXIL_RATE_LIMIT_MGMT: '100000', VEXIL_RATE_LIMIT_EVAL: '100000' };

// ---- the allow-list: each reason is also written in docs/change-requests.md --------------------------

const R = {
  evaluation: 'Evaluation reads flags; it writes nothing.',
  newFlag: 'A new flag has no configuration and no flag depends on it: no answer evaluation gave before changes.',
  newSegment: 'A new segment is used by no rule: no answer changes.',
  keys: 'Keys decide who may ask, not what evaluation answers; key management needs Admin and is audited.',
  cancelSchedule: 'Cancelling a pending schedule stops a change that has not happened: evaluation answers as before.',
  operator: "The operator API belongs to whoever runs the service, outside every organization's keys and review; it is audited in the organization it changes.",
  policy: 'Setting a policy changes which writes need review, not what evaluation answers; it needs Admin and is audited as org.policy.',
  graphql: 'Each GraphQL mutation is classified on its own.',
  changeRequest: 'A change request changes nothing until it is applied.',
  apply: 'An apply or a scheduled apply happens only with the approvals the policy requires on the exact revision reviewed.',
  insights: 'Insights settings decide which flags are reported stale or unused, not what evaluation answers; they need Admin and are audited as org.insights.',
  metrics: 'Evaluation counts reported by an SDK are statistics about answers already given; they change no flag.',
  webhooks: 'Webhooks tell other systems about changes; they change no flag, configuration or segment. They need Admin and are audited.',
} as const;

interface W {
  n: TestNode;
  /** An extra key, for the key routes. */
  keyId: string;
  /** A pending schedule on a development configuration. */
  scheduleId: string;
}

type Case = [what: string, run: (w: W) => Promise<Res>];
type Rule = { allowed: string; exercise?: (w: W) => Promise<Res> } | { refused: Case[] };

const json = (w: W, method: string, path: string, body?: unknown) => w.n.req(method, path, { key: w.n.adminKey, body });
const q = (query: string) => (w: W) => gql(w.n, w.n.adminKey, query);

/** Routes added by the change-request feature (CONTRACT 17): classified ahead, checked when served. */
const CHANGE_REQUEST_ROUTES: Record<string, Rule> = {
  'POST /api/change-requests': { allowed: R.changeRequest },
  'PUT /api/change-requests/{id}': { allowed: R.changeRequest },
  'POST /api/change-requests/{id}/reviews': { allowed: R.changeRequest },
  'POST /api/change-requests/{id}/rebase': { allowed: R.changeRequest },
  'POST /api/change-requests/{id}/close': { allowed: R.changeRequest },
  'POST /api/change-requests/{id}/revert': { allowed: R.changeRequest },
  'POST /api/change-requests/{id}/preview': { allowed: R.changeRequest },
  'POST /api/change-requests/{id}/apply': { allowed: R.apply },
  'POST /api/change-requests/{id}/schedule': { allowed: R.apply },
};
const CHANGE_REQUEST_MUTATIONS: Record<string, Rule> = {
  createChangeRequest: { allowed: R.changeRequest },
  updateChangeRequest: { allowed: R.changeRequest },
  reviewChangeRequest: { allowed: R.changeRequest },
  rebaseChangeRequest: { allowed: R.changeRequest },
  closeChangeRequest: { allowed: R.changeRequest },
  revertChangeRequest: { allowed: R.changeRequest },
  previewChangeRequest: { allowed: R.changeRequest },
  applyChangeRequest: { allowed: R.apply },
  scheduleChangeRequest: { allowed: R.apply },
};

const prodConfig = { stage: 'production', enabled: true, defaultVariantKey: 'on', rolloutPercentage: 100 };
const soon = () => new Date(Date.now() + 3_600_000).toISOString();

const REST: Record<string, Rule> = {
  'POST /flags/{name}': { allowed: R.evaluation },
  'POST /ofrep/v1/evaluate/flags/{key}': { allowed: R.evaluation },
  'POST /ofrep/v1/evaluate/flags': { allowed: R.evaluation },
  'POST /api/flags': { allowed: R.newFlag, exercise: (w) => json(w, 'POST', '/api/flags', { name: 'brand-new', project: 'default', type: 'boolean', variants: boolVariants }) },
  'PUT /api/flags/{name}': {
    refused: [
      ['variants of a flag configured in production', (w) => json(w, 'PUT', '/api/flags/c', { variants: [...boolVariants, { key: 'maybe', value: true, valueType: 'boolean' }] })],
      ['variants of a parent configured only in development, whose dependant is configured in production', (w) => json(w, 'PUT', '/api/flags/p', { variants: [...boolVariants, { key: 'maybe', value: true, valueType: 'boolean' }] })],
      ['archive', (w) => json(w, 'PUT', '/api/flags/c', { isArchived: true })],
      ['restore', (w) => json(w, 'PUT', '/api/flags/x', { isArchived: false })],
      ['dependencies', (w) => json(w, 'PUT', '/api/flags/c', { dependencies: [] })],
      ['description with a change of answers', (w) => json(w, 'PUT', '/api/flags/c', { description: 'x', isArchived: true })],
    ],
  },
  'DELETE /api/flags/{name}': { refused: [['a flag configured in production', (w) => json(w, 'DELETE', '/api/flags/c')]] },
  'POST /api/flags/{name}/configs': { refused: [['a production configuration', (w) => json(w, 'POST', '/api/flags/c/configs', prodConfig)]] },
  'POST /api/flags/{name}/schedules': { refused: [['a schedule for production', (w) => json(w, 'POST', '/api/flags/c/schedules', { at: soon(), stage: 'production', enabled: false })]] },
  'DELETE /api/flags/{name}/schedules/{id}': { allowed: R.cancelSchedule, exercise: (w) => json(w, 'DELETE', `/api/flags/dev/schedules/${w.scheduleId}`) },
  'POST /api/keys': { allowed: R.keys, exercise: (w) => json(w, 'POST', '/api/keys', { name: 'k2', permissions: ['CanRead'] }) },
  'POST /api/keys/{id}/rotate': { allowed: R.keys, exercise: (w) => json(w, 'POST', `/api/keys/${w.keyId}/rotate`) },
  'POST /api/keys/{id}/disable': { allowed: R.keys, exercise: (w) => json(w, 'POST', `/api/keys/${w.keyId}/disable`) },
  'DELETE /api/keys/{id}': { allowed: R.keys, exercise: (w) => json(w, 'DELETE', `/api/keys/${w.keyId}`) },
  'POST /api/operator/organizations': { allowed: R.operator },
  'PATCH /api/operator/organizations/{name}': { allowed: R.operator },
  'POST /api/operator/organizations/{name}/admin-keys': { allowed: R.operator },
  'POST /api/segments': { allowed: R.newSegment, exercise: (w) => json(w, 'POST', '/api/segments', { name: 'fresh', conditions: [] }) },
  'PUT /api/segments/{name}': { refused: [['conditions of a segment a production rule uses', (w) => json(w, 'PUT', '/api/segments/s', { conditions: [{ field: 'plan', operator: '==', value: 'gold' }] })]] },
  'DELETE /api/segments/{name}': { refused: [['a segment a production rule uses', (w) => json(w, 'DELETE', '/api/segments/s')]] },
  'PUT /api/environments/{stage}/policy': { allowed: R.policy },
  'PUT /api/insights/settings': { allowed: R.insights, exercise: (w) => json(w, 'PUT', '/api/insights/settings', { unusedAfter: 'P3D' }) },
  'POST /sdk/v1/metrics': { allowed: R.metrics },
  'POST /api/webhooks': { allowed: R.webhooks },
  'PUT /api/webhooks/{id}': { allowed: R.webhooks },
  'DELETE /api/webhooks/{id}': { allowed: R.webhooks },
  'POST /api/webhooks/{id}/rotate-secret': { allowed: R.webhooks },
  'POST /api/webhooks/{id}/test': { allowed: R.webhooks },
  'POST /api/webhooks/{id}/messages/{messageId}/replay': { allowed: R.webhooks },
  'POST /api/graphql': { allowed: R.graphql },
  ...CHANGE_REQUEST_ROUTES,
};

const GRAPHQL: Record<string, Rule> = {
  createFlag: { allowed: R.newFlag, exercise: q('mutation { createFlag(input: {name: "gql-new", project: "default", type: "boolean", variants: [{key: "on", value: true, valueType: "boolean"}]}) { name } }') },
  updateFlag: {
    refused: [
      ['variants', q('mutation { updateFlag(name: "c", input: {variants: [{key: "on", value: true, valueType: "boolean"}, {key: "off", value: false, valueType: "boolean"}, {key: "z", value: true, valueType: "boolean"}]}) { name } }')],
      ['dependencies', q('mutation { updateFlag(name: "c", input: {dependencies: []}) { name } }')],
    ],
  },
  archiveFlag: { refused: [['archive', q('mutation { archiveFlag(name: "c") { name } }')]] },
  restoreFlag: { refused: [['restore', q('mutation { restoreFlag(name: "x") { name } }')]] },
  deleteFlag: { refused: [['delete', q('mutation { deleteFlag(name: "c") }')]] },
  upsertFlagConfig: { refused: [['upsert', q('mutation { upsertFlagConfig(name: "c", input: {stage: "production", enabled: true, defaultVariantKey: "on", rolloutPercentage: 100}) { stage } }')]] },
  setFlagConfigEnabled: { refused: [['disable', q('mutation { setFlagConfigEnabled(name: "c", stage: "production", enabled: false) { enabled } }')]] },
  deleteFlagConfig: { refused: [['delete', q('mutation { deleteFlagConfig(name: "c", stage: "production") }')]] },
  updateFlagEnvironments: { refused: [['production added', q('mutation { updateFlagEnvironments(name: "lonely", environments: ["development", "production"]) { name } }')]] },
  replaceEnvironments: {
    refused: [
      ['production removed', q('mutation { replaceEnvironments(environments: ["development"]) }')],
      ['production respelled (a rename)', q('mutation { replaceEnvironments(environments: ["development", "Production"]) }')],
    ],
  },
  renameEnvironment: { refused: [['production renamed', q('mutation { renameEnvironment(from: "production", to: "prod") }')]] },
  replaceApplications: { refused: [['an application added (clientIds name applications)', q('mutation { replaceApplications(applications: ["default", "web"]) }')]] },
  renameApplication: { refused: [['an application renamed', q('mutation { renameApplication(from: "default", to: "core") }')]] },
  replaceKillSwitch: {
    refused: [
      ['a rule for every environment', q('mutation { replaceKillSwitch(rules: [{flag: "dev"}]) { flag } }')],
      ['a rule for production', q('mutation { replaceKillSwitch(rules: [{environment: "production"}]) { flag } }')],
    ],
  },
  createManagementKey: { allowed: R.keys, exercise: q('mutation { createManagementKey(input: {name: "k3", permissions: [CanApprove]}) { id } }') },
  rotateManagementKey: { allowed: R.keys },
  disableManagementKey: { allowed: R.keys },
  deleteManagementKey: { allowed: R.keys },
  scheduleFlagChange: { refused: [['a schedule for production', (w) => gql(w.n, w.n.adminKey, 'mutation($at: DateTime!) { scheduleFlagChange(name: "c", input: {at: $at, stage: "production", enabled: false}) { id } }', { at: soon() })]] },
  cancelSchedule: { allowed: R.cancelSchedule },
  setInsightsSettings: { allowed: R.insights },
  createWebhook: { allowed: R.webhooks },
  updateWebhook: { allowed: R.webhooks },
  deleteWebhook: { allowed: R.webhooks },
  rotateWebhookSecret: { allowed: R.webhooks },
  sendWebhookTest: { allowed: R.webhooks },
  replayWebhookMessage: { allowed: R.webhooks },
  createSegment: { allowed: R.newSegment, exercise: q('mutation { createSegment(input: {name: "gql-fresh"}) { name } }') },
  updateSegment: { refused: [['conditions', q('mutation { updateSegment(name: "s", input: {conditions: [{field: "plan", operator: "==", value: "gold"}]}) { name } }')]] },
  deleteSegment: { refused: [['delete', q('mutation { deleteSegment(name: "s") }')]] },
  setEnvironmentPolicy: { allowed: R.policy },
  ...CHANGE_REQUEST_MUTATIONS,
};

const docs = readFileSync(projectPath('docs/change-requests.md'), 'utf8').replace(/\s+/g, ' ');

async function must(r: Promise<Res>, status: number, what: string): Promise<Res> {
  const res = await r;
  if (res.status !== status) throw new Error(`${what}: ${res.status} ${res.text}`);
  return res;
}

/** The state a refused write must leave as it was: the audit log's length and every flag, segment and setting. */
async function state(w: W): Promise<string> {
  const k = { key: w.n.adminKey };
  const [audit, flags, segments, g] = await Promise.all([
    w.n.req('GET', '/api/audit?limit=500', k),
    Promise.all(['p', 'c', 'x', 'dev', 'lonely'].map((f) => w.n.req('GET', `/api/flags/${f}`, k))),
    w.n.req('GET', '/api/segments', k),
    gql(w.n, w.n.adminKey, '{ environments applications killSwitch { flag application environment } }'),
  ]);
  return JSON.stringify([audit.body.length, flags.map((f) => f.body), segments.body, g.body.data]);
}

t.test('every write route and mutation against a protected environment', async (t) => {
  const node = await startTestNode(t, { env });
  const n = await createOrganization(node, 'walk');
  // The world, before production is protected.
  await must(createFlag(n, 'p'), 201, 'p');
  await must(upsertConfig(n, 'p', { stage: 'development' }), 200, 'p dev');
  await must(json({ n } as W, 'POST', '/api/segments', { name: 's', conditions: [{ field: 'plan', operator: '==', value: 'free' }] }), 201, 's');
  await must(createFlag(n, 'c', { dependencies: [{ flag: 'p', variants: null }] }), 201, 'c');
  await must(upsertConfig(n, 'c', { rules: [{ priority: 1, conditions: [], segments: ['s'], allocations: [{ variantKey: 'on', percentage: 100 }] }] }), 200, 'c prod');
  await must(createFlag(n, 'x'), 201, 'x');
  await must(upsertConfig(n, 'x', {}), 200, 'x prod');
  await must(n.req('PUT', '/api/flags/x', { key: n.adminKey, body: { isArchived: true } }), 200, 'x archived');
  await must(createFlag(n, 'dev'), 201, 'dev');
  await must(upsertConfig(n, 'dev', { stage: 'development' }), 200, 'dev dev');
  await must(createFlag(n, 'lonely', { environments: ['development'] }), 201, 'lonely');
  const schedule = await must(n.req('POST', '/api/flags/dev/schedules', { key: n.adminKey, body: { at: soon(), stage: 'development', enabled: false } }), 201, 'schedule');
  const key = await must(n.req('POST', '/api/keys', { key: n.adminKey, body: { name: 'extra', permissions: ['CanRead'] } }), 201, 'key');
  await must(n.req('PUT', '/api/environments/production/policy', { key: n.adminKey, body: { requiredApprovals: 1 } }), 200, 'protect production');
  const w: W = { n, keyId: key.body.id, scheduleId: schedule.body.id };

  // The REST write routes, as the node documents them.
  const doc = (await must(n.req('GET', '/api/openapi.json'), 200, 'openapi')).body;
  const routes: string[] = [];
  for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, unknown>>)) {
    for (const m of Object.keys(ops)) if (['post', 'put', 'patch', 'delete'].includes(m)) routes.push(`${m.toUpperCase()} ${path}`);
  }
  const mutations = Object.keys(buildSchema(typeDefs).getMutationType()!.getFields());
  t.ok(routes.length >= 20 && mutations.length >= 20, `${routes.length} write routes, ${mutations.length} mutations`);

  const walk = async (t: Tap.Test, what: string, rule: Rule | undefined, gqlAnswer: boolean) => {
    if (rule === undefined) {
      t.fail(`${what} is not classified: add it to the walk (refused with review_required, or allowed with a reason in docs/change-requests.md)`);
      return;
    }
    if ('allowed' in rule) {
      t.ok(docs.includes(rule.allowed), `${what}: allowed, and docs/change-requests.md says why: "${rule.allowed}"`);
      if (rule.exercise) {
        const r = await rule.exercise(w);
        t.ok(r.status < 300 && (r.body?.errors === undefined), `${what}: the allowed write succeeds (${r.status} ${r.text.slice(0, 200)})`);
      }
      return;
    }
    for (const [name, run] of rule.refused) {
      const before = await state(w);
      const r = await run(w);
      if (gqlAnswer) {
        const e = r.body?.errors?.[0]?.extensions;
        t.match(e, { code: 'CONFLICT', status: 409, reason: 'review_required', environment: 'production' }, `${what} (${name}): review_required (${r.text.slice(0, 300)})`);
      } else {
        t.equal(r.status, 409, `${what} (${name}): 409 (${r.text.slice(0, 300)})`);
        t.match(r.body, { code: 'CONFLICT', reason: 'review_required', environment: 'production' }, `${what} (${name}): review_required naming production`);
        t.ok(Array.isArray(r.body?.environments) && r.body.environments.includes('production'), `${what} (${name}): environments`);
      }
      t.equal(await state(w), before, `${what} (${name}): nothing changed`);
    }
  };

  t.test('REST write routes', async (t) => {
    for (const route of routes) await walk(t, route, REST[route], false);
    const served = new Set(routes);
    for (const route of Object.keys(REST)) {
      if (!served.has(route) && !(route in CHANGE_REQUEST_ROUTES)) t.fail(`${route} is classified but not served: remove it from the walk`);
    }
  });

  t.test('GraphQL mutations', async (t) => {
    for (const m of mutations) await walk(t, `mutation ${m}`, GRAPHQL[m], true);
    for (const m of Object.keys(GRAPHQL)) {
      if (!mutations.includes(m) && !(m in CHANGE_REQUEST_MUTATIONS)) t.fail(`mutation ${m} is classified but not in the schema: remove it from the walk`);
    }
  });
});
declare namespace Tap { type Test = import('tap').Test }
