/** RFC 9457 problem details for every REST error (docs/api.md#errors), and the reply that carries them. */
import { httpCode, VexilError, type ErrorCode } from '../domain/errors.js';
import type { Reply } from './handler.js';
import { STATUS_TEXT } from './status.js';

export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: ErrorCode;
}

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/** `err` as problem details: its status and HTTP code from the one table (domain/errors.ts). */
export function toProblem(err: VexilError): Problem {
  const status = err.status;
  const code = httpCode(err.code);
  return {
    // Members a code adds (VexilError.details), before the standard ones so they cannot replace them.
    ...err.details,
    type: `urn:vexil:problem:${code.toLowerCase().replace(/_/g, '-')}`,
    title: STATUS_TEXT[status] ?? 'Error',
    status,
    detail: err.message,
    code,
  };
}

/**
 * Adds the `Retry-After` header of an error that names a wait (`VexilError.retryAfter`, seconds)
 * to `headers`, and returns them: the one place that header is built, for every error shape.
 */
export function withRetryAfter(err: VexilError, headers: Record<string, string>): Record<string, string> {
  if (err.retryAfter !== undefined) headers['retry-after'] = String(err.retryAfter);
  return headers;
}

/** Anything that is not a VexilError is an unexpected failure: 500 without internals. */
export function asVexilError(err: unknown): VexilError {
  if (err instanceof VexilError) return err;
  return new VexilError('INTERNAL', 'Unexpected server error', { cause: err });
}

/** The problem+json reply of `err` (its status, and `Retry-After` when the error names one). */
export function errorReply(err: VexilError, extraHeaders?: Record<string, string>): Reply {
  const problem = toProblem(err);
  const headers = withRetryAfter(err, { 'content-type': PROBLEM_CONTENT_TYPE, ...extraHeaders });
  return { status: problem.status, body: problem, headers, small: true };
}
