/**
 * Paging and search of the flag list (docs/api.md#listing-and-paging): REST `GET /api/flags` query
 * parameters and the arguments of GraphQL `flags` / `flagConnection`, both parsed into one
 * `FlagListQuery` so that the two cannot drift apart.
 *
 * - REST: `limit`, `after`, `q`, `application`, `type`, `archived`, as text. Unknown parameters
 *   are 400, like unknown body fields (a parameter given twice is refused before this, by the
 *   route's query reader).
 * - GraphQL: `first`, `after`, `search`, `application`, `type`, `archived`, typed; null means
 *   absent.
 *
 * `limit` / `first` is an integer 1..1000; `after` a flag name (FLAG_NAME_RE; it need not exist);
 * `application` an application name (NAME_RE; one the organization does not have matches
 * nothing); `type` one of the flag types; `archived` `true` or `false` (REST: exactly that text).
 * An empty search is no search.
 */
import { z } from 'zod';
import { FLAG_STATUSES, VALUE_TYPES, type FlagStatus, type ValueType } from '../types.js';
import { badRequest } from '../errors.js';
import { flagName, isPlainObject, name, parseInput } from './common.js';

export const FLAG_PAGE_MAX = 1000;
/** Longest search text. */
export const FLAG_SEARCH_MAX = 256;

export interface FlagListQuery {
  /** Page size; null: every matching flag. */
  limit: number | null;
  /** The page starts after this name; null: from the first. */
  after: string | null;
  /** Lower-cased search text; null: no search. */
  search: string | null;
  /** Application name as given (compared case-insensitively); null: any. */
  application: string | null;
  type: ValueType | null;
  archived: boolean | null;
  /** Lifecycle status (docs/insights.md, "Lifecycle"); null: any. */
  status: FlagStatus | null;
}

/** An integer given as a number (GraphQL) or as decimal digits (a query string). */
const pageSize = z
  .preprocess((v, ctx) => {
    if (typeof v !== 'string') return v;
    if (/^[0-9]{1,7}$/.test(v)) return Number(v);
    ctx.addIssue({ code: 'custom', message: `expected an integer from 1 to ${FLAG_PAGE_MAX}, got '${v.slice(0, 20)}'`, input: v });
    return z.NEVER;
  }, z.number().int().min(1).max(FLAG_PAGE_MAX));

/** A boolean given as a boolean (GraphQL) or as the text `true` / `false` (a query string). */
const booleanText = z.preprocess((v, ctx) => {
  if (typeof v !== 'string') return v;
  if (v === 'true') return true;
  if (v === 'false') return false;
  ctx.addIssue({ code: 'custom', message: `expected true or false, got '${v.slice(0, 20)}'`, input: v });
  return z.NEVER;
}, z.boolean());

const search = z.string().max(FLAG_SEARCH_MAX);
const flagType = z.enum(VALUE_TYPES);

/** The REST query parameters (also the OpenAPI description of `GET /api/flags`). */
export const flagListQuerySchema = z.strictObject({
  limit: pageSize.optional().meta({
    description: `Page size, 1-${FLAG_PAGE_MAX}. With it, an answer that has more matching flags after it carries \`Link: <next page>; rel="next"\`. Without it: every matching flag.`,
  }),
  after: flagName.optional().meta({ description: 'A flag name: the page starts after it (flags sort by name, byte order ascending). Need not exist.' }),
  q: search.optional().meta({ description: 'Case-insensitive substring of the name, the description or a tag. Empty: no search.' }),
  application: name.optional().meta({ description: 'Only flags of this application (case-insensitive). Within an application-scoped key, another application matches nothing.' }),
  type: flagType.optional().meta({ description: 'Only flags of this type.' }),
  archived: booleanText.optional().meta({ description: '`true`: only archived flags; `false`: only active ones; absent: both.' }),
  status: z.enum(FLAG_STATUSES).optional().meta({ description: 'Only flags of this lifecycle status: new, unused, stale or active (docs/insights.md, "Lifecycle").' }),
});

/** The GraphQL arguments of `flags` and `flagConnection`. */
const flagListArgsSchema = z.strictObject({
  first: pageSize.nullish(),
  after: flagName.nullish(),
  search: search.nullish(),
  application: name.nullish(),
  type: flagType.nullish(),
  archived: z.boolean().nullish(),
  status: z.enum(FLAG_STATUSES).nullish(),
});

const lowerOrNull = (s: string | null | undefined): string | null => (s == null || s === '' ? null : s.toLowerCase());

/** `GET /api/flags` query parameters (an object of strings): 400 naming the bad parameter. */
export function parseFlagListQuery(data: unknown): FlagListQuery {
  if (isPlainObject(data)) {
    const unknown = Object.keys(data).find((k) => !Object.hasOwn(flagListQuerySchema.shape, k));
    if (unknown !== undefined) {
      throw badRequest(`Unknown query parameter '${unknown.slice(0, 64)}'; known: ${Object.keys(flagListQuerySchema.shape).join(', ')}`);
    }
  }
  const p = parseInput(flagListQuerySchema, data, 'query');
  return {
    limit: p.limit ?? null,
    after: p.after ?? null,
    search: lowerOrNull(p.q),
    application: p.application ?? null,
    type: p.type ?? null,
    archived: p.archived ?? null,
    status: p.status ?? null,
  };
}

/** GraphQL `flags(first, after, search, application, type, archived)` and `flagConnection(...)`. */
export function parseFlagListArgs(data: unknown): FlagListQuery {
  const p = parseInput(flagListArgsSchema, data, 'arguments');
  return {
    limit: p.first ?? null,
    after: p.after ?? null,
    search: lowerOrNull(p.search),
    application: p.application ?? null,
    type: p.type ?? null,
    archived: p.archived ?? null,
    status: p.status ?? null,
  };
}
