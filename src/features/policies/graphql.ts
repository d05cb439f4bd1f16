/**
 * Environment policies over GraphQL (CONTRACT 17; docs/change-requests.md): the resolvers, hooked
 * into src/graphql/resolvers.ts (`policyResolvers`); the SDL is graphql-sdl.ts (the front builds the
 * schema, and imports no service). The
 * same service functions as REST; the review bypass header (`x-vexil-bypass-review`) works for
 * every GraphQL mutation too (management/actor.ts reads it on POST /api/graphql).
 */
import type { GraphQLContext, Resolver } from '../../graphql/evaluation-resolvers.js';
import { authFor } from '../../graphql/evaluation-resolvers.js';
import { VexilError } from '../../domain/errors.js';
import type { ActorRuntime } from '../../runtime.js';
import * as policies from './service.js';


function services(ctx: GraphQLContext): ActorRuntime {
  if (ctx.rt === null || !('db' in ctx.rt)) throw new VexilError('INTERNAL', 'A management field ran outside the management actor');
  return ctx.rt as ActorRuntime;
}

/** GraphQL leaves an omitted optional input field out, and gives an explicit null as null: both mean "default". */
const withoutNulls = (input: unknown): unknown =>
  input !== null && typeof input === 'object' && !Array.isArray(input)
    ? Object.fromEntries(Object.entries(input as Record<string, unknown>).filter(([, v]) => v !== null))
    : input;

export const policyResolvers: { Query: Record<string, Resolver>; Mutation: Record<string, Resolver> } = {
  Query: {
    environmentPolicy: (_s, a, ctx) => policies.getEnvironmentPolicy(services(ctx), authFor(ctx), a.stage),
  },
  Mutation: {
    setEnvironmentPolicy: (_s, a, ctx) => policies.setEnvironmentPolicy(services(ctx), authFor(ctx), a.stage, withoutNulls(a.input)),
  },
};
