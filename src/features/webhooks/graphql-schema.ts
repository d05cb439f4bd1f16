/** The webhook types of the GraphQL schema (docs/webhooks.md); no imports: the front builds the schema too. */
export const webhookTypeDefs = /* GraphQL */ `
"""A webhook endpoint (Admin); its secret is answered only by createWebhook and rotateWebhookSecret."""
type WebhookEndpoint {
  id: ID!
  url: String!
  """Audit actions, '*', or prefixes ending in '.*'."""
  events: [String!]!
  description: String!
  enabled: Boolean!
  """Why delivery disabled it (a 410 Gone), or null."""
  disabledReason: String
  createdAt: DateTime!
  updatedAt: DateTime!
  """Attempts to deliver its messages, oldest first; after: the previous page's last id."""
  deliveries(first: Int, after: String): [WebhookDelivery!]!
}
type WebhookDelivery {
  id: ID!
  """The message's webhook-id."""
  messageId: String!
  type: String!
  attempt: Int!
  at: DateTime!
  """The HTTP status, or null (timeout, network error, refused address)."""
  status: Int
  durationMs: Int!
  error: String
}
type CreatedWebhookEndpoint {
  """whsec_ + base64 of 32 random bytes: shown this once."""
  secret: String!
  endpoint: WebhookEndpoint!
}
type RotatedWebhookSecret { id: ID!  secret: String! }
input WebhookEndpointInput { url: String!  events: [String!]!  description: String  enabled: Boolean }
extend type Query {
  webhooks: [WebhookEndpoint!]
  webhook(id: ID!): WebhookEndpoint
}
extend type Mutation {
  createWebhook(input: WebhookEndpointInput!): CreatedWebhookEndpoint
  """Replaces the endpoint (description '' and enabled true when absent)."""
  updateWebhook(id: ID!, input: WebhookEndpointInput!): WebhookEndpoint
  deleteWebhook(id: ID!): Boolean
  rotateWebhookSecret(id: ID!): RotatedWebhookSecret
  """Queues a webhook.test message; answers its webhook-id."""
  sendWebhookTest(id: ID!): String
  """Sends a message again (same webhook-id and body); answers its webhook-id."""
  replayWebhookMessage(id: ID!, messageId: String!): String
}
`;

/** The lengths the result estimate (src/graphql/result-estimate.ts) gives the webhook lists. */
export const WEBHOOK_LIST_LENGTHS = {
  /** VEXIL_MAX_WEBHOOKS_PER_ORG's default. */
  endpoints: 20,
  /** validation.ts MAX_PATTERNS. */
  patterns: 50,
  /** deliveries(first:): at most 1000, 100 without it. */
  deliveries: { max: 1000, default: 100 },
} as const;
