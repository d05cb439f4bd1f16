/**
 * Change requests over GraphQL (docs/change-requests.md): the SDL and resolvers, hooked into
 * src/graphql/schema.ts (`changeRequestTypeDefs`) and resolvers.ts (`changeRequestResolvers`). The
 * same service functions as REST. A change is given as `ChangeInput` (its `input` the direct
 * write's body as `Any`); `changes` and `diff` answer as `Any` (their JSON as REST shows it).
 */
import type { GraphQLContext, Resolver } from '../../graphql/evaluation-resolvers.js';
import { authFor, withVars } from '../../graphql/evaluation-resolvers.js';
import { VexilError } from '../../domain/errors.js';
import type { ActorRuntime } from '../../runtime.js';
import * as cr from './service.js';

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
}
`;

function services(ctx: GraphQLContext): ActorRuntime {
  if (ctx.rt === null || !('db' in ctx.rt)) throw new VexilError('INTERNAL', 'A management field ran outside the management actor');
  return ctx.rt as ActorRuntime;
}

/** GraphQL gives omitted optional fields as absent and explicit ones as null: both mean "absent" here. */
function withoutNulls(v: unknown): unknown {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return v;
  return Object.fromEntries(Object.entries(v as Record<string, unknown>).filter(([, x]) => x !== null));
}

function requestBody(input: unknown): unknown {
  const o = withoutNulls(input) as Record<string, unknown>;
  if (Array.isArray(o.changes)) {
    o.changes = o.changes.map((c) => {
      const x = withoutNulls(c) as Record<string, unknown>;
      // clientId null is meaningful for configurations; an absent one is the same.
      return x;
    });
  }
  return o;
}

export const changeRequestResolvers: { Query: Record<string, Resolver>; Mutation: Record<string, Resolver> } = {
  Query: {
    changeRequest: async (_s, a, ctx) => {
      try {
        return await cr.getRequest(services(ctx), authFor(ctx), String(a.id));
      } catch (err) {
        if (err instanceof VexilError && err.code === 'NOT_FOUND') return null;
        throw err;
      }
    },
    changeRequestConnection: async (_s, a, ctx) => {
      const page = await cr.listRequests(services(ctx), authFor(ctx), { state: (a.state as string) ?? null, limit: (a.first as number) ?? null, after: (a.after as string) ?? null });
      const last = page.items[page.items.length - 1];
      return { nodes: page.items, totalCount: page.total, pageInfo: { endCursor: last?.id ?? null, hasNextPage: page.hasMore } };
    },
  },
  Mutation: {
    createChangeRequest: (_s, a, ctx, info) => cr.createRequest(services(ctx), authFor(ctx), requestBody(withVars(a.input, ctx, info))),
    updateChangeRequest: (_s, a, ctx, info) => cr.updateRequest(services(ctx), authFor(ctx), String(a.id), requestBody(withVars(a.input, ctx, info))),
    reviewChangeRequest: (_s, a, ctx) =>
      cr.reviewRequest(services(ctx), authFor(ctx), String(a.id), withoutNulls({ decision: a.decision, hash: a.hash, comment: a.comment ?? null })),
    applyChangeRequest: (_s, a, ctx) => cr.applyRequest(services(ctx), authFor(ctx), String(a.id), { hash: a.hash }),
    scheduleChangeRequest: (_s, a, ctx) => cr.scheduleRequest(services(ctx), authFor(ctx), String(a.id), { at: a.at, hash: a.hash }),
    closeChangeRequest: (_s, a, ctx) => cr.closeRequest(services(ctx), authFor(ctx), String(a.id)),
    revertChangeRequest: (_s, a, ctx) => cr.revertRequest(services(ctx), authFor(ctx), String(a.id)),
    rebaseChangeRequest: (_s, a, ctx) => cr.rebaseRequest(services(ctx), authFor(ctx), String(a.id)),
  },
};
