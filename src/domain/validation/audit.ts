/** Audit log queries (docs/audit.md, "Reading the log"): REST query parameters and GraphQL `auditLog` arguments. */
import { z } from 'zod';
import { AUDIT_TARGET_TYPES, type AuditTargetType } from '../types.js';
import { parseInput } from './common.js';

export const AUDIT_LIMIT_MAX = 500;
export const AUDIT_LIMIT_DEFAULT = 100;
/** Event ids are positive bigints; longer digit strings cannot name an event. */
const ID_RE = /^[1-9][0-9]{0,17}$/;

export interface AuditQuery {
  target?: string;
  type?: AuditTargetType;
  limit: number;
  /** Only events older than this id (the last id of the previous page). */
  before?: string;
}

/** An integer given as a number (GraphQL) or as decimal text (a query string). */
const integer = z.union([z.number(), z.string().regex(/^-?[0-9]{1,6}$/, { error: 'expected an integer' }).transform(Number)]).pipe(z.number().int());

export const auditQuerySchema = z.strictObject({
  target: z.string().min(1).max(200).nullish(),
  type: z.enum(AUDIT_TARGET_TYPES).nullish(),
  limit: integer.pipe(z.number().min(1).max(AUDIT_LIMIT_MAX)).nullish(),
  before: z.union([z.number().int().positive().transform(String), z.string()]).pipe(z.string().regex(ID_RE, { error: 'expected an event id' })).nullish(),
});

/**
 * `GET /api/audit?target=&type=&limit=&before=` (values as text) or GraphQL `auditLog(target,
 * type, first, before)` (passed here as `limit`). Unknown parameters are 400; null means absent.
 */
export function parseAuditQuery(data: unknown): AuditQuery {
  const p = parseInput(auditQuerySchema, data, 'audit query');
  const out: AuditQuery = { limit: p.limit ?? AUDIT_LIMIT_DEFAULT };
  if (p.target != null) out.target = p.target;
  if (p.type != null) out.type = p.type;
  if (p.before != null) out.before = p.before;
  return out;
}
