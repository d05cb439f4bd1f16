/**
 * The management resolvers (run by the management actor): thin calls into the same service functions REST uses, so that permissions, scopes,
 * validation and conflicts cannot drift apart. A service throws a VexilError; graphql-jit turns it
 * into a field error (the field is null, its siblings still answer) and `execute.ts` maps it to
 * `extensions: {code, status}`.
 *
 * Each field resolves against a fresh `Authenticated`: the principal from the request's
 * authentication and the organization's current snapshot. An organization-level write replaces the
 * snapshot object (a flag-level write updates it in place), so a field after a mutation in the
 * same document sees the write either way.
 */
import type { Flag, FlagConfig } from '../domain/types.js';
import { explain } from '../evaluation/evaluate.js';
import { auditLog } from '../features/audit/service.js';
import type { AuditActor } from '../domain/types.js';
import * as flags from '../features/flags/service.js';
import * as keys from '../features/keys/service.js';
import * as orgs from '../features/organizations/service.js';
import * as segments from '../features/segments/service.js';
import * as schedules from '../features/schedules/service.js';
import { policyResolvers } from '../features/policies/graphql.js';
import { changeRequestResolvers } from '../features/change-requests/graphql.js';
import { webhookResolvers } from '../features/webhooks/graphql.js';
import type { ActorRuntime } from '../runtime.js';
import { VexilError } from '../domain/errors.js';
import type { ResolverMap } from './schema.js';
import { addInsightsResolvers } from '../features/insights/graphql-resolvers.js';
import { authFor, evaluate, evaluationInput, withVars, type Args, type EvaluateArgs, type GraphQLContext, type Resolver } from './evaluation-resolvers.js';

/** The node's services, for a management field (never in an evaluation worker). */
function services(ctx: GraphQLContext): ActorRuntime {
  if (ctx.rt === null || !('db' in ctx.rt)) throw new VexilError('INTERNAL', 'A management field ran outside the management actor');
  return ctx.rt as ActorRuntime;
}

const str = (v: unknown): string => v as string;
const optStr = (v: unknown): string | null => (v === undefined || v === null ? null : (v as string));

/**
 * `explainEvaluation` (README, "Web UI"): a management read (the request's token came from the
 * management bucket, and it is not one of the `evaluate` fields that limits.ts counts or the pool
 * runs). Not evaluation traffic: not counted in metrics.
 */
const explainEvaluation: Resolver<EvaluateArgs> = (_s, args, ctx, info) =>
  explain(authFor(ctx), args.key, evaluationInput(args, ctx, info), ctx.env.now());

const Query: Record<string, Resolver> = {
  flags: (_s, a, ctx) => flags.listFlagPage(authFor(ctx), a, 'graphql').flags,
  flag: (_s, a, ctx) => flags.getFlag(authFor(ctx), str(a.name)),
  flagConfigs: (_s, a, ctx) => flags.listConfigs(authFor(ctx), str(a.name), optStr(a.stage), optStr(a.clientId)),
  flagEnvironments: (_s, a, ctx) => flags.flagEnvironments(authFor(ctx), str(a.name)),
  environments: (_s, _a, ctx) => orgs.readList(authFor(ctx), 'environments'),
  applications: (_s, _a, ctx) => orgs.readList(authFor(ctx), 'applications'),
  killSwitch: (_s, _a, ctx) => orgs.killSwitch(authFor(ctx)),
  evaluate: evaluate as unknown as Resolver,
  managementKeys: (_s, _a, ctx) => keys.listKeys(services(ctx), authFor(ctx)),
  viewer: (_s, _a, ctx) => keys.selfKey(services(ctx), authFor(ctx)),
  explainEvaluation: explainEvaluation as unknown as Resolver,
};

const createdKey = (r: keys.IssuedKey) => ({ id: r.id, key: r.key, managementKey: r.record });

const Mutation: Record<string, Resolver> = {
  createFlag: (_s, a, ctx, info) => flags.createFlag(services(ctx), authFor(ctx), withVars(a.input, ctx, info)),
  updateFlag: (_s, a, ctx, info) => flags.updateFlag(services(ctx), authFor(ctx), str(a.name), withVars(a.input, ctx, info)),
  archiveFlag: (_s, a, ctx) => flags.setArchived(services(ctx), authFor(ctx), str(a.name), true),
  restoreFlag: (_s, a, ctx) => flags.setArchived(services(ctx), authFor(ctx), str(a.name), false),
  deleteFlag: async (_s, a, ctx) => {
    await flags.deleteFlag(services(ctx), authFor(ctx), str(a.name));
    return true;
  },
  upsertFlagConfig: (_s, a, ctx, info) => flags.upsertConfig(services(ctx), authFor(ctx), str(a.name), withVars(a.input, ctx, info)),
  setFlagConfigEnabled: (_s, a, ctx) =>
    flags.setConfigEnabled(services(ctx), authFor(ctx), str(a.name), str(a.stage), optStr(a.clientId), a.enabled as boolean),
  deleteFlagConfig: async (_s, a, ctx) => {
    await flags.deleteConfig(services(ctx), authFor(ctx), str(a.name), str(a.stage), optStr(a.clientId));
    return true;
  },
  updateFlagEnvironments: (_s, a, ctx) => flags.updateFlagEnvironments(services(ctx), authFor(ctx), str(a.name), a.environments),
  replaceEnvironments: (_s, a, ctx) => orgs.replaceList(services(ctx), authFor(ctx), 'environments', a.environments),
  renameEnvironment: (_s, a, ctx) => orgs.renameInList(services(ctx), authFor(ctx), 'environments', a.from, a.to),
  replaceApplications: (_s, a, ctx) => orgs.replaceList(services(ctx), authFor(ctx), 'applications', a.applications),
  renameApplication: (_s, a, ctx) => orgs.renameInList(services(ctx), authFor(ctx), 'applications', a.from, a.to),
  replaceKillSwitch: (_s, a, ctx) => orgs.replaceKillSwitch(services(ctx), authFor(ctx), a.rules),
  createManagementKey: async (_s, a, ctx) => createdKey(await keys.createKey(services(ctx), authFor(ctx), a.input)),
  rotateManagementKey: async (_s, a, ctx) => createdKey(await keys.rotateKey(services(ctx), authFor(ctx), str(a.id))),
  disableManagementKey: (_s, a, ctx) => keys.disableKey(services(ctx), authFor(ctx), str(a.id)),
  deleteManagementKey: async (_s, a, ctx) => {
    await keys.deleteKey(services(ctx), authFor(ctx), str(a.id));
    return true;
  },
};

const Flag: Record<string, Resolver<Args, Flag>> = {
  // Read from the snapshot like `flagConfigs`: the key could read the flag, so it can read these.
  configs: (flag, _a, ctx): FlagConfig[] => flags.listConfigs(authFor(ctx), flag.name),
  schedules: (flag, _a, ctx) => schedules.listSchedules(services(ctx), authFor(ctx), flag.name),
};

// ---- scheduled changes (docs/api.md#scheduled-changes) ----------------------------------------------

Mutation.scheduleFlagChange = (_s, a, ctx, info) => schedules.createSchedule(services(ctx), authFor(ctx), str(a.name), withVars(a.input, ctx, info));
Mutation.cancelSchedule = async (_s, a, ctx) => {
  await schedules.cancelSchedule(services(ctx), authFor(ctx), str(a.name), str(a.id));
  return true;
};

// ---- flag list paging (docs/graphql.md) --------------------------------------------------------------

Query.flagConnection = (_s, a, ctx) => {
  const page = flags.listFlagPage(authFor(ctx), a, 'graphql');
  const last = page.flags.length === 0 ? null : page.flags[page.flags.length - 1].name;
  return { nodes: page.flags, pageInfo: { endCursor: last, hasNextPage: page.hasMore }, totalCount: page.total };
};

// ---- audit log (docs/audit.md) ------------------------------------------------------------------------

Query.auditLog = (_s, a, ctx) => auditLog(services(ctx), authFor(ctx), { target: a.target, type: a.type, limit: a.first, before: a.before });

const AuditActor: Record<string, Resolver<Args, AuditActor>> = {
  operator: (actor) => 'operator' in actor,
};

// ---- segments (docs/api.md#segments) ----------------------------------------------------------------

Query.segments = (_s, _a, ctx) => segments.listSegments(authFor(ctx));
Query.segment = (_s, a, ctx) => segments.getSegment(authFor(ctx), str(a.name));
Mutation.createSegment = (_s, a, ctx, info) => segments.createSegment(services(ctx), authFor(ctx), withVars(a.input, ctx, info));
Mutation.updateSegment = (_s, a, ctx, info) => segments.updateSegment(services(ctx), authFor(ctx), str(a.name), withVars(a.input, ctx, info));
Mutation.deleteSegment = async (_s, a, ctx) => {
  await segments.deleteSegment(services(ctx), authFor(ctx), str(a.name));
  return true;
};

// ---- environment policies (docs/change-requests.md) -----------------------------------------------------

Object.assign(Query, policyResolvers.Query);
Object.assign(Mutation, policyResolvers.Mutation);
Object.assign(Query, changeRequestResolvers.Query);
Object.assign(Mutation, changeRequestResolvers.Mutation);

/** Every field: the schema the management actor executes with. */
// Webhooks (docs/webhooks.md): their fields live in their feature folder.
Object.assign(Query, webhookResolvers.Query);
Object.assign(Mutation, webhookResolvers.Mutation);
export const resolvers: ResolverMap = { Query, Mutation, Flag, AuditActor, WebhookEndpoint: webhookResolvers.WebhookEndpoint };
addInsightsResolvers(resolvers);
