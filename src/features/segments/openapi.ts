/**
 * The segment routes in the OpenAPI document (docs/api.md#segments), registered next to the
 * routes; test/node/ops/openapi.test.ts fails when a served route has no entry.
 */
import { z } from 'zod';
import { createSegmentSchema, updateSegmentSchema } from '../../domain/validation.js';
import { registerOperations, type SecurityName } from '../../openapi/operations.js';
import { registerSchemas } from '../../openapi/schemas.js';

const dateTime = z.iso.datetime({ offset: true });

export const SegmentSchema = z.object({
  name: z.string(),
  description: z.string().nullable(),
  application: z.string().nullable().meta({ description: 'null: an organization-wide segment' }),
  conditions: z.array(z.object({ field: z.string(), operator: z.string(), value: z.unknown() })),
  createdAt: dateTime,
  updatedAt: dateTime,
});

registerSchemas({
  CreateSegmentInput: createSegmentSchema,
  UpdateSegmentInput: updateSegmentSchema,
  Segment: SegmentSchema,
});

const AUTH_ERRORS = [400, 401, 402, 403, 429];
const WRITE_ERRORS = [...AUTH_ERRORS, 413, 415, 503];
const all = { tags: ['Segments'], security: ['managementKey'] as SecurityName[] };
const one = { ...all, params: { name: 'Segment name' } };
const segment = (description: string) => ({ description, schema: 'Segment' });

registerOperations({
  'GET /api/segments': {
    ...all,
    summary: 'List the segments the key can see',
    description: "CanRead. A key with an application scope sees its application's segments and the organization-wide ones; sorted by name.",
    responses: { 200: { ...segment('Segments'), array: true } },
    errors: AUTH_ERRORS,
  },
  'POST /api/segments': {
    ...all,
    summary: 'Create a segment',
    description:
      "CanWrite. `application` absent: the key's application (organization-wide for a key without application scope); " +
      'organization-wide segments need a key without application scope; keys with an environment scope are 403. ' +
      '409 `CONFLICT` when the name exists, `QUOTA_EXCEEDED` past VEXIL_MAX_SEGMENTS_PER_ORG; 400 past the condition and list limits (docs/limits.md).',
    body: 'CreateSegmentInput',
    bodyRequired: true,
    responses: { 201: segment('The new segment') },
    errors: [...WRITE_ERRORS, 409],
  },
  'GET /api/segments/:name': { ...one, summary: 'Get a segment', responses: { 200: segment('The segment') }, errors: [...AUTH_ERRORS, 404] },
  'PUT /api/segments/:name': {
    ...one,
    summary: 'Update a segment (description, conditions; absent fields are kept)',
    body: 'UpdateSegmentInput',
    bodyRequired: true,
    responses: { 200: segment('The updated segment') },
    errors: [...WRITE_ERRORS, 404],
  },
  'DELETE /api/segments/:name': {
    ...one,
    summary: 'Delete a segment; 409 `CONFLICT` naming the flags whose rules use it',
    responses: { 204: { description: 'Deleted' } },
    errors: [...AUTH_ERRORS, 404, 409, 503],
  },
});
