/** Change requests in the OpenAPI document (docs/change-requests.md). */
import { z } from 'zod';
import { registerOperations } from '../../openapi/operations.js';
import { registerSchemas } from '../../openapi/schemas.js';

const hash = z.string().regex(/^[0-9a-f]{64}$/);
const keyRef = z.object({ keyId: z.string(), keyName: z.string() });
const review = z.object({ reviewer: keyRef, decision: z.enum(['approve', 'reject']), hash, revision: z.number().int(), comment: z.string().nullable(), at: z.string(), voided: z.boolean() });
const change = z.object({ op: z.enum(['upsertConfig', 'setConfigEnabled', 'deleteConfig', 'updateFlag', 'upsertSegment', 'deleteSegment', 'setKillSwitch']) }).loose();

const ChangeRequestSchema = z.object({
  id: z.string(),
  title: z.string(),
  description: z.string().nullable(),
  state: z.enum(['open', 'rejected', 'scheduled', 'applied', 'closed', 'failed']),
  approved: z.boolean(),
  revision: z.number().int(),
  hash,
  author: keyRef,
  changes: z.array(change),
  diff: z.array(z.object({ target: z.object({ type: z.string() }).loose(), before: z.unknown(), after: z.unknown() })),
  environments: z.array(z.string()),
  approvals: z.array(review),
  rejections: z.array(review),
  createdAt: z.string(),
  updatedAt: z.string(),
  appliedAt: z.string().nullable(),
  scheduledAt: z.string().nullable(),
  error: z.string().nullable(),
});
registerSchemas({
  ChangeRequest: ChangeRequestSchema,
  ChangeRequestInput: z.object({ title: z.string(), description: z.string().nullable().optional(), changes: z.array(change).min(1).max(100) }),
  ChangeRequestUpdate: z.object({ title: z.string().optional(), description: z.string().nullable().optional(), changes: z.array(change).min(1).max(100) }),
  ChangeRequestReview: z.object({ decision: z.enum(['approve', 'reject']), hash, comment: z.string().nullable().optional() }),
  ChangeRequestHash: z.object({ hash }),
  ChangeRequestSchedule: z.object({ at: z.string(), hash }),
  ChangeRequestPreviewInput: z.object({
    contexts: z.array(z.object({ userId: z.string(), clientId: z.string().nullable().optional(), context: z.record(z.string(), z.unknown()).nullable().optional() })).max(10_000).optional(),
    sample: z.boolean().optional(),
  }),
  ChangeRequestPreview: z.object({
    evaluated: z.number().int(),
    changed: z.number().int(),
    flags: z.array(z.object({ flag: z.string(), stage: z.string(), evaluated: z.number().int(), changed: z.number().int(), transitions: z.array(z.object({ from: z.string().nullable(), to: z.string().nullable(), count: z.number().int() })) })),
    examples: z.array(z.object({ userId: z.string(), flag: z.string(), stage: z.string(), from: z.string().nullable(), to: z.string().nullable() })),
  }),
});

const MGMT = ['managementKey' as const];
const ERR = [400, 401, 402, 403, 404, 409, 429, 503];
const one = (summary: string, body?: string, status = 200): Parameters<typeof registerOperations>[0][string] => ({
  summary,
  tags: ['Change requests'],
  security: MGMT,
  params: { id: 'Change request id' },
  ...(body ? { body, bodyRequired: true } : {}),
  responses: { [status]: { description: 'The change request', schema: 'ChangeRequest' } },
  errors: ERR,
});

registerOperations({
  'GET /api/change-requests': {
    summary: 'Change requests, oldest first, paged (limit, after; Link rel="next", X-Total-Count)',
    tags: ['Change requests'],
    security: MGMT,
    query: [
      { name: 'state', description: 'open, rejected, scheduled, applied, closed or failed', schema: { type: 'string' } },
      { name: 'limit', description: '1..1000', schema: { type: 'integer' } },
      { name: 'after', description: 'A change request id: the page starts after it', schema: { type: 'string' } },
    ],
    responses: { 200: { description: 'The change requests', schema: 'ChangeRequest', array: true } },
    errors: [400, 401, 402, 403, 429],
  },
  'POST /api/change-requests': {
    summary: 'Propose changes (1..100), each validated as its direct write',
    description: '409 `QUOTA_EXCEEDED` past 500 open requests per organization (docs/limits.md).',
    tags: ['Change requests'],
    security: MGMT,
    body: 'ChangeRequestInput',
    bodyRequired: true,
    responses: { 201: { description: 'The change request', schema: 'ChangeRequest' } },
    errors: [...ERR, 413, 415],
  },
  'GET /api/change-requests/:id': one('A change request with the history of its revisions and reviews'),
  'PUT /api/change-requests/:id': one('Replace the changes: a new revision and hash; every review so far is void', 'ChangeRequestUpdate'),
  'POST /api/change-requests/:id/reviews': one('Approve or reject the revision whose hash is given (CanApprove)', 'ChangeRequestReview'),
  'POST /api/change-requests/:id/apply': one('Apply every change in one transaction when the hash is current, approvals given and no target moved', 'ChangeRequestHash'),
  'POST /api/change-requests/:id/rebase': one('A new revision of the same changes against the current state (reviews void)'),
  'POST /api/change-requests/:id/schedule': one('Apply at `at` under the same conditions, else `failed`', 'ChangeRequestSchedule'),
  'POST /api/change-requests/:id/close': one('Withdraw (the author or an Admin key)'),
  'POST /api/change-requests/:id/preview': {
    summary: 'Evaluate every flag the request can affect, before and after, for up to 10,000 contexts (CanRead)',
    tags: ['Change requests'],
    security: MGMT,
    params: { id: 'Change request id' },
    body: 'ChangeRequestPreviewInput',
    bodyRequired: true,
    responses: { 200: { description: 'Counts and transitions per flag and environment', schema: 'ChangeRequestPreview' } },
    errors: ERR,
  },
  'POST /api/change-requests/:id/revert': one('A new open request restoring each target of an applied one', undefined, 201),
});
