/**
 * The UI's only way to the server: GraphQL at /api/graphql with the Management Key the person
 * entered. The key lives in sessionStorage only (never a URL, cookie or localStorage).
 */
const STORAGE_KEY = 'vexil.managementKey';

export const session = {
  get: (): string | null => sessionStorage.getItem(STORAGE_KEY),
  set: (key: string): void => sessionStorage.setItem(STORAGE_KEY, key),
  clear: (): void => sessionStorage.clear(),
};

/** An error from the API, in words, with the GraphQL code and the field path when there is one. */
export class ApiError extends Error {
  constructor(
    message: string,
    readonly code: string,
    readonly status: number,
    readonly path: readonly (string | number)[] = [],
  ) {
    super(message);
  }
}

const HTTP_WORDS: Record<number, string> = {
  401: 'This Management Key is missing, unknown or disabled.',
  402: 'The organization has no active subscription.',
  403: 'This key is not allowed to do that.',
  429: 'Too many requests for this key; try again in a moment.',
  503: 'The service is busy or unavailable; try again in a moment.',
};

/** Listeners told when the key stops working (401), so the app can sign out. */
const unauthorized = new Set<() => void>();
export const onUnauthorized = (fn: () => void) => {
  unauthorized.add(fn);
  return () => unauthorized.delete(fn);
};

interface GqlError {
  message: string;
  path?: (string | number)[];
  extensions?: { code?: string; status?: number };
}

/** Explains a GraphQL error entry in words a person can act on. */
export function describe(e: GqlError): ApiError {
  const code = e.extensions?.code ?? 'INTERNAL';
  const status = e.extensions?.status ?? (code === 'AUTH_NOT_AUTHORIZED' ? 403 : 500);
  const prefix = code === 'FORBIDDEN' || code === 'AUTH_NOT_AUTHORIZED' ? 'Not allowed (403): ' : '';
  return new ApiError(prefix + e.message, code, status, e.path ?? []);
}

export interface GqlResult<T> {
  data: T;
  /** Field errors beside partial data. */
  errors: ApiError[];
}

/** A request given up by the UI (a newer search replaced it): callers ignore it. */
export const isAborted = (err: unknown): boolean => err instanceof ApiError && err.code === 'ABORTED';

/**
 * Runs a GraphQL document; transport failures (401, 402, 429, 5xx) throw an ApiError. `signal`
 * gives the request up (an ApiError with code ABORTED, see isAborted).
 */
export async function gqlPartial<T>(query: string, variables?: Record<string, unknown>, key = session.get(), signal?: AbortSignal): Promise<GqlResult<T>> {
  let res: Response;
  try {
    res = await fetch('/api/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json', 'x-management-key': key ?? '' },
      body: JSON.stringify({ query, variables }),
      signal,
    });
  } catch {
    if (signal?.aborted) throw new ApiError('The request was given up.', 'ABORTED', 0);
    throw new ApiError('Cannot reach the Vexil server.', 'UNAVAILABLE', 0);
  }
  let body: { data?: T; errors?: GqlError[]; detail?: string; code?: string } = {};
  try {
    body = await res.json();
  } catch {
    if (signal?.aborted) throw new ApiError('The request was given up.', 'ABORTED', 0);
    /* not JSON: handled below */
  }
  if (res.status !== 200) {
    const words = HTTP_WORDS[res.status] ?? `The server answered ${res.status}.`;
    const err = new ApiError(body.detail ? `${words} (${body.detail})` : words, body.code ?? 'INTERNAL', res.status);
    if (res.status === 401) for (const fn of unauthorized) fn();
    throw err;
  }
  return { data: (body.data ?? {}) as T, errors: (body.errors ?? []).map(describe) };
}

/** Runs a GraphQL document and throws the first error. */
export async function gql<T>(query: string, variables?: Record<string, unknown>, key?: string, signal?: AbortSignal): Promise<T> {
  const r = await gqlPartial<T>(query, variables, key, signal);
  if (r.errors.length > 0) throw r.errors[0];
  return r.data;
}

// ---- shapes (docs/graphql.md) ----------------------------------------------------------------

import type { FlagConfig, Flag as ServerFlag, ManagementKey as ServerKey } from '../../src/domain/types';

export type {
  Allocation,
  Schedule,
  ScheduleStatus,
  Segment,
  Condition,
  FlagConfig,
  FlagDependency as Dependency,
  KillSwitchRule,
  Permission,
  Rule,
  ValueType,
  Variant,
  WebhookDelivery,
  WebhookEndpoint,
} from '../../src/domain/types';
/** A flag as `FLAG_FIELDS` selects it. */
export type Flag = ServerFlag & { configs: FlagConfig[] };
/** A key record as the API shows it (never its value). */
export type ManagementKey = Omit<ServerKey, 'orgId'>;
export interface Evaluation { key: string | null; variant: unknown; reason: { code: string; message: string; ruleId: string | null } }

export const CONFIG_FIELDS = `stage clientId enabled defaultVariantKey rolloutPercentage
  rules { id priority conditions { field operator value } segments allocations { variantKey percentage } }
  activeFrom activeUntil enrollmentCutoff`;
export const FLAG_FIELDS = `name project type description tags isArchived variants { key value valueType }
  environments dependencies { flag variants } purpose createdAt updatedAt configs { ${CONFIG_FIELDS} }`;
export const KEY_FIELDS = 'id name permissions application environment disabled createdAt rotatedAt';
/** Webhook endpoints and their delivery attempts (docs/webhooks.md), as WebhookEndpoint and WebhookDelivery. */
export const WEBHOOK_FIELDS = 'id url events description enabled disabledReason createdAt updatedAt';
export const WEBHOOK_DELIVERY_FIELDS = 'id messageId type attempt at status durationMs error';
/** Segments (docs/api.md, "Segments"). */
export const SEGMENT_FIELDS = 'name description application conditions { field operator value } createdAt updatedAt';
/** A flag's scheduled changes (docs/api.md, "Scheduled changes"): the configuration as CONFIG_FIELDS selects it. */
export const SCHEDULE_FIELDS = `id flag at stage clientId enabled config { ${CONFIG_FIELDS} } createdBy { keyId keyName } status appliedAt error`;

// ---- what the key may do (GraphQL `viewer`; docs/api.md, "Admin web UI") ----------------------

export interface Abilities {
  read: boolean;
  write: boolean;
  admin: boolean;
  /** Organization settings need CanWrite without scope. */
  orgSettings: boolean;
}

export function abilitiesOf(k: ManagementKey): Abilities {
  const p = new Set(k.permissions);
  const unscoped = k.application === null && k.environment === null;
  return {
    read: p.has('CanRead') || p.has('CanWrite'),
    write: p.has('CanWrite'),
    admin: p.has('Admin') && unscoped,
    orgSettings: p.has('CanWrite') && unscoped,
  };
}

// ---- pages of flags from the server (docs/graphql.md, "Paging and searching the flag list") --

/** Filters of `flagConnection`: absent or empty values do not filter. */
export interface FlagFilter {
  /** Case-insensitive substring of the name, description or a tag. */
  search?: string;
  application?: string;
  type?: string;
  /** true: archived flags only; false: active flags only; null or absent: both. */
  archived?: boolean | null;
}

export interface FlagConnection<N> {
  nodes: N[];
  pageInfo: { endCursor: string | null; hasNextPage: boolean };
  totalCount: number;
}

const CONNECTION_ARGS = 'first: $first, after: $after, search: $search, application: $application, type: $type, archived: $archived';
const CONNECTION_VARS = '$first: Int!, $after: String, $search: String, $application: String, $type: String, $archived: Boolean';

/** The GraphQL variables of a FlagFilter (empty strings become null: no filter). */
export const filterVars = (f: FlagFilter) => ({
  search: f.search?.trim() || null,
  application: f.application || null,
  type: f.type || null,
  archived: f.archived ?? null,
});

/**
 * One page of flags, sorted by name, with `fields` selected on each: the server filters, counts
 * and pages (never every flag). `after` is the previous page's endCursor (null: the first page).
 * `extra` adds fields to the same document (for example a second, unfiltered count).
 */
export async function flagPage<N>(
  fields: string,
  first: number,
  after: string | null,
  filter: FlagFilter,
  signal?: AbortSignal,
  extra: { fields: string; vars: string } = { fields: '', vars: '' },
): Promise<{ flagConnection: FlagConnection<N> } & Record<string, unknown>> {
  const r = await gql<{ flagConnection: FlagConnection<N> | null }>(
    `query(${CONNECTION_VARS}${extra.vars}) { flagConnection(${CONNECTION_ARGS}) { nodes { ${fields} } pageInfo { endCursor hasNextPage } totalCount } ${extra.fields} }`,
    { first, after, ...filterVars(filter) },
    undefined,
    signal,
  );
  if (r.flagConnection === null) throw new ApiError('The server did not answer the page of flags.', 'INTERNAL', 500);
  return r as { flagConnection: FlagConnection<N> } & Record<string, unknown>;
}
