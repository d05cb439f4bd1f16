/**
 * The GraphQL SDL of change requests (docs/change-requests.md), hooked into src/graphql/schema.ts;
 * no imports (the front builds the schema). Resolvers: graphql.ts.
 */
export const changeRequestTypeDefs = /* GraphQL */ `
"""A reviewer's decision on one revision, bound to its hash."""
type ChangeRequestReview {
  reviewer: AuditActor!
  decision: String!
  hash: String!
  revision: Int!
  comment: String
  at: DateTime!
  """A later revision voided it."""
  voided: Boolean!
}
type ChangeRequestApprovalNeed { stage: String!  required: Int!  approvals: Int! }
type ChangeRequestRevision { revision: Int!  hash: String!  author: AuditActor!  changes: Any!  diff: Any!  environments: [String!]!  createdAt: DateTime! }
type ChangeRequestHistory { revisions: [ChangeRequestRevision!]!  reviews: [ChangeRequestReview!]! }
"""A reviewed, atomic change set (docs/change-requests.md)."""
type ChangeRequest {
  id: ID!
  title: String!
  description: String
  """open, rejected, scheduled, applied, closed or failed."""
  state: String!
  approved: Boolean!
  revision: Int!
  """SHA-256 (hex) of the canonical JSON of the revision's changes and bases."""
  hash: String!
  author: AuditActor!
  changes: Any!
  """Per target: {target, before (its base), after}."""
  diff: Any!
  environments: [String!]!
  requiredApprovals: [ChangeRequestApprovalNeed!]!
  approvals: [ChangeRequestReview!]!
  rejections: [ChangeRequestReview!]!
  createdAt: DateTime!
  updatedAt: DateTime!
  appliedAt: DateTime
  scheduledAt: DateTime
  error: String
  reverts: ID
  history: ChangeRequestHistory
}
type ChangeRequestTransition { from: String  to: String  count: Int! }
type ChangeRequestPreviewFlag { flag: String!  stage: String!  evaluated: Int!  changed: Int!  transitions: [ChangeRequestTransition!]! }
type ChangeRequestPreviewExample { userId: String!  flag: String!  stage: String!  from: String  to: String }
"""Before and after, per flag the request can affect and environment it touches (docs/change-requests.md, "Previewing")."""
type ChangeRequestPreview { evaluated: Int!  changed: Int!  flags: [ChangeRequestPreviewFlag!]!  examples: [ChangeRequestPreviewExample!]! }
input PreviewContextInput { userId: String!  clientId: String  context: Any }
type ChangeRequestConnection { nodes: [ChangeRequest!]!  pageInfo: PageInfo!  totalCount: Int! }
"""One change: op is upsertConfig, setConfigEnabled, deleteConfig, updateFlag, upsertSegment, deleteSegment or setKillSwitch."""
input ChangeInput { op: String!  flag: String  stage: String  clientId: String  enabled: Boolean  segment: String  input: Any }
input ChangeRequestInput { title: String!  description: String  changes: [ChangeInput!]! }
input UpdateChangeRequestInput { title: String  description: String  changes: [ChangeInput!]! }
extend type Query {
  changeRequest(id: ID!): ChangeRequest
  changeRequestConnection(state: String, first: Int, after: String): ChangeRequestConnection
}
extend type Mutation {
  createChangeRequest(input: ChangeRequestInput!): ChangeRequest
  updateChangeRequest(id: ID!, input: UpdateChangeRequestInput!): ChangeRequest
  """CanApprove: decision approve or reject, on the revision whose hash is given."""
  reviewChangeRequest(id: ID!, decision: String!, hash: String!, comment: String): ChangeRequest
  applyChangeRequest(id: ID!, hash: String!): ChangeRequest
  scheduleChangeRequest(id: ID!, at: DateTime!, hash: String!): ChangeRequest
  closeChangeRequest(id: ID!): ChangeRequest
  revertChangeRequest(id: ID!): ChangeRequest
  rebaseChangeRequest(id: ID!): ChangeRequest
  """CanRead: evaluates before and after for up to 10,000 contexts; writes nothing."""
  previewChangeRequest(id: ID!, contexts: [PreviewContextInput!], sample: Boolean): ChangeRequestPreview
}
`;
