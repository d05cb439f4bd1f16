/**
 * The one database interface the rest of Vexil sees. Two adapters implement it: PGlite (embedded
 * PostgreSQL in WASM, the zero-setup default) and postgres.js (a real PostgreSQL server). Both run
 * the same SQL with `$n` placeholders; jsonb parameters are passed as JSON text with a `::jsonb`
 * cast so both drivers treat them alike.
 */
import { VexilError } from '../domain/errors.js';

export interface Queryable {
  query<T = Record<string, unknown>>(text: string, params?: unknown[]): Promise<T[]>;
  /** Runs a script of several statements without parameters (migrations). */
  exec(script: string): Promise<void>;
}

export interface Database extends Queryable {
  readonly kind: 'pglite' | 'postgres';
  /** Runs `fn` in one transaction: everything it wrote commits together or not at all. */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/** PostgreSQL SQLSTATE codes we translate. */
const UNIQUE_VIOLATION = '23505';
const FOREIGN_KEY_VIOLATION = '23503';

/** Connection-level failures: the database is unreachable, not the statement wrong. */
const UNAVAILABLE_CODES = new Set([
  // statement_timeout (57014 query_canceled), lock_timeout (55P03), idle_in_transaction_session_timeout (25P03)
  '57014', '55P03', '25P03',
  'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'CONNECTION_CLOSED', 'CONNECTION_ENDED', 'CONNECTION_DESTROYED', 'CONNECT_TIMEOUT', '57P01', '57P02', '57P03', '08000', '08003', '08006', '08001', '08004']);

/** The connection was lost or refused (not a statement's own failure, not a timeout). */
const CONNECTION_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'CONNECTION_CLOSED', 'CONNECTION_ENDED', 'CONNECTION_DESTROYED', 'CONNECT_TIMEOUT', '57P01', '57P02', '57P03', '08000', '08003', '08006', '08001', '08004']);

export const isConnectionError = (err: unknown): boolean => {
  const code = (err as { code?: string } | null)?.code;
  return code !== undefined && CONNECTION_CODES.has(code);
};

/**
 * PostgreSQL stores no U+0000: in a text parameter it is 22021 (invalid byte sequence for UTF8),
 * in a jsonb string 22P05 (untranslatable character). Either is the client's input, not our fault.
 */
const NUL_CODES = new Set(['22021', '22P05']);

/** Maps a driver error to a VexilError; returns the error unchanged when it is already one. */
export function translateDbError(err: unknown): unknown {
  if (err instanceof VexilError) return err;
  const code = (err as { code?: string } | null)?.code;
  if (code === UNIQUE_VIOLATION) return new VexilError('CONFLICT', 'The resource already exists', { cause: err });
  if (code === FOREIGN_KEY_VIOLATION) return new VexilError('CONFLICT', 'The change refers to a resource that no longer exists', { cause: err });
  if (code !== undefined && NUL_CODES.has(code)) {
    return new VexilError('BAD_REQUEST', 'Text must not contain the NUL character (U+0000)', { cause: err });
  }
  if (code !== undefined && UNAVAILABLE_CODES.has(code)) {
    return new VexilError('UNAVAILABLE', 'The database is unavailable; try again later', { cause: err, retryAfter: 1 });
  }
  return err;
}

/** Runs a driver call, turning its errors into VexilErrors where they mean something to clients. */
export async function translated<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    throw translateDbError(err);
  }
}

export const json = (value: unknown): string => JSON.stringify(value);

export const iso = (value: Date | string | null): string | null =>
  value === null ? null : (value instanceof Date ? value : new Date(value)).toISOString();
