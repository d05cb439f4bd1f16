/**
 * GET /api/openapi.json (README.md, "API description"): a valid OpenAPI 3.1 document (checked by
 * @apidevtools/swagger-parser) whose operations are exactly the routes the node serves (taken from
 * its route tables), with request bodies from the zod schemas that validate them; real responses
 * match the documented response schemas.
 */
import SwaggerParser from '@apidevtools/swagger-parser';
import t from 'tap';
import { z } from 'zod';
import { createFlag, createKey, evaluate, OPERATOR_TOKEN, startTestNode, upsertConfig } from '../../helpers/node.js';
import { createFlagSchema, evaluationBodySchema, parseEvaluationBody, upsertConfigSchema } from '../../../src/domain/validation.js';
import { HAS_BODY, HTTP_NAME } from '../../../src/http/router.js';
import { openApiPath } from '../../../src/openapi/document.js';
import { documentedOperations } from '../../../src/openapi/operations.js';
import * as S from '../../../src/openapi/schemas.js';

const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

t.test('the document is valid OpenAPI 3.1 and covers exactly the served routes', async (t) => {
  const n = await startTestNode(t, { env: { VEXIL_OPERATOR_TOKEN: OPERATOR_TOKEN } });
  const r = await n.req('GET', '/api/openapi.json');
  t.equal(r.status, 200, 'no key needed');
  t.match(r.headers.get('content-type') ?? '', /^application\/json/);
  const doc = r.body;
  t.equal(doc.openapi, '3.1.0');
  await t.resolves(SwaggerParser.validate(structuredClone(doc)), 'swagger-parser validates it');

  const served = new Set(n.node.routes.map((rt) => `${HTTP_NAME[rt.method]} ${openApiPath(rt.pattern)}`));
  const documented = new Set<string>();
  for (const [path, item] of Object.entries<Record<string, any>>(doc.paths)) {
    for (const m of METHODS) {
      if (item[m] === undefined) continue;
      documented.add(`${m.toUpperCase()} ${path}`);
      t.notOk(item[m]['x-vexil-undocumented'], `${m.toUpperCase()} ${path} has its own documentation`);
      t.ok(item[m].responses && Object.keys(item[m].responses).length > 1, `${m.toUpperCase()} ${path} documents its responses`);
    }
  }
  t.same([...served].filter((x) => !documented.has(x)), [], 'every served route is in the document');
  t.same([...documented].filter((x) => !served.has(x)), [], 'every documented operation is served');
  t.ok(served.size >= 20, `${served.size} routes`);
  const known = new Set(n.node.routes.map((rt) => `${HTTP_NAME[rt.method]} ${rt.pattern}`));
  t.same(documentedOperations().filter((k) => !known.has(k)), [], 'no documentation entry for a route that does not exist');

  for (const rt of n.node.routes) {
    const op = doc.paths[openApiPath(rt.pattern)][rt.method === 'del' ? 'delete' : rt.method];
    const bodyless = /\/(rotate|disable|admin-keys|rebase|close|revert)$/.test(rt.pattern);
    if (HAS_BODY[rt.method] && !bodyless) t.ok(op.requestBody?.content?.['application/json']?.schema?.$ref, `${rt.method} ${rt.pattern} documents its body`);
    for (const [status, resp] of Object.entries<any>(op.responses)) {
      if (Number(status) < 400 && status !== 'default') continue;
      // OFREP answers errors in its own shapes (docs/ofrep.md, "Answers"); the UI's 404 is a plain problem.
      if (rt.pattern.startsWith('/ofrep/')) t.match(resp.content?.['application/json']?.schema?.$ref, /^#\/components\/schemas\/Ofrep/, `${rt.pattern} ${status} uses an OFREP error shape`);
      else if (rt.pattern.startsWith('/ui') || rt.pattern === '/') t.ok(resp, `${rt.pattern} ${status} documented`);
      else t.match(resp.$ref, /^#\/components\/responses\/Problem/, `${rt.pattern} ${status} is problem+json`);
    }
  }
  t.same(doc.paths['/api/graphql'].post.requestBody.content['application/json'].schema, { $ref: '#/components/schemas/GraphQLRequest' }, 'GraphQL is one operation');
  t.same(doc.paths['/api/flags/{name}'].put.security, [{ managementKey: [] }]);
  t.same(doc.paths['/api/operator/organizations'].post.security, [{ operatorToken: [] }]);
  t.same(doc.paths['/livez'].get.security, [], 'health checks need no credential');
  t.ok(doc.components.securitySchemes.managementKey && doc.components.securitySchemes.operatorToken && doc.components.securitySchemes.metricsToken);

  // The request schemas are the validators' own.
  const asJson = (s: z.ZodType) => {
    const { $schema: _s, ...rest } = z.toJSONSchema(s, { target: 'draft-2020-12', io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
    return rest;
  };
  t.same(doc.components.schemas.CreateFlagInput, asJson(createFlagSchema), 'CreateFlagInput comes from the validator');
  t.same(doc.components.schemas.UpsertFlagConfigInput, asJson(upsertConfigSchema), 'UpsertFlagConfigInput comes from the validator');
  t.equal(doc.components.schemas.CreateFlagInput.additionalProperties, false, 'unknown fields are refused, and documented so');
});

t.test('the evaluation body schema accepts and refuses what the hand-written parser does', async (t) => {
  const bodies: unknown[] = [
    { userId: 'u', stage: 'production' },
    { userId: 'u', stage: 'production', clientId: 'c', context: { a: 1 } },
    { userId: 'u', stage: 'production', clientId: null, context: null },
    { userId: '', stage: 'production' },
    { userId: 'u' },
    { stage: 'p' },
    { userId: 'u', stage: '' },
    { userId: 'u', stage: 'p', extra: 1 },
    { userId: 'u', stage: 'p', context: [1] },
    { userId: 'u', stage: 'p', context: 'x' },
    { userId: 'u', stage: 'p', clientId: '' },
    { userId: 'x'.repeat(1025), stage: 'p' },
    { userId: 'x'.repeat(1024), stage: 'p' },
    { userId: 5, stage: 'p' },
  ];
  for (const b of bodies) {
    let parser = true;
    try {
      parseEvaluationBody(b);
    } catch {
      parser = false;
    }
    t.equal(evaluationBodySchema.safeParse(b).success, parser, `${JSON.stringify(b).slice(0, 60)}: both ${parser ? 'accept' : 'refuse'}`);
  }
});

t.test('real responses match the documented response schemas', async (t) => {
  const n = await startTestNode(t, { env: { VEXIL_OPERATOR_TOKEN: OPERATOR_TOKEN } });
  const check = (schema: z.ZodType, body: unknown, what: string) => {
    const r = schema.safeParse(body);
    t.ok(r.success, `${what} matches${r.success ? '' : `: ${r.error.message}`}`);
  };
  const created = await createFlag(n, 'doc-flag');
  check(S.FlagSchema.strict(), created.body, 'POST /api/flags 201');
  const cfg = await upsertConfig(n, 'doc-flag', { rules: [{ priority: 1, conditions: [], allocations: [{ variantKey: 'on', percentage: 100 }] }] });
  check(S.FlagConfigSchema.strict(), cfg.body, 'POST /api/flags/{name}/configs 200');
  check(S.FlagWithConfigsSchema.strict(), (await n.req('GET', '/api/flags/doc-flag', { key: n.adminKey })).body, 'GET /api/flags/{name}');
  check(z.array(S.FlagSchema.strict()), (await n.req('GET', '/api/flags', { key: n.adminKey })).body, 'GET /api/flags');
  const key = await n.req('POST', '/api/keys', { key: n.adminKey, body: { name: 'k', permissions: ['CanRead'] } });
  check(S.CreatedKeySchema.strict(), key.body, 'POST /api/keys 201');
  check(z.array(S.KeyRecordSchema.strict()), (await n.req('GET', '/api/keys', { key: n.adminKey })).body, 'GET /api/keys');
  check(S.RotatedKeySchema.strict(), (await n.req('POST', `/api/keys/${key.body.id}/rotate`, { key: n.adminKey })).body, 'rotate');
  check(S.KeyRecordSchema.strict(), (await n.req('POST', `/api/keys/${key.body.id}/disable`, { key: n.adminKey })).body, 'disable');
  const ek = await createKey(n, { permissions: ['CanEvaluate'], application: 'default' });
  check(S.EvaluationSchema.strict(), (await evaluate(n, ek, 'doc-flag', { userId: 'u', stage: 'production' }, true)).body, 'evaluation with explain');
  check(S.EvaluationSchema.strict(), (await evaluate(n, ek, 'doc-flag', { userId: 'u', stage: 'production' })).body, 'evaluation');
  const org = await n.req('POST', '/api/operator/organizations', { body: { name: 'doc-org', environments: ['p'], applications: ['a'] }, headers: { 'x-operator-token': OPERATOR_TOKEN } });
  check(S.CreatedOrganizationSchema.strict(), org.body, 'operator create');
  check(S.OrganizationSchema.strict(), (await n.req('PATCH', '/api/operator/organizations/doc-org', { body: { subscriptionActive: false }, headers: { 'x-operator-token': OPERATOR_TOKEN } })).body, 'operator patch');
  check(S.ProblemSchema.strict(), (await n.req('GET', '/api/flags/nope', { key: n.adminKey })).body, 'a problem');
  check(S.GraphQLResponseSchema, (await n.req('POST', '/api/graphql', { key: n.adminKey, body: { query: '{ flags { name } nope: flag(name: "x") { name } }' } })).body, 'GraphQL');
  const segment = S.NAMED_SCHEMAS.Segment as z.ZodObject;
  const seg = await n.req('POST', '/api/segments', { key: n.adminKey, body: { name: 'doc-seg', conditions: [{ field: 'plan', operator: 'in', value: ['a'] }] } });
  check(segment.strict(), seg.body, 'POST /api/segments 201');
  check(segment.strict(), (await n.req('GET', '/api/segments/doc-seg', { key: n.adminKey })).body, 'GET /api/segments/{name}');
  check(segment.strict(), (await n.req('PUT', '/api/segments/doc-seg', { key: n.adminKey, body: { description: 'd' } })).body, 'PUT /api/segments/{name}');
  check(z.array(segment.strict()).length(1), (await n.req('GET', '/api/segments', { key: n.adminKey })).body, 'GET /api/segments');
  const segRule = await upsertConfig(n, 'doc-flag', { rules: [{ priority: 1, conditions: [], segments: ['doc-seg'], allocations: [{ variantKey: 'on', percentage: 100 }] }] });
  check(S.FlagConfigSchema.strict(), segRule.body, 'a configuration whose rule names a segment');
  const feed = await n.req('GET', '/sdk/v1/snapshot?stage=production', { key: ek });
  t.ok(feed.body.flags.length === 1 && feed.body.segments.length === 1, 'the feed holds the flag and the segment its rule names');
  check((S.NAMED_SCHEMAS.FeedSnapshot as z.ZodObject).strict(), feed.body, 'GET /sdk/v1/snapshot');
  check(z.array(S.AuditEventSchema.strict()).min(1), (await n.req('GET', '/api/audit', { key: n.adminKey })).body, 'GET /api/audit');
  check(S.LiveSchema.strict(), (await n.req('GET', '/livez')).body, '/livez');
  check(S.ReadySchema.strict(), (await n.req('GET', '/readyz')).body, '/readyz');
  check(S.HealthSchema.strict(), (await n.req('GET', '/healthz')).body, '/healthz');
});
