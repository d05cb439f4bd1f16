/**
 * GraphQL schema of flag insights, lifecycle half (docs/insights.md, "Lifecycle"): `Flag.purpose`,
 * `Flag.insights(from, to, bucket)`, `insightsSettings`, `setInsightsSettings`, and `purpose` in
 * the flag inputs. `flagConnection(status:)` is the list's argument (graphql/schema.ts). No
 * imports: graphql/schema.ts reads it; the resolvers are in graphql-resolvers.ts.
 */
export const insightsTypeDefs = /* GraphQL */ `
type InsightsLastEvaluation {
  stage: String!
  """null: never evaluated in this environment."""
  at: DateTime
}
type InsightsPoint {
  stage: String!
  """The bucket's start (hour or day, UTC)."""
  start: DateTime!
  count: Float!
  """Evaluations by variant key: {"<variantKey>": count}."""
  variants: Any!
}
type FlagInsights {
  """new, unused, stale or active."""
  status: String!
  """Every condition that holds: age, unused, singleVariant."""
  reasons: [String!]!
  lastEvaluatedAt: [InsightsLastEvaluation!]!
  series: [InsightsPoint!]!
}
"""ISO 8601 durations (at least PT1S); a null lifetime never makes a flag stale by age."""
type InsightsLifetimes { release: String  experiment: String  operational: String  killSwitch: String  permission: String }
type InsightsSettings { lifetimes: InsightsLifetimes!  unusedAfter: String! }
input InsightsLifetimesInput { release: String  experiment: String  operational: String  killSwitch: String  permission: String }
"""Fields left out keep their value; a lifetime given as null never makes a flag stale by age."""
input InsightsSettingsInput { lifetimes: InsightsLifetimesInput  unusedAfter: String }
extend type Flag {
  """release, experiment, operational, killSwitch or permission: sets the flag's expected lifetime."""
  purpose: String!
  """Status, reasons, last evaluation per environment and counts per bucket (default: the last 14 days by hour)."""
  insights(from: DateTime, to: DateTime, bucket: String): FlagInsights
}
extend input CreateFlagInput { purpose: String }
extend input UpdateFlagInput { purpose: String }
extend type Query {
  insightsSettings: InsightsSettings
}
extend type Mutation {
  setInsightsSettings(input: InsightsSettingsInput!): InsightsSettings
}
`;
