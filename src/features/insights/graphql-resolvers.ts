/**
 * GraphQL resolvers of flag insights, lifecycle half (schema in graphql.ts): they call the same
 * service functions as REST.
 */
import type { Flag } from '../../domain/types.js';
import { authFor, withVars, type Args, type GraphQLContext, type Resolver } from '../../graphql/evaluation-resolvers.js';
import type { ResolverMap } from '../../graphql/schema.js';
import type { ActorRuntime } from '../../runtime.js';
import { VexilError } from '../../domain/errors.js';
import * as insights from './service.js';

function services(ctx: GraphQLContext): ActorRuntime {
  if (ctx.rt === null || !('db' in ctx.rt)) throw new VexilError('INTERNAL', 'A management field ran outside the management actor');
  return ctx.rt as ActorRuntime;
}

/** GraphQL nulls are absent parameters. */
const rangeArgs = (a: Args): Record<string, unknown> => {
  const out: Record<string, unknown> = {};
  for (const k of ['from', 'to', 'bucket']) if (a[k] !== undefined && a[k] !== null) out[k] = a[k];
  return out;
};

const flagFields: Record<string, Resolver<Args, Flag>> = {
  purpose: (flag) => flag.purpose ?? 'release',
  insights: async (flag, a, ctx) => {
    const r = await insights.flagInsights(services(ctx), authFor(ctx), flag.name, rangeArgs(a));
    return {
      status: r.status,
      reasons: r.reasons,
      lastEvaluatedAt: Object.entries(r.lastEvaluatedAt).map(([stage, at]) => ({ stage, at })),
      series: r.series,
    };
  },
};

/** Adds the insights fields to `resolvers` (graphql/resolvers.ts calls it once). */
export function addInsightsResolvers(resolvers: ResolverMap): void {
  Object.assign((resolvers.Flag ??= {}), flagFields);
  Object.assign((resolvers.Query ??= {}), {
    insightsSettings: (_s: unknown, _a: Args, ctx: GraphQLContext) => insights.getSettings(services(ctx), authFor(ctx)),
  });
  Object.assign((resolvers.Mutation ??= {}), {
    setInsightsSettings: (_s: unknown, a: Args, ctx: GraphQLContext, info: Parameters<typeof withVars>[2]) =>
      insights.putSettings(services(ctx), authFor(ctx), withVars(a.input, ctx, info)),
  });
}
