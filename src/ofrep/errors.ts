/** OFREP's errors (docs/ofrep.md, "Answers"): a typed error with OFREP's error code, and the body OFREP answers for any error. */
import { VexilError } from '../domain/errors.js';

export type OfrepErrorCode = 'PARSE_ERROR' | 'INVALID_CONTEXT' | 'TARGETING_KEY_MISSING' | 'FLAG_NOT_FOUND';

/** A failure with an OFREP error code: 400 (bad request) or 404 (FLAG_NOT_FOUND). */
export class OfrepError extends VexilError {
  constructor(
    readonly errorCode: OfrepErrorCode,
    message: string,
    /** The flag key of a single evaluation; null for bulk. */
    readonly flagKey: string | null,
  ) {
    super(errorCode === 'FLAG_NOT_FOUND' ? 'NOT_FOUND' : 'BAD_REQUEST', message);
  }
}

/** The OFREP body of an error (docs/ofrep.md, 'Answers'): `{key?, errorCode, errorDetails}` or `{errorDetails}`. */
export function ofrepErrorBody(err: VexilError): Record<string, string> {
  if (err instanceof OfrepError) {
    return err.flagKey === null
      ? { errorCode: err.errorCode, errorDetails: err.message }
      : { key: err.flagKey, errorCode: err.errorCode, errorDetails: err.message };
  }
  return { errorDetails: err.message };
}
