/**
 * The evaluation resolvers: `evaluate`, and what the evaluation plan (plan.ts) and the management
 * resolvers (resolvers.ts) share with it. This is all an evaluation worker imports of GraphQL's
 * resolvers: no management service, no database.
 */
import type { GraphQLResolveInfo } from 'graphql';
import type { Authenticated } from '../auth/authenticate.js';
import type { Evaluation } from '../domain/types.js';
import { parseEvaluationBody } from '../domain/validation.js';
import { evaluateHere, type EvaluationRequest } from '../evaluation/evaluate.js';
import type { Runtime } from '../runtime.js';
import type { OrgSnapshot } from '../engine/index.js';
import type { EvalCounts, EvaluationCounter } from '../ops/eval-counts.js';
import { materializeAny, type ResolverMap } from './schema.js';

/**
 * What the evaluation fields (`evaluate`, `explainEvaluation`) read, and all an evaluation worker
 * has: each organization's current snapshot, the request's clock, and the evaluation counters.
 */
export interface EvaluationEnv {
  peek(orgId: string): OrgSnapshot | undefined;
  now(): number;
  evalCounts: EvalCounts;
}

const envs = new WeakMap<Runtime, EvaluationEnv>();

/** The front thread's evaluation environment: the node's registry, clock and counters. */
export function evaluationEnv(rt: Runtime): EvaluationEnv {
  let env = envs.get(rt);
  if (env === undefined) {
    env = { peek: (orgId) => rt.snapshots.peek(orgId), now: () => rt.now(), evalCounts: rt.evalCounts };
    envs.set(rt, env);
  }
  return env;
}

export interface GraphQLContext {
  env: EvaluationEnv;
  /**
   * The node's services, for the management fields; null in an evaluation worker, where documents
   * resolve nothing but `evaluate` (execute.ts hands only those to the pool).
   */
  rt: Runtime | null;
  /** Taken once per request, before the query is read (401 / 402 / 429). */
  auth: Authenticated;
  /** The document has a variable nested in an `Any` literal (see schema.ts). */
  deferredAny: boolean;
}

/** The request's principal with the organization's current snapshot. */
export function authFor(ctx: GraphQLContext): Authenticated {
  const snap = ctx.env.peek(ctx.auth.principal.orgId);
  if (snap === undefined || snap === ctx.auth.snapshot) return ctx.auth;
  return { principal: ctx.auth.principal, snapshot: snap };
}

/** An argument that may hold nested `Any` variables, with them filled in. */
export function withVars<T>(value: T, ctx: GraphQLContext, info: GraphQLResolveInfo): T {
  if (!ctx.deferredAny) return value;
  return materializeAny(value, info.variableValues as unknown as Record<string, unknown>) as T;
}

export type Args = Record<string, unknown>;
export type Resolver<A = Args, S = unknown> = (source: S, args: A, ctx: GraphQLContext, info: GraphQLResolveInfo) => unknown;

export interface EvaluateArgs {
  key: string;
  userId: string;
  stage: string;
  context?: unknown;
  clientId?: string | null;
}

/**
 * The same body check as REST (400 for an empty stage or userId, a non-object context, ...), for
 * `evaluate` arguments, with `context` (`args.context` with its nested variables filled in) given
 * apart. Pure: the evaluation plan (plan.ts) runs it once per document when every argument is a
 * literal.
 */
export const evaluateFieldInput = (args: Omit<EvaluateArgs, 'context'>, context: unknown): EvaluationRequest =>
  parseEvaluationBody({
    userId: args.userId,
    stage: args.stage,
    clientId: args.clientId ?? null,
    context: context === undefined ? null : context,
  });

export const evaluationInput = (args: EvaluateArgs, ctx: GraphQLContext, info: GraphQLResolveInfo) =>
  evaluateFieldInput(args, args.context === undefined ? undefined : withVars(args.context, ctx, info));

/**
 * One `evaluate` field: the evaluation stage's step 1 and engine against the organization's current
 * snapshot, counted in `counts` (null: the plan counts once every field of the document has
 * answered, with `countEvaluations`). An organization-wide key's refusal is shown as GraphQL names
 * it, AUTH_NOT_AUTHORIZED, by domain/errors.ts.
 */
export function evaluateField(ctx: GraphQLContext, key: string, input: EvaluationRequest, counts: EvaluationCounter | null): Evaluation {
  return evaluateHere(authFor(ctx), key, input, ctx.env.now(), counts);
}

/** The `evaluate` field's resolver (graphql-jit), counted at once. */
export const evaluate: Resolver<EvaluateArgs> = (_s, args, ctx, info) => evaluateField(ctx, args.key, evaluationInput(args, ctx, info), ctx.env.evalCounts);

/** Only `evaluate`: the schema an evaluation worker executes with. */
export const evaluationResolvers: ResolverMap = { Query: { evaluate: evaluate as unknown as Resolver } };
