/**
 * The GraphQL SDL of environment policies (docs/change-requests.md, "Protecting an environment"),
 * hooked into src/graphql/schema.ts; no imports (the front builds the schema). Resolvers: graphql.ts.
 */
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
