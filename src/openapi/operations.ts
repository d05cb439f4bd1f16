/**
 * What the OpenAPI document says about each route, keyed by `METHOD /pattern` as the route tables
 * declare them. A feature with routes of its own (OFREP, audit) adds its entries with
 * `registerOperations` from its module, next to its routes; document.ts pairs served routes with
 * these entries, and test/node/ops/openapi.test.ts fails when a served route has none or an entry has
 * no served route.
 */
export type SecurityName = 'managementKey' | 'operatorToken' | 'metricsToken' | 'apiKey' | 'bearerKey';

export interface ResponseDoc {
  description: string;
  /** A name from components.schemas (schemas.ts), or a raw JSON Schema. */
  schema?: string | Record<string, unknown>;
  array?: boolean;
  contentType?: string;
  /** Response headers: a description (a string header), or a description and a JSON Schema. */
  headers?: Record<string, string | { description: string; schema: Record<string, unknown> }>;
}

export interface OperationDoc {
  summary: string;
  description?: string;
  tags: string[];
  /** Any one of these is enough; absent means no credential. */
  security?: SecurityName[];
  /** The credential may be configured away (the metrics token). */
  securityOptional?: boolean;
  /** Request body: a name from components.schemas. */
  body?: string;
  bodyRequired?: boolean;
  query?: { name: string; description: string; schema: Record<string, unknown> }[];
  /** Query parameters from a named zod object schema (schemas.ts QUERY_SCHEMAS), one per property. */
  querySchema?: string;
  /** Path parameter descriptions by name. */
  params?: Record<string, string>;
  responses: Record<number, ResponseDoc>;
  /** Error statuses answered as problem+json (components.responses). */
  errors?: number[];
  /** Any other error, when it is not problem+json (OFREP's own shapes). */
  defaultResponse?: ResponseDoc;
}

const MGMT: SecurityName[] = ['managementKey'];
const AUTH_ERRORS = [400, 401, 402, 403, 429];
const BODY_ERRORS = [413, 415];

const operations = new Map<string, OperationDoc>();

/** Adds the documentation of some routes (`'POST /ofrep/v1/evaluate/flags/:key'` → doc). */
export function registerOperations(docs: Record<string, OperationDoc>): void {
  for (const [k, v] of Object.entries(docs)) operations.set(k, v);
}

export function operationDoc(method: string, pattern: string): OperationDoc | undefined {
  return operations.get(`${method} ${pattern}`);
}

export function documentedOperations(): string[] {
  return [...operations.keys()];
}

registerOperations({
  'POST /flags/:name': {
    summary: 'Evaluate a flag for a user',
    description: 'See docs/api.md, "Evaluation", and docs/evaluation.md. Needs a CanEvaluate key with an application scope; charged to the evaluation rate-limit bucket.',
    tags: ['Evaluation'],
    security: MGMT,
    params: { name: 'Flag name' },
    query: [{ name: 'explain', description: '`true` adds `reason`', schema: { type: 'boolean' } }],
    body: 'EvaluationRequest',
    bodyRequired: true,
    responses: { 200: { description: 'The variant', schema: 'Evaluation' } },
    errors: [...AUTH_ERRORS, 404, ...BODY_ERRORS, 503],
  },
  'GET /api/flags': {
    summary: 'List flags: filter, search and page',
    description:
      'See docs/api.md, "Listing and paging". The flags the key may read (its application scope filters them), sorted by name in byte order, as a bare array. ' +
      'Unknown or repeated parameters and bad values are 400.',
    tags: ['Flags'],
    security: MGMT,
    querySchema: 'FlagListQuery',
    responses: {
      200: {
        description: 'The matching flags after `after`, at most `limit` of them',
        schema: 'Flag',
        array: true,
        headers: {
          'X-Total-Count': { description: "Flags matching the filters within the key's application scope (whatever `after` and `limit` say)", schema: { type: 'integer', minimum: 0 } },
          Link: '`<URL of the next page>; rel="next"` (RFC 8288): only with `limit`, when more matching flags follow; the URL repeats the parameters with `after` set',
        },
      },
    },
    errors: AUTH_ERRORS,
  },
  'POST /api/flags': {
    summary: 'Create a flag',
    tags: ['Flags'],
    security: MGMT,
    body: 'CreateFlagInput',
    bodyRequired: true,
    responses: { 201: { description: 'The new flag', schema: 'Flag' } },
    description: '409 `QUOTA_EXCEEDED` past VEXIL_MAX_FLAGS_PER_ORG; 400 past the variant limits (docs/limits.md); 403 for a key with an environment scope.',
    errors: [...AUTH_ERRORS, 409, ...BODY_ERRORS, 503],
  },
  'GET /api/flags/:name': {
    summary: 'Get a flag with its configurations',
    tags: ['Flags'],
    security: MGMT,
    params: { name: 'Flag name' },
    responses: { 200: { description: 'The flag', schema: 'FlagWithConfigs' } },
    errors: [...AUTH_ERRORS, 404],
  },
  'PUT /api/flags/:name': {
    summary: 'Update a flag (absent fields are kept)',
    tags: ['Flags'],
    security: MGMT,
    params: { name: 'Flag name' },
    body: 'UpdateFlagInput',
    bodyRequired: true,
    responses: { 200: { description: 'The updated flag', schema: 'Flag' } },
    errors: [...AUTH_ERRORS, 404, 409, ...BODY_ERRORS, 503],
  },
  'DELETE /api/flags/:name': {
    summary: 'Delete a flag',
    tags: ['Flags'],
    security: MGMT,
    params: { name: 'Flag name' },
    responses: { 204: { description: 'Deleted' } },
    errors: [...AUTH_ERRORS, 404, 409, 503],
  },
  'POST /api/flags/:name/configs': {
    summary: "Create or replace a flag's configuration for a stage (and clientId)",
    tags: ['Flags'],
    security: MGMT,
    params: { name: 'Flag name' },
    body: 'UpsertFlagConfigInput',
    bodyRequired: true,
    responses: { 200: { description: 'The configuration', schema: 'FlagConfig' } },
    description: '409 `QUOTA_EXCEEDED` for a new configuration past VEXIL_MAX_CONFIGS_PER_FLAG; 400 past the rule, condition and value limits (docs/limits.md).',
    errors: [...AUTH_ERRORS, 404, 409, ...BODY_ERRORS, 503],
  },
  'GET /api/keys': {
    summary: "List the organization's Management Keys (never a key value)",
    tags: ['Keys'],
    security: MGMT,
    responses: { 200: { description: 'Key records', schema: 'ManagementKey', array: true } },
    errors: AUTH_ERRORS,
  },
  'GET /api/keys/self': {
    summary: 'The calling key\'s own record (never its value), for any valid key',
    tags: ['Keys'],
    security: MGMT,
    responses: { 200: { description: 'The key record', schema: 'ManagementKey' } },
    errors: [401, 402, 429],
  },
  'POST /api/keys': {
    summary: 'Create a Management Key (Admin)',
    tags: ['Keys'],
    security: MGMT,
    body: 'CreateManagementKeyInput',
    bodyRequired: true,
    responses: { 201: { description: 'The key record with its value, shown once', schema: 'CreatedManagementKey' } },
    description: '409 `QUOTA_EXCEEDED` past VEXIL_MAX_KEYS_PER_ORG (disabled keys count).',
    errors: [...AUTH_ERRORS, 409, ...BODY_ERRORS, 503],
  },
  'POST /api/keys/:id/rotate': {
    summary: 'Rotate a key: a new value, the old one stops working on every node',
    tags: ['Keys'],
    security: MGMT,
    params: { id: 'Key id' },
    responses: { 200: { description: 'The new value, shown once', schema: 'RotatedManagementKey' } },
    errors: [...AUTH_ERRORS, 404, 503],
  },
  'POST /api/keys/:id/disable': {
    summary: 'Disable a key',
    tags: ['Keys'],
    security: MGMT,
    params: { id: 'Key id' },
    responses: { 200: { description: 'The key record', schema: 'ManagementKey' } },
    description: "409 `CONFLICT` for the organization's last enabled Admin key.",
    errors: [...AUTH_ERRORS, 404, 409, 503],
  },
  'DELETE /api/keys/:id': {
    summary: 'Delete a key',
    tags: ['Keys'],
    security: MGMT,
    params: { id: 'Key id' },
    responses: { 204: { description: 'Deleted' } },
    description: "409 `CONFLICT` for the organization's last enabled Admin key.",
    errors: [...AUTH_ERRORS, 404, 409, 503],
  },
  'POST /api/operator/organizations': {
    summary: 'Create an organization with its first admin key (operator API)',
    tags: ['Operator'],
    security: ['operatorToken'],
    body: 'CreateOrganizationInput',
    bodyRequired: true,
    responses: { 201: { description: 'The organization and its admin key, shown once', schema: 'CreatedOrganization' } },
    errors: [400, 401, 404, 409, ...BODY_ERRORS, 503],
  },
  'PATCH /api/operator/organizations/:name': {
    summary: "Change an organization's subscription (operator API)",
    tags: ['Operator'],
    security: ['operatorToken'],
    params: { name: 'Organization name' },
    body: 'PatchOrganizationInput',
    bodyRequired: true,
    responses: { 200: { description: 'The organization', schema: 'Organization' } },
    errors: [400, 401, 404, ...BODY_ERRORS, 503],
  },
  'POST /api/operator/organizations/:name/admin-keys': {
    summary: 'Issue a new Admin key for an existing organization (operator API)',
    description:
      'See docs/api.md, "Operator API". Takes no body. A new organization-wide key with Admin, CanRead and CanWrite, audited as `key.create` ' +
      'by `{operator: true}`. 409 `QUOTA_EXCEEDED` past VEXIL_MAX_KEYS_PER_ORG.',
    tags: ['Operator'],
    security: ['operatorToken'],
    params: { name: 'Organization name' },
    responses: { 201: { description: 'The new Admin key, shown once', schema: 'IssuedAdminKey' } },
    errors: [401, 404, 409, 503],
  },
  'POST /api/graphql': {
    summary: 'GraphQL: every query and mutation',
    description: 'See docs/graphql.md. Field errors answer 200 with `errors[].extensions.{code, status}`; 401, 402, 429 and transport failures are problem+json.',
    tags: ['GraphQL'],
    security: MGMT,
    body: 'GraphQLRequest',
    bodyRequired: true,
    responses: { 200: { description: 'GraphQL response', schema: 'GraphQLResponse' } },
    errors: [400, 401, 402, 429, ...BODY_ERRORS, 503],
  },
  'GET /api/audit': {
    summary: 'The audit log, newest first',
    description: 'See docs/audit.md. CanRead; a key with application scope sees only its application\'s events, key events need Admin.',
    tags: ['Audit'],
    security: MGMT,
    querySchema: 'AuditQuery',
    responses: { 200: { description: 'Events', schema: 'AuditEvent', array: true } },
    errors: AUTH_ERRORS,
  },
  'GET /livez': {
    summary: 'Liveness: 200 while the process runs',
    tags: ['Operations'],
    responses: { 200: { description: 'Live', schema: 'Live' } },
  },
  'GET /readyz': {
    summary: 'Readiness: snapshots loaded and the database answers; 503 during shutdown or when the database is unreachable',
    tags: ['Operations'],
    responses: { 200: { description: 'Ready', schema: 'Ready' } },
    errors: [503],
  },
  'GET /healthz': {
    summary: "The node's status, cluster size and bus state",
    tags: ['Operations'],
    responses: { 200: { description: 'Health', schema: 'Health' } },
  },
  'GET /metrics': {
    summary: 'Prometheus metrics (text exposition format)',
    description:
      'Needs `Authorization: Bearer <VEXIL_METRICS_TOKEN>` when that setting is set. A missing or wrong token spends the address\'s failed-authentication budget; past it 429.',
    tags: ['Operations'],
    security: ['metricsToken'],
    securityOptional: true,
    responses: { 200: { description: 'Metrics', schema: { type: 'string' }, contentType: 'text/plain; version=0.0.4' } },
    errors: [401, 429],
  },
  'GET /api/openapi.json': {
    summary: 'This document',
    tags: ['Operations'],
    responses: { 200: { description: 'OpenAPI 3.1', schema: { type: 'object' } } },
  },
});
