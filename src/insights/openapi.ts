/**
 * `POST /sdk/v1/metrics` in the OpenAPI document (docs/insights.md, "Provider reports"). Registered
 * next to the route; test/node/ops/openapi.test.ts fails when a served route has no entry.
 */
import { z } from 'zod';
import { registerOperations, type SecurityName } from '../openapi/operations.js';
import { registerSchemas } from '../openapi/schemas.js';
import { metricsBodySchema } from './metrics-schema.js';

registerSchemas({
  MetricsReport: metricsBodySchema.meta({ description: 'Evaluation counts made in process (docs/insights.md, "Provider reports"); at most 10,000 entries' }),
  MetricsAccepted: z
    .object({
      accepted: z.number().int().meta({ description: 'Entries counted' }),
      ignored: z.number().int().meta({ description: "Entries not counted: a flag the key's application does not have, or a variant the flag does not have" }),
    })
    .meta({ description: 'What a report added' }),
});

registerOperations({
  'POST /sdk/v1/metrics': {
    summary: 'Report evaluation counts made in process (the OpenFeature provider)',
    description:
      "docs/insights.md. CanEvaluate with an application scope; the application counted is the key's; the stage is `?stage=`, " +
      "defaulting to the key's environment scope; one evaluation rate-limit token. The body is checked whole first: 400 counts nothing.",
    tags: ['Feed'],
    security: ['apiKey', 'bearerKey', 'managementKey'] as SecurityName[],
    querySchema: 'FeedQuery',
    body: 'MetricsReport',
    bodyRequired: true,
    responses: { 202: { description: 'Counted', schema: 'MetricsAccepted' } },
    errors: [400, 401, 402, 403, 404, 413, 415, 429],
  },
});
