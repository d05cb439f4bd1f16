/**
 * The OpenAPI 3.1 document of the routes a node serves (`GET /api/openapi.json`), built from the
 * route tables themselves, the operation notes in operations.ts and the zod schemas (schemas.ts,
 * through zod's own JSON Schema conversion), so it follows the code.
 */
import { z } from 'zod';
import { STATUS_TEXT } from '../http/status.js';
import { HTTP_NAME, type Route } from '../http/router.js';
import { operationDoc, type OperationDoc, type ResponseDoc } from './operations.js';
import { NAMED_SCHEMAS, QUERY_SCHEMAS } from './schemas.js';

/** `/api/flags/:name` → `/api/flags/{name}`; a trailing `/*` → `/{path}`. */
export function openApiPath(pattern: string): string {
  return pattern.replace(/\/:([A-Za-z0-9_]+)/g, '/{$1}').replace(/\/\*$/, '/{path}');
}

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  const { $schema: _drop, ...rest } = z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any' }) as Record<string, unknown>;
  return rest;
}

const INPUT_SCHEMAS = new Set(['CreateFlagInput', 'UpdateFlagInput', 'UpsertFlagConfigInput', 'CreateManagementKeyInput', 'CreateOrganizationInput', 'PatchOrganizationInput', 'EvaluationRequest', 'GraphQLRequest']);

function response(r: ResponseDoc): Record<string, unknown> {
  const out: Record<string, unknown> = { description: r.description };
  if (r.headers !== undefined) {
    out.headers = Object.fromEntries(Object.entries(r.headers).map(([h, d]) => [h, typeof d === 'string' ? { description: d, schema: { type: 'string' } } : d]));
  }
  if (r.schema !== undefined) {
    const s = typeof r.schema === 'string' ? ref(r.schema) : r.schema;
    out.content = { [r.contentType ?? 'application/json']: { schema: r.array ? { type: 'array', items: s } : s } };
  }
  return out;
}

function operation(route: Route, doc: OperationDoc | undefined): Record<string, unknown> {
  const method = HTTP_NAME[route.method];
  const params = [...route.pattern.matchAll(/\/:([A-Za-z0-9_]+)/g)].map((m) => m[1]);
  if (route.pattern.endsWith('/*')) params.push('path');
  const op: Record<string, unknown> = {
    operationId: `${route.method}${openApiPath(route.pattern).replace(/[^A-Za-z0-9]+(.)?/g, (_m, c: string | undefined) => (c ?? '').toUpperCase())}`,
    summary: doc?.summary ?? `${method} ${route.pattern}`,
    tags: doc?.tags ?? ['Undocumented'],
  };
  if (doc === undefined) op['x-vexil-undocumented'] = true;
  if (doc?.description !== undefined) op.description = doc.description;
  const parameters: Record<string, unknown>[] = params.map((p) => ({ name: p, in: 'path', required: true, description: doc?.params?.[p], schema: { type: 'string' } }));
  for (const q of doc?.query ?? []) parameters.push({ name: q.name, in: 'query', required: false, description: q.description, schema: q.schema });
  if (route.headers?.includes('idempotency-key')) {
    parameters.push({
      name: 'Idempotency-Key',
      in: 'header',
      required: false,
      description: 'A repeat within 24 hours gets the first answer again and writes nothing; another request with the same key is 409 (README, Operating Vexil)',
      schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x21-\\x7e]+$' },
    });
  }
  if (route.headers?.includes('x-vexil-bypass-review')) {
    parameters.push({
      name: 'x-vexil-bypass-review',
      in: 'header',
      required: false,
      description: 'The reason an Admin key writes directly to a protected environment whose policy allows bypass (docs/change-requests.md); audited',
      schema: { type: 'string', minLength: 1, maxLength: 500 },
    });
  }
  if (doc?.querySchema !== undefined) {
    const obj = jsonSchema(QUERY_SCHEMAS[doc.querySchema], 'input') as { properties?: Record<string, unknown>; required?: string[] };
    for (const [name, schema] of Object.entries(obj.properties ?? {})) {
      // A property's description (zod `.meta`) describes the parameter.
      const { description, ...rest } = schema as { description?: string };
      const param: Record<string, unknown> = { name, in: 'query', required: obj.required?.includes(name) ?? false };
      if (description !== undefined) param.description = description;
      param.schema = rest;
      parameters.push(param);
    }
  }
  if (parameters.length > 0) op.parameters = parameters;
  if (doc?.body !== undefined) {
    op.requestBody = { required: doc.bodyRequired ?? false, content: { 'application/json': { schema: ref(doc.body) } } };
  }
  const responses: Record<string, unknown> = {};
  for (const [status, r] of Object.entries(doc?.responses ?? { 200: { description: 'OK' } })) responses[status] = response(r);
  for (const status of doc?.errors ?? []) responses[String(status)] = { $ref: `#/components/responses/Problem${status}` };
  responses.default = doc?.defaultResponse !== undefined ? response(doc.defaultResponse) : { $ref: '#/components/responses/Problem' };
  op.responses = responses;
  const security = (doc?.security ?? []).map((s) => ({ [s]: [] }));
  op.security = doc?.securityOptional ? [...security, {}] : security;
  return op;
}

const ERROR_STATUSES = [400, 401, 402, 403, 404, 405, 409, 413, 415, 429, 500, 503];

/** The document for `routes` (the node's route tables). */
export function buildOpenApi(routes: readonly Route[], version: string): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of routes) {
    const path = openApiPath(r.pattern);
    paths[path] ??= {};
    paths[path][r.method === 'del' ? 'delete' : r.method] = operation(r, operationDoc(HTTP_NAME[r.method], r.pattern));
  }
  const schemas: Record<string, unknown> = {};
  for (const [name, s] of Object.entries(NAMED_SCHEMAS)) schemas[name] = jsonSchema(s, INPUT_SCHEMAS.has(name) ? 'input' : 'output');
  const problem = (status: number) => ({
    description: STATUS_TEXT[status] ?? 'Error',
    headers: status === 429 || status === 503 ? { 'Retry-After': { description: 'Seconds to wait', schema: { type: 'string' } } } : undefined,
    content: { 'application/problem+json': { schema: ref('Problem') } },
  });
  const responses: Record<string, unknown> = { Problem: { description: 'Error', content: { 'application/problem+json': { schema: ref('Problem') } } } };
  for (const s of ERROR_STATUSES) {
    const p = problem(s);
    if (p.headers === undefined) delete (p as { headers?: unknown }).headers;
    responses[`Problem${s}`] = p;
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Vexil',
      version,
      description: 'Self-hosted feature flag service. Errors are application/problem+json (RFC 9457). Every answer carries x-request-id.',
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
    },
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    paths,
    components: {
      schemas,
      responses,
      securitySchemes: {
        managementKey: { type: 'apiKey', in: 'header', name: 'x-management-key', description: 'A Management Key (64 lowercase hex)' },
        operatorToken: { type: 'apiKey', in: 'header', name: 'x-operator-token', description: 'VEXIL_OPERATOR_TOKEN' },
        metricsToken: { type: 'http', scheme: 'bearer', description: 'VEXIL_METRICS_TOKEN, when set' },
        apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key', description: 'A Management Key (OFREP)' },
        bearerKey: { type: 'http', scheme: 'bearer', description: 'A Management Key as a bearer token (OFREP)' },
      },
    },
  };
}

/** `GET /api/openapi.json` for the node's own routes (`routes()` includes this one). */
export function openApiRoute(routes: () => readonly Route[], version: string): Route {
  let text: string | null = null;
  return {
    method: 'get',
    pattern: '/api/openapi.json',
    handler: () => {
      text ??= JSON.stringify(buildOpenApi(routes(), version));
      return { status: 200, raw: text, headers: { 'content-type': 'application/json' } };
    },
  };
}
