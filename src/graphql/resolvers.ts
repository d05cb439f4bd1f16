/**
 * Resolvers: thin calls into the same service functions REST uses, so that permissions, scopes,
 * validation and conflicts cannot drift apart. A service throws a VexilError; graphql-jit turns it
 * into a field error (the field is null, its siblings still answer) and `execute.ts` maps it to
 * `extensions: {code, status}`.
 *
 * Each field resolves against a fresh `Authenticated`: the principal from the request's
 * authentication and the organization's current snapshot. An organization-level write replaces the
 * snapshot object (a flag-level write updates it in place), so a field after a mutation in the
 * same document sees the write either way.
 */
import type { GraphQLResolveInfo } from 'graphql';
import type { Authenticated } from '../auth/authenticate.js';
import type { Flag, FlagConfig } from '../domain/types.js';
import { parseEvaluationBody } from '../domain/validation.js';
import { evaluateForKey } from '../features/evaluation/service.js';
import * as flags from '../features/flags/service.js';
import * as keys from '../features/keys/service.js';
import * as orgs from '../features/organizations/service.js';
import type { Runtime } from '../runtime.js';
import { materializeAny, type ResolverMap } from './schema.js';

export interface GraphQLContext {
  /**
   * In an evaluation worker only `snapshots.peek` and `now` exist (workers/evaluator.ts): the
   * documents that run there resolve nothing but `evaluate`.
   */
  rt: Runtime;
  /** Taken once per request, before the query is read (401 / 402 / 429). */
  auth: Authenticated;
  /** The document has a variable nested in an `Any` literal (see schema.ts). */
  deferredAny: boolean;
}

/** The request's principal with the organization's current snapshot. */
export function authFor(ctx: GraphQLContext): Authenticated {
  const snap = ctx.rt.snapshots.peek(ctx.auth.principal.orgId);
  if (snap === undefined || snap === ctx.auth.snapshot) return ctx.auth;
  return { principal: ctx.auth.principal, snapshot: snap };
}

/** An argument that may hold nested `Any` variables, with them filled in. */
function withVars<T>(value: T, ctx: GraphQLContext, info: GraphQLResolveInfo): T {
  if (!ctx.deferredAny) return value;
  return materializeAny(value, info.variableValues as unknown as Record<string, unknown>) as T;
}

type Args = Record<string, unknown>;
type Resolver<A = Args, S = unknown> = (source: S, args: A, ctx: GraphQLContext, info: GraphQLResolveInfo) => unknown;

const str = (v: unknown): string => v as string;
const optStr = (v: unknown): string | null => (v === undefined || v === null ? null : (v as string));

interface EvaluateArgs {
  key: string;
  userId: string;
  stage: string;
  context?: unknown;
  clientId?: string | null;
}

const evaluate: Resolver<EvaluateArgs> = (_s, args, ctx, info) => {
  // The same body check as REST (400 for an empty stage or userId, a non-object context, ...).
  const input = parseEvaluationBody({
    userId: args.userId,
    stage: args.stage,
    clientId: args.clientId ?? null,
    context: args.context === undefined ? null : withVars(args.context, ctx, info),
  });
  return evaluateForKey(authFor(ctx), args.key, input, ctx.rt.now(), 'AUTH_NOT_AUTHORIZED');
};

const Query: Record<string, Resolver> = {
  flags: (_s, _a, ctx) => flags.listFlags(authFor(ctx)),
  flag: (_s, a, ctx) => flags.getFlag(authFor(ctx), str(a.name)),
  flagConfigs: (_s, a, ctx) => flags.listConfigs(authFor(ctx), str(a.name), optStr(a.stage), optStr(a.clientId)),
  flagEnvironments: (_s, a, ctx) => flags.flagEnvironments(authFor(ctx), str(a.name)),
  environments: (_s, _a, ctx) => orgs.readList(authFor(ctx), 'environments'),
  applications: (_s, _a, ctx) => orgs.readList(authFor(ctx), 'applications'),
  killSwitch: (_s, _a, ctx) => orgs.killSwitch(authFor(ctx)),
  evaluate: evaluate as unknown as Resolver,
  managementKeys: (_s, _a, ctx) => keys.listKeys(ctx.rt, authFor(ctx)),
};

const createdKey = (r: keys.IssuedKey) => ({ id: r.id, key: r.key, managementKey: r.record });

const Mutation: Record<string, Resolver> = {
  createFlag: (_s, a, ctx, info) => flags.createFlag(ctx.rt, authFor(ctx), withVars(a.input, ctx, info)),
  updateFlag: (_s, a, ctx, info) => flags.updateFlag(ctx.rt, authFor(ctx), str(a.name), withVars(a.input, ctx, info)),
  archiveFlag: (_s, a, ctx) => flags.setArchived(ctx.rt, authFor(ctx), str(a.name), true),
  restoreFlag: (_s, a, ctx) => flags.setArchived(ctx.rt, authFor(ctx), str(a.name), false),
  deleteFlag: async (_s, a, ctx) => {
    await flags.deleteFlag(ctx.rt, authFor(ctx), str(a.name));
    return true;
  },
  upsertFlagConfig: (_s, a, ctx, info) => flags.upsertConfig(ctx.rt, authFor(ctx), str(a.name), withVars(a.input, ctx, info)),
  setFlagConfigEnabled: (_s, a, ctx) =>
    flags.setConfigEnabled(ctx.rt, authFor(ctx), str(a.name), str(a.stage), optStr(a.clientId), a.enabled as boolean),
  deleteFlagConfig: async (_s, a, ctx) => {
    await flags.deleteConfig(ctx.rt, authFor(ctx), str(a.name), str(a.stage), optStr(a.clientId));
    return true;
  },
  updateFlagEnvironments: (_s, a, ctx) => flags.updateFlagEnvironments(ctx.rt, authFor(ctx), str(a.name), a.environments),
  replaceEnvironments: (_s, a, ctx) => orgs.replaceList(ctx.rt, authFor(ctx), 'environments', a.environments),
  renameEnvironment: (_s, a, ctx) => orgs.renameInList(ctx.rt, authFor(ctx), 'environments', a.from, a.to),
  replaceApplications: (_s, a, ctx) => orgs.replaceList(ctx.rt, authFor(ctx), 'applications', a.applications),
  renameApplication: (_s, a, ctx) => orgs.renameInList(ctx.rt, authFor(ctx), 'applications', a.from, a.to),
  replaceKillSwitch: (_s, a, ctx) => orgs.replaceKillSwitch(ctx.rt, authFor(ctx), a.rules),
  createManagementKey: async (_s, a, ctx) => createdKey(await keys.createKey(ctx.rt, authFor(ctx), a.input)),
  rotateManagementKey: async (_s, a, ctx) => createdKey(await keys.rotateKey(ctx.rt, authFor(ctx), str(a.id))),
  disableManagementKey: (_s, a, ctx) => keys.disableKey(ctx.rt, authFor(ctx), str(a.id)),
  deleteManagementKey: async (_s, a, ctx) => {
    await keys.deleteKey(ctx.rt, authFor(ctx), str(a.id));
    return true;
  },
};

const Flag: Record<string, Resolver<Args, Flag>> = {
  // Read from the snapshot like `flagConfigs`: the key could read the flag, so it can read these.
  configs: (flag, _a, ctx): FlagConfig[] => flags.listConfigs(authFor(ctx), flag.name),
};

export const resolvers: ResolverMap = { Query, Mutation, Flag };
