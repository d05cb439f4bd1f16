/**
 * The snapshot feed's routes in the OpenAPI document (docs/feed.md). Registered next to the routes;
 * test/node/ops/openapi.test.ts fails when a served route has no entry.
 */
import { z } from 'zod';
import { feedQuerySchema } from '../domain/validation.js';
import { SegmentSchema } from '../features/segments/openapi.js';
import { registerOperations, type SecurityName } from '../openapi/operations.js';
import { FlagConfigSchema, FlagSchema, QUERY_SCHEMAS, registerSchemas } from '../openapi/schemas.js';

QUERY_SCHEMAS.FeedQuery = feedQuerySchema;

registerSchemas({
  FeedSnapshot: z
    .object({
      format: z.literal(1),
      version: z.number().int().meta({ description: "The organization's data version the body holds" }),
      stage: z.string().meta({ description: "The stage, in the organization's spelling" }),
      application: z.string().meta({ description: "The key's application" }),
      organization: z.object({
        id: z.string(),
        environments: z.array(z.string()),
        applications: z.array(z.string()),
        killSwitch: z
          .array(z.object({ flag: z.string().nullable(), application: z.string().nullable(), environment: z.string().nullable() }))
          .meta({ description: 'The kill-switch rules that can match a flag of the feed in its stage, in order' }),
      }),
      flags: z
        .array(z.object({ flag: FlagSchema.omit({ purpose: true }), configs: z.array(FlagConfigSchema) }))
        .meta({ description: "The application's flags and the parents of their dependencies, with their configurations for the stage, by name" }),
      segments: z.array(SegmentSchema).meta({ description: 'The segments their rules name, by name' }),
    })
    .meta({ description: 'docs/feed.md, "The snapshot"' }),
});

const feed = {
  tags: ['Feed'],
  security: ['apiKey', 'bearerKey', 'managementKey'] as SecurityName[],
  querySchema: 'FeedQuery',
  errors: [400, 401, 402, 403, 404, 429],
};

registerOperations({
  'GET /sdk/v1/snapshot': {
    ...feed,
    summary: "The data to evaluate every flag of the key's application in a stage, in process",
    description:
      'docs/feed.md. CanEvaluate with an application scope; the stage defaults to the key\'s environment scope; one evaluation rate-limit token. ' +
      'Answers carry a weak ETag; If-None-Match with it answers 304.',
    responses: {
      200: { description: 'The feed', schema: 'FeedSnapshot', headers: { etag: 'Changes whenever the content changes' } },
      304: { description: 'Not modified (If-None-Match matched)' },
    },
  },
  'GET /sdk/v1/stream': {
    ...feed,
    summary: 'Server-sent events: a `snapshot` event, then a `change` event for every change of the feed',
    description: 'docs/feed.md, "The stream". Same key rules as the snapshot; at most VEXIL_SSE_MAX_STREAMS_PER_KEY open streams per key on a node (429).',
    responses: { 200: { description: 'text/event-stream', contentType: 'text/event-stream' } },
  },
});
