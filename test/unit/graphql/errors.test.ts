/**
 * Error entries (docs/graphql.md, "Errors"): how execute.ts maps what graphql-jit reports to
 * `{message, path, extensions: {code, status}}`, including the codes no HTTP scenario reaches on
 * purpose (UNAVAILABLE, INTERNAL) and failures that are not VexilErrors.
 */
import { GraphQLError } from 'graphql';
import t from 'tap';
import { OrgWideEvaluatorError, VexilError } from '../../../src/domain/errors.js';
import { errorReply } from '../../../src/http/problem.js';
import { requireEvaluator, principalOf } from '../../../src/auth/permissions.js';
import { GraphQLExecutor } from '../../../src/graphql/execute.js';
import { createLogger } from '../../../src/util/log.js';

const logged: string[] = [];
const log = createLogger('error', {}, (line) => logged.push(line));
const ex = new GraphQLExecutor(log, { maxDepth: 15, maxEvaluations: 100 });
const fieldError = (original: unknown, message = (original as Error)?.message ?? 'x') =>
  new GraphQLError(message, { path: ['a', 0, 'b'], originalError: original as Error });

t.test('a VexilError keeps its code and REST status', async (t) => {
  for (const [code, status] of [['BAD_REQUEST', 400], ['FORBIDDEN', 403], ['NOT_FOUND', 404], ['CONFLICT', 409], ['UNAVAILABLE', 503]] as const) {
    const f = ex.formatError(fieldError(new VexilError(code, `m ${code}`)), false);
    t.same(f, { message: `m ${code}`, path: ['a', 0, 'b'], extensions: { code, status } }, code);
  }
});

t.test('AUTH_NOT_AUTHORIZED has no status', async (t) => {
  const f = ex.formatError(fieldError(new VexilError('AUTH_NOT_AUTHORIZED', 'no')), false);
  t.same(f.extensions, { code: 'AUTH_NOT_AUTHORIZED' });
});

t.test("an organization-wide key's evaluation: AUTH_NOT_AUTHORIZED without status in GraphQL, 403 FORBIDDEN over HTTP (one owner: domain/errors.ts)", async (t) => {
  const key = { id: 'k', orgId: 'o', name: 'n', permissions: ['CanEvaluate' as const], application: null, environment: null, disabled: false, createdAt: '2026-01-01T00:00:00.000Z', rotatedAt: null };
  let err: unknown;
  try {
    requireEvaluator(principalOf(key));
  } catch (e) {
    err = e;
  }
  t.ok(err instanceof OrgWideEvaluatorError, 'the permission check raises the org-wide error');
  const f = ex.formatError(fieldError(err), false);
  t.same(f.extensions, { code: 'AUTH_NOT_AUTHORIZED' }, 'GraphQL: AUTH_NOT_AUTHORIZED, no status');
  t.equal(f.message, (err as Error).message);
  const reply = errorReply(err as VexilError);
  t.equal(reply.status, 403, 'HTTP: 403');
  t.match(reply.body, { code: 'FORBIDDEN', status: 403 }, 'HTTP: FORBIDDEN');
});

t.test('INTERNAL and unexpected errors: 500 without internals, logged', async (t) => {
  logged.length = 0;
  const f = ex.formatError(fieldError(new VexilError('INTERNAL', 'db exploded at host 10.0.0.1', { cause: new Error('secret') })), false);
  t.same(f, { message: 'Unexpected server error', path: ['a', 0, 'b'], extensions: { code: 'INTERNAL', status: 500 } });
  const g = ex.formatError(fieldError(new TypeError('x is undefined in /srv/app.js')), false);
  t.same(g, { message: 'Unexpected server error', path: ['a', 0, 'b'], extensions: { code: 'INTERNAL', status: 500 } });
  t.equal(logged.length, 2, 'both logged');
  t.match(logged[1], /x is undefined/);
});

t.test("graphql-jit's own field errors", async (t) => {
  const nullArg = ex.formatError(new GraphQLError('Argument "name" of non-null type "String!" must not be null.', { path: ['flag'] }), false);
  t.same(nullArg.extensions, { code: 'BAD_REQUEST', status: 400 }, 'a null variable for a non-null argument is the client’s');
  const serialize = ex.formatError(fieldError(new GraphQLError('Int cannot represent non 32-bit signed integer value: 3000000000')), false);
  t.same(serialize.extensions, { code: 'INTERNAL', status: 500 }, 'a value the type cannot represent is ours');
  t.match(serialize.message, /Int cannot represent/);
});

t.test('request-level errors (variable coercion) are BAD_REQUEST with an empty path', async (t) => {
  const v = ex.formatError(new GraphQLError('Variable "$d" got invalid value "x"; Expected type DateTime.', { originalError: new VexilError('BAD_REQUEST', "DateTime: 'x' is not an ISO 8601 date-time") }), true);
  t.same(v.extensions, { code: 'BAD_REQUEST', status: 400 });
  t.same(v.path, []);
  t.match(v.message, /Expected type DateTime\. DateTime: 'x' is not/, 'the scalar’s reason is appended');
  const w = ex.formatError(new GraphQLError('Variable "$n" of required type "String!" was not provided.'), true);
  t.same(w, { message: 'Variable "$n" of required type "String!" was not provided.', path: [], extensions: { code: 'BAD_REQUEST', status: 400 } });
});
