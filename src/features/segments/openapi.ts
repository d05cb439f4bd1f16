/**
 * The segment routes in the OpenAPI document (docs/api.md#segments), registered next to the
 * routes; test/ops/openapi.test.ts fails when a served route has no entry.
 */
import { z } from 'zod';
import { createSegmentSchema, updateSegmentSchema } from '../../domain/validation.js';
import { registerOperations, type SecurityName } from '../../openapi/operations.js';
import { registerSchemas } from '../../openapi/schemas.js';

const dateTime = z.iso.datetime({ offset: true });

registerSchemas({
  CreateSegmentInput: createSegmentSchema,
  UpdateSegmentInput: updateSegmentSchema,
  Segment: z.object({
    name: z.string(),
    description: z.string().nullable(),
    application: z.string().nullable().meta({ description: 'null: an organization-wide segment' }),
    conditions: z.array(z.object({ field: z.string(), operator: z.string(), value: z.unknown() })),
    createdAt: dateTime,
    updatedAt: dateTime,
  }),
});

const MGMT: SecurityName[] = ['managementKey'];
const AUTH_ERRORS = [400, 401, 402, 403, 429];
const BODY_ERRORS = [413, 415];
const tags = ['Segments'];
const params = { name: 'Segment name' };

registerOperations({
  'GET /api/segments': {
    summary: 'List the segments the key can see',
    description: "CanRead. A key with an application scope sees its application's segments and the organization-wide ones; sorted by name.",
    tags,
    security: MGMT,
    responses: { 200: { description: 'Segments', schema: 'Segment', array: true } },
    errors: AUTH_ERRORS,
  },
  'POST /api/segments': {
    summary: 'Create a segment',
    description:
      "CanWrite. `application` absent: the key's application (organization-wide for a key without application scope); " +
      'organization-wide segments need a key without application scope; keys with an environment scope are 403. ' +
      '409 `CONFLICT` when the name exists, `QUOTA_EXCEEDED` past VEXIL_MAX_SEGMENTS_PER_ORG; 400 past the condition and list limits (docs/limits.md).',
    tags,
    security: MGMT,
    body: 'CreateSegmentInput',
    bodyRequired: true,
    responses: { 201: { description: 'The new segment', schema: 'Segment' } },
    errors: [...AUTH_ERRORS, 409, ...BODY_ERRORS, 503],
  },
  'GET /api/segments/:name': {
    summary: 'Get a segment',
    tags,
    security: MGMT,
    params,
    responses: { 200: { description: 'The segment', schema: 'Segment' } },
    errors: [...AUTH_ERRORS, 404],
  },
  'PUT /api/segments/:name': {
    summary: 'Update a segment (description, conditions; absent fields are kept)',
    tags,
    security: MGMT,
    params,
    body: 'UpdateSegmentInput',
    bodyRequired: true,
    responses: { 200: { description: 'The updated segment', schema: 'Segment' } },
    errors: [...AUTH_ERRORS, 404, ...BODY_ERRORS, 503],
  },
  'DELETE /api/segments/:name': {
    summary: 'Delete a segment',
    description: '409 `CONFLICT` naming the flags whose rules use it.',
    tags,
    security: MGMT,
    params,
    responses: { 204: { description: 'Deleted' } },
    errors: [...AUTH_ERRORS, 404, 409, 503],
  },
});
