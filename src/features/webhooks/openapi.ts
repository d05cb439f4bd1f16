/** Webhooks in the OpenAPI document (docs/webhooks.md, CONTRACT.md 19). */
import { z } from 'zod';
import { registerOperations } from '../../openapi/operations.js';
import { registerSchemas } from '../../openapi/schemas.js';
import { endpointInputSchema } from './validation.js';

const dateTime = z.iso.datetime({ offset: true });

const WebhookEndpointSchema = z.object({
  id: z.string(),
  url: z.string(),
  events: z.array(z.string()),
  description: z.string(),
  enabled: z.boolean(),
  disabledReason: z.string().nullable(),
  createdAt: dateTime,
  updatedAt: dateTime,
});
const secret = z.string().meta({ description: "`whsec_` + base64 of 32 random bytes: the Standard Webhooks signing secret, shown this once" });

registerSchemas({
  WebhookEndpointInput: endpointInputSchema.extend({
    events: z.array(z.string()).min(1).meta({ description: "Audit actions (`flag.create`), `*`, or a prefix with `*` after a dot (`flag.*`)" }),
  }),
  WebhookEndpoint: WebhookEndpointSchema,
  CreatedWebhookEndpoint: WebhookEndpointSchema.extend({ secret }),
  RotatedWebhookSecret: z.object({ id: z.string(), secret }),
  WebhookMessageRef: z.object({ messageId: z.string() }),
  // The bodyless POSTs accept nothing or an empty JSON object.
  WebhookEmptyBody: z.strictObject({}).meta({ description: 'Optional: no body, or {}' }),
  WebhookDelivery: z.object({
    id: z.string(),
    messageId: z.string(),
    type: z.string(),
    attempt: z.number().int(),
    at: dateTime,
    status: z.number().int().nullable(),
    durationMs: z.number().int(),
    error: z.string().nullable(),
  }),
});

const MGMT = ['managementKey' as const];
const AUTH_ERRORS = [400, 401, 402, 403, 429];
const BODY_ERRORS = [413, 415];
const id = { id: 'Webhook endpoint id' };

registerOperations({
  'POST /api/webhooks': {
    summary: 'Create a webhook endpoint (Admin); its signing secret is answered this once',
    description: 'https only unless VEXIL_WEBHOOK_ALLOW_HTTP=1; no private or special address unless VEXIL_WEBHOOK_ALLOW_PRIVATE=1. 409 `QUOTA_EXCEEDED` past VEXIL_MAX_WEBHOOKS_PER_ORG (docs/limits.md).',
    tags: ['Webhooks'],
    security: MGMT,
    body: 'WebhookEndpointInput',
    bodyRequired: true,
    responses: { 201: { description: 'The endpoint, with its secret', schema: 'CreatedWebhookEndpoint' } },
    errors: [...AUTH_ERRORS, 409, ...BODY_ERRORS, 503],
  },
  'GET /api/webhooks': {
    summary: "The organization's webhook endpoints (Admin; never a secret)",
    tags: ['Webhooks'],
    security: MGMT,
    responses: { 200: { description: 'Endpoints', schema: 'WebhookEndpoint', array: true } },
    errors: AUTH_ERRORS,
  },
  'GET /api/webhooks/:id': {
    summary: 'One webhook endpoint (Admin)',
    tags: ['Webhooks'],
    security: MGMT,
    params: id,
    responses: { 200: { description: 'The endpoint', schema: 'WebhookEndpoint' } },
    errors: [...AUTH_ERRORS, 404],
  },
  'PUT /api/webhooks/:id': {
    summary: 'Replace a webhook endpoint (Admin); enabling it again clears disabledReason',
    tags: ['Webhooks'],
    security: MGMT,
    params: id,
    body: 'WebhookEndpointInput',
    bodyRequired: true,
    responses: { 200: { description: 'The endpoint', schema: 'WebhookEndpoint' } },
    errors: [...AUTH_ERRORS, 404, ...BODY_ERRORS, 503],
  },
  'DELETE /api/webhooks/:id': {
    summary: 'Delete a webhook endpoint and its pending messages (Admin)',
    tags: ['Webhooks'],
    security: MGMT,
    params: id,
    responses: { 204: { description: 'Deleted' } },
    errors: [...AUTH_ERRORS, 404, 503],
  },
  'POST /api/webhooks/:id/rotate-secret': {
    summary: 'A new signing secret; the old one signs beside it for 24 hours (Admin)',
    tags: ['Webhooks'],
    security: MGMT,
    params: id,
    body: 'WebhookEmptyBody',
    responses: { 200: { description: 'The new secret, shown this once', schema: 'RotatedWebhookSecret' } },
    errors: [...AUTH_ERRORS, 404, ...BODY_ERRORS, 503],
  },
  'POST /api/webhooks/:id/test': {
    summary: 'Send a `webhook.test` message to the endpoint (Admin)',
    tags: ['Webhooks'],
    security: MGMT,
    params: id,
    body: 'WebhookEmptyBody',
    responses: { 202: { description: 'Queued', schema: 'WebhookMessageRef' } },
    errors: [...AUTH_ERRORS, 404, 409, ...BODY_ERRORS, 503],
  },
  'GET /api/webhooks/:id/deliveries': {
    summary: "Every attempt to deliver the endpoint's messages, oldest first (Admin)",
    description: 'Paged: `limit` (1..1000, default 100), `after` (a delivery id); a `Link: <...>; rel="next"` header when more follow.',
    tags: ['Webhooks'],
    security: MGMT,
    params: id,
    query: [
      { name: 'limit', description: 'Page size, 1..1000', schema: { type: 'integer', minimum: 1, maximum: 1000 } },
      { name: 'after', description: "The previous page's last delivery id", schema: { type: 'string' } },
    ],
    responses: { 200: { description: 'Attempts', schema: 'WebhookDelivery', array: true, headers: { link: 'The next page (RFC 8288), when there is one' } } },
    errors: [...AUTH_ERRORS, 404],
  },
  'POST /api/webhooks/:id/messages/:messageId/replay': {
    summary: 'Send a message again, with the same webhook-id and body (Admin)',
    tags: ['Webhooks'],
    security: MGMT,
    params: { ...id, messageId: 'The message id (webhook-id)' },
    body: 'WebhookEmptyBody',
    responses: { 202: { description: 'Queued', schema: 'WebhookMessageRef' } },
    errors: [...AUTH_ERRORS, 404, ...BODY_ERRORS, 503],
  },
});
