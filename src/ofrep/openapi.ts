/**
 * OFREP's routes in the OpenAPI document (docs/ofrep.md), in open-feature/protocol's shapes.
 * Registered next to the routes; test/node/ops/openapi.test.ts fails when a served route has no entry.
 */
import { z } from 'zod';
import { registerOperations } from '../openapi/operations.js';
import { registerSchemas } from '../openapi/schemas.js';

const context = z
  .object({
    targetingKey: z.string().describe('The userId'),
    stage: z.string().optional().describe("The stage; without it, the key's environment scope"),
    clientId: z.string().nullable().optional(),
  })
  .catchall(z.unknown())
  .describe('Every other property is the evaluation context (docs/ofrep.md, "Requests"; limits: docs/limits.md, "Evaluation contexts")');

const metadata = z.record(z.string(), z.union([z.string(), z.number(), z.boolean()]));

registerSchemas({
  OfrepEvaluationRequest: z.object({ context }),
  OfrepEvaluationSuccess: z.object({
    key: z.string(),
    value: z.unknown().optional().describe('Absent when the outcome has no variant: the client uses its code default'),
    variant: z.string().optional(),
    reason: z.enum(['TARGETING_MATCH', 'SPLIT', 'STATIC', 'DISABLED', 'UNKNOWN']),
    metadata: metadata.describe('`reasonCode`: the Vexil reason code'),
  }),
  OfrepBulkSuccess: z.object({
    flags: z.array(z.record(z.string(), z.unknown())),
    eventStreams: z.array(z.object({ type: z.literal('sse'), url: z.string() })).optional(),
    metadata: metadata.optional(),
  }),
  OfrepEvaluationFailure: z.object({
    key: z.string().optional(),
    errorCode: z.enum(['PARSE_ERROR', 'INVALID_CONTEXT', 'TARGETING_KEY_MISSING', 'FLAG_NOT_FOUND', 'GENERAL']),
    errorDetails: z.string().optional(),
    metadata: metadata.optional(),
  }),
  OfrepGeneralError: z.object({ errorDetails: z.string().optional(), metadata: metadata.optional() }),
});

const errors = {
  400: { description: 'PARSE_ERROR, INVALID_CONTEXT or TARGETING_KEY_MISSING', schema: 'OfrepEvaluationFailure' },
  401: { description: 'Key missing, unknown or disabled', schema: 'OfrepGeneralError' },
  402: { description: 'The organization has no active subscription', schema: 'OfrepGeneralError' },
  403: { description: 'Permission or scope', schema: 'OfrepGeneralError' },
  429: { description: 'Rate limited', schema: 'OfrepGeneralError', headers: { 'retry-after': 'Seconds until the bucket refills' } },
  503: { description: 'Evaluation queue full or node shutting down', schema: 'OfrepGeneralError' },
};

/** What both evaluation routes share: tag, credentials, body, error shapes. */
const evaluation = {
  tags: ['OFREP'],
  security: ['apiKey', 'bearerKey', 'managementKey'] as ('apiKey' | 'bearerKey' | 'managementKey')[],
  body: 'OfrepEvaluationRequest',
  bodyRequired: true,
  defaultResponse: { description: 'Unexpected error', schema: 'OfrepGeneralError' },
};

registerOperations({
  'POST /ofrep/v1/evaluate/flags/:key': {
    ...evaluation,
    summary: 'OFREP: evaluate one flag',
    description: 'OpenFeature Remote Evaluation Protocol (docs/ofrep.md). The key in X-API-Key, Authorization: Bearer or x-management-key.',
    params: { key: 'Flag name' },
    responses: {
      200: { description: 'Evaluation', schema: 'OfrepEvaluationSuccess' },
      404: { description: 'FLAG_NOT_FOUND', schema: 'OfrepEvaluationFailure' },
      ...errors,
    },
  },
  'POST /ofrep/v1/evaluate/flags': {
    ...evaluation,
    summary: "OFREP: evaluate every flag of the key's application that has a configuration for the stage",
    description: 'Answers carry an ETag; If-None-Match with the current one answers 304 and evaluates nothing.',
    responses: {
      200: { description: 'Bulk evaluation', schema: 'OfrepBulkSuccess', headers: { etag: 'Changes whenever some answer would change' } },
      304: { description: 'Not modified (If-None-Match matched)' },
      ...errors,
    },
  },
  'GET /ofrep/v1/events': {
    summary: 'OFREP: server-sent events; `refetchEvaluation` after any change to a flag of the application',
    description: 'The URL comes from a bulk answer\'s eventStreams; its `token` is short-lived and signed, and carries no key value.',
    tags: ['OFREP'],
    defaultResponse: { description: 'Unexpected error', schema: 'OfrepGeneralError' },
    query: [{ name: 'token', description: 'Stream token from eventStreams', schema: { type: 'string' } }],
    responses: {
      200: { description: 'text/event-stream', contentType: 'text/event-stream' },
      401: { description: 'Token invalid, expired, or its key disabled, rotated or deleted', schema: 'OfrepGeneralError' },
      429: {
        description: "The key's evaluation rate limit, or the key already has VEXIL_SSE_MAX_STREAMS_PER_KEY open streams on this node (docs/ofrep.md#the-event-stream)",
        schema: 'OfrepGeneralError',
        headers: { 'retry-after': 'Seconds to wait before connecting again' },
      },
    },
  },
});
