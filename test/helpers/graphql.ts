/** Helpers of the GraphQL suites: a POST to /api/graphql and assertions on its error entries. */
import type { Test } from 'tap';
import type { Res, TestNode } from './node.js';

export const OPERATOR_TOKEN = 'graphql-operator-token-0123456789';

export interface GqlError {
  message: string;
  path: (string | number)[];
  locations?: { line: number; column: number }[];
  extensions: { code: string; status?: number };
}

export interface GqlBody {
  data?: Record<string, any> | null;
  errors?: GqlError[];
}

export function gql(
  n: TestNode,
  key: string,
  query: string,
  variables?: Record<string, unknown> | null,
  operationName?: string,
): Promise<Res<GqlBody>> {
  const body: Record<string, unknown> = { query };
  if (variables !== undefined) body.variables = variables;
  if (operationName !== undefined) body.operationName = operationName;
  return n.req<GqlBody>('POST', '/api/graphql', { key, body });
}

type Asserts = Pick<Test, 'equal' | 'match' | 'same' | 'notOk'>;

const STATUS: Record<string, number> = { BAD_REQUEST: 400, FORBIDDEN: 403, NOT_FOUND: 404, CONFLICT: 409, INTERNAL: 500, UNAVAILABLE: 503 };

/**
 * Asserts one error entry at `path` with `code` and the status docs/graphql.md, "Errors", gives it (none for
 * AUTH_NOT_AUTHORIZED), and that the field at that path is null.
 */
export function expectFieldError(t: Asserts, res: Res<GqlBody>, path: (string | number)[], code: string, what = ''): GqlError | undefined {
  const at = what === '' ? path.join('.') : what;
  t.equal(res.status, 200, `${at}: HTTP 200`);
  const e = res.body.errors?.find((x) => JSON.stringify(x.path) === JSON.stringify(path));
  t.match(e, { message: String, path, extensions: { code } }, `${at}: error ${code} at ${path.join('.')}`);
  if (e === undefined) return undefined;
  if (code === 'AUTH_NOT_AUTHORIZED') t.notOk('status' in e.extensions, `${at}: AUTH_NOT_AUTHORIZED has no status`);
  else t.equal(e.extensions.status, STATUS[code], `${at}: status ${STATUS[code]}`);
  let v: any = res.body.data;
  for (const p of path) v = v?.[p];
  t.equal(v, null, `${at}: the failed field is null`);
  return e;
}

/** Asserts a request-level failure: HTTP 200, exactly one BAD_REQUEST error, no data. */
export function expectRequestError(t: Asserts, res: Res<GqlBody>, message?: RegExp, what = 'request error'): void {
  t.equal(res.status, 200, `${what}: HTTP 200`);
  t.equal(res.body.data ?? null, null, `${what}: no data`);
  t.equal(res.body.errors?.length, 1, `${what}: one error`);
  t.match(res.body.errors?.[0], { message: message ?? String, extensions: { code: 'BAD_REQUEST', status: 400 } }, `${what}: BAD_REQUEST 400`);
}

/** Asserts an application/problem+json transport error. */
export function expectProblem(t: Asserts, res: Res, status: number, code: string, what = ''): void {
  const at = what === '' ? `${status}` : what;
  t.equal(res.status, status, `${at}: status ${status}`);
  t.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/, `${at}: problem+json`);
  t.match(res.body, { type: String, title: String, status, detail: String, code }, `${at}: problem body ${code}`);
}

export const FLAG_FIELDS = `name project type description tags isArchived variants { key value valueType } environments dependencies { flag variants } purpose createdAt updatedAt`;
export const CONFIG_FIELDS = `stage clientId enabled defaultVariantKey rolloutPercentage rules { id priority conditions { field operator value } segments allocations { variantKey percentage } } activeFrom activeUntil enrollmentCutoff`;
