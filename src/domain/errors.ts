/**
 * Typed errors. Every failure a client can see is a VexilError with a stable `code`; REST turns it
 * into application/problem+json, OFREP into its own shapes, GraphQL into an `errors[]` entry with
 * the same code. How every transport shows a code (its HTTP status, and what GraphQL-only codes
 * become) is decided here, in `ERROR_STATUS` and `GRAPHQL_ONLY`, and nowhere else.
 */

/** The HTTP status of each code, for every transport (REST, OFREP, GraphQL `extensions.status`). */
export const ERROR_STATUS = {
  BAD_REQUEST: 400,
  UNAUTHENTICATED: 401,
  PAYMENT_REQUIRED: 402,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  CONFLICT: 409,
  /** A write that would pass a count limit (docs/limits.md, "Tenancy limits"): flags, keys, configurations. */
  QUOTA_EXCEEDED: 409,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  RATE_LIMITED: 429,
  INTERNAL: 500,
  UNAVAILABLE: 503,
  /** GraphQL only: the key is valid but can never use that field (docs/graphql.md, "Errors"); see GRAPHQL_ONLY. */
  AUTH_NOT_AUTHORIZED: 403,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

/**
 * Codes only GraphQL shows (docs/graphql.md, "Errors"): GraphQL gives them without
 * `extensions.status`, and HTTP answers (REST problem+json, OFREP) name them `http`, with
 * ERROR_STATUS's status.
 */
const GRAPHQL_ONLY: { readonly [C in ErrorCode]?: { readonly http: ErrorCode } } = {
  AUTH_NOT_AUTHORIZED: { http: 'FORBIDDEN' },
};

/** The code an HTTP answer (REST problem+json, OFREP) names for `code`. */
export const httpCode = (code: ErrorCode): ErrorCode => GRAPHQL_ONLY[code]?.http ?? code;

/**
 * A GraphQL error's `extensions` for `err`: its code, and its status unless the code is
 * GraphQL-only. An organization-wide key asking to evaluate is FORBIDDEN on every HTTP answer and
 * AUTH_NOT_AUTHORIZED in GraphQL (docs/graphql.md, "Errors"): decided here, for every GraphQL
 * field and wherever the document runs.
 */
export const graphqlExtensions = (err: VexilError): { code: ErrorCode; status?: number } => {
  const code = err instanceof OrgWideEvaluatorError ? 'AUTH_NOT_AUTHORIZED' : err.code;
  const base = GRAPHQL_ONLY[code] !== undefined ? { code } : { code, status: err.status };
  return err.details === undefined ? base : { ...err.details, ...base };
};

export class VexilError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  /** Seconds, for RATE_LIMITED. */
  readonly retryAfter?: number;
  /**
   * Further members of the problem body (REST) and of GraphQL's `extensions`, e.g. `reason:
   * "review_required"` and `environment` for a protected environment (`reviewRequired`).
   */
  readonly details?: Readonly<Record<string, unknown>>;

  constructor(code: ErrorCode, message: string, opts: { retryAfter?: number; cause?: unknown; details?: Record<string, unknown> } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'VexilError';
    this.code = code;
    this.status = ERROR_STATUS[code];
    if (opts.retryAfter !== undefined) this.retryAfter = opts.retryAfter;
    if (opts.details !== undefined) this.details = opts.details;
  }
}

/**
 * An organization-wide key asking to evaluate (docs/api.md#keys; auth/permissions.ts
 * `requireEvaluator`): FORBIDDEN, 403, which GraphQL names AUTH_NOT_AUTHORIZED (`graphqlExtensions`).
 */
export class OrgWideEvaluatorError extends VexilError {
  constructor() {
    super('FORBIDDEN', 'An organization-wide key cannot evaluate flags; use a key with an application scope');
  }
}

export const badRequest = (message: string) => new VexilError('BAD_REQUEST', message);
export const notFound = (message: string) => new VexilError('NOT_FOUND', message);
export const forbidden = (message: string) => new VexilError('FORBIDDEN', message);
export const conflict = (message: string) => new VexilError('CONFLICT', message);
export const quotaExceeded = (message: string) => new VexilError('QUOTA_EXCEEDED', message);

/**
 * A direct write to a protected environment (docs/change-requests.md, "Protecting an environment"):
 * 409 CONFLICT whose body has `reason: "review_required"`, `environment` (the first) and
 * `environments` (every protected environment the write would change).
 */
export const reviewRequired = (environments: readonly string[]) =>
  new VexilError(
    'CONFLICT',
    `Environment${environments.length > 1 ? 's' : ''} ${environments.map((e) => `'${e}'`).join(', ')} ${environments.length > 1 ? 'require' : 'requires'} review: propose this change as a change request (docs/change-requests.md)`,
    { details: { reason: 'review_required', environment: environments[0], environments: [...environments] } },
  );

export function isVexilError(err: unknown): err is VexilError {
  return err instanceof VexilError;
}
