/**
 * The review bypass (docs/change-requests.md, "Protecting an environment"): a write request may
 * carry `x-vexil-bypass-review: <reason>`. The management actor parses the header (400 when empty
 * or too long) and runs the write inside `bypassContext`; the guard (guard.ts) lets an Admin key
 * through a protected environment whose policy has `allowBypass`, and marks the context used, so
 * that the write's audit event (features/write.ts) records `bypass: {reason}`.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { badRequest } from '../../domain/errors.js';

/** Longest reason accepted, in characters. */
export const BYPASS_REASON_MAX = 500;

export interface BypassRequest {
  reason: string;
  /** The guard let the write in the running transaction through on this bypass. */
  usedInTransaction: boolean;
}

export const bypassContext = new AsyncLocalStorage<BypassRequest>();

/**
 * The header's reason, trimmed; null when the header is absent (the front gives an absent header
 * as '', so an empty header is no header); 400 when only blanks, too long or with control characters.
 */
export function parseBypassHeader(value: string | undefined): string | null {
  if (value === undefined || value === '') return null;
  const reason = value.trim();
  if (reason === '') throw badRequest('x-vexil-bypass-review: the reason must not be empty');
  if ([...reason].length > BYPASS_REASON_MAX) throw badRequest(`x-vexil-bypass-review: the reason must be at most ${BYPASS_REASON_MAX} characters`);
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(reason)) throw badRequest('x-vexil-bypass-review: the reason must not contain control characters');
  return reason;
}

/** Runs `fn` with the request's bypass, if it sent one (400 for a malformed header). */
export function withBypass<T>(header: string | undefined, fn: () => Promise<T>): Promise<T> {
  const reason = parseBypassHeader(header);
  if (reason === null) return fn();
  return bypassContext.run({ reason, usedInTransaction: false }, fn);
}
