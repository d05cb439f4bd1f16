/**
 * Environment policies over GraphQL (CONTRACT 17; docs/change-requests.md): the SDL and resolvers,
 * hooked into src/graphql/schema.ts (`policyTypeDefs`) and resolvers.ts (`policyResolvers`). The
 * same service functions as REST; the review bypass header (`x-vexil-bypass-review`) works for
 * every GraphQL mutation too (management/actor.ts reads it on POST /api/graphql).
 */
import type { GraphQLContext, Resolver } from '../../graphql/evaluation-resolvers.js';
import { authFor } from '../../graphql/evaluation-resolvers.js';
import { VexilError } from '../../domain/errors.js';
import type { ActorRuntime } from '../../runtime.js';
import * as policies from './service.js';

export const policyTypeDefs = /* GraphQL */ `
"""An environment's review policy (docs/change-requests.md, "Protecting an environment")."""
type EnvironmentPolicy {
  environment: String!
  """0-5; above 0 the environment is protected: direct writes that change its answers are refused (review_required)."""
  requiredApprovals: Int!
  allowSelfApproval: Boolean!
  """An Admin key may write directly with the x-vexil-bypass-review header (audited)."""
  allowBypass: Boolean!
}
input EnvironmentPolicyInput { requiredApprovals: Int!  allowSelfApproval: Boolean  allowBypass: Boolean }
extend type Query {
  """CanRead. An environment without a stored policy answers the default (0, false, false)."""
  environmentPolicy(stage: String!): EnvironmentPolicy
}
extend type Mutation {
  """Admin on an organization-wide key; audited as org.policy."""
  setEnvironmentPolicy(stage: String!, input: EnvironmentPolicyInput!): EnvironmentPolicy
}
`;

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
