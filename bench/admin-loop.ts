/**
 * The admin of the large-organization benchmarks (docs/benchmarks.md, "Large organizations"): the
 * management requests an admin of a 100,000-flag organization sends, timed one by one. A module
 * (the `large-org` scenario times them from the runner, bench/large-org.ts) and a child process
 * (the `isolation` scenario's admin loop, pinned with the load generator to CPU 1, never on the
 * server's core):
 *
 *   node dist/bench/admin-loop.js '{"baseUrl":"http://127.0.0.1:PORT","key":"<64 hex>","pauseMs":0}'
 *
 * The child warms `fetch` up and, with `"warm":true`, sends one round of the loop's requests and
 * prints `warm {"records":[…]}` (the node's first unpaged list, for one, builds what later ones
 * reuse: the isolation scenario keeps that cold start out of its slices and reports it apart);
 * then it prints `ready` and waits: SIGUSR1 starts the loop (one request in
 * flight at a time: the unpaged list, a search, the next GraphQL page of 1,000 flags with their
 * configurations, the audit log, a write (a flag's description: an audit event, and a webhook
 * message to each endpoint the isolation scenario subscribes); `pauseMs` between requests); SIGUSR2 stops it after the request in
 * flight and prints one JSON line `{"records":[{route, status, ms, bytes}…]}` of what it sent since
 * SIGUSR1. SIGTERM ends it. The GraphQL cursor carries over from one loop to the next.
 */
import { pathToFileURL } from 'node:url';

/** The selection of a flag's configurations in the GraphQL documents. */
export const CONFIGS_SELECTION = 'configs { stage enabled rules { id conditions { field operator value } allocations { variantKey percentage } } }';
/** One page of flagConnection (docs/graphql.md) with the flags' configurations. */
export const PAGE_QUERY =
  `query Page($after: String) { flagConnection(first: 1000, after: $after) { nodes { name ${CONFIGS_SELECTION} } ` +
  'pageInfo { endCursor hasNextPage } totalCount } }';
/** The flag whose description the admin loop writes. */
export const WRITTEN_FLAG = 'bench-flag-7';
let writes = 0;
/** A search term matching 11 of the seeded flags by name (bench-flag-4242, bench-flag-42420 … 42429). */
export const SEARCH_TERM = 'flag-4242';

export interface Timed {
  /** HTTP status; 0 when no answer came (the error says why). */
  status: number;
  /** `200`, `404`…, or `200 GraphQL BAD_REQUEST` when a GraphQL answer carried errors, `no answer` when none came. */
  outcome: string;
  ms: number;
  bytes: number;
  headers?: Headers;
  /** The parsed body, when asked for (`parse`) or for GraphQL. */
  json?: unknown;
  error?: string;
}

/**
 * One management request with `key`, timed from sending it to the last byte of its answer.
 * GraphQL answers are parsed (their errors become the outcome); others only when `parse`.
 */
export async function timed(
  baseUrl: string,
  key: string,
  path: string,
  o: { graphql?: { query: string; variables?: Record<string, unknown> }; put?: unknown; parse?: boolean; timeoutMs?: number } = {},
): Promise<Timed> {
  const t0 = performance.now();
  const body = o.graphql ?? o.put;
  try {
    const r = await fetch(baseUrl + path, {
      method: o.graphql ? 'POST' : o.put !== undefined ? 'PUT' : 'GET',
      headers: { 'x-management-key': key, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      body: body !== undefined ? JSON.stringify(body) : undefined,
      signal: AbortSignal.timeout(o.timeoutMs ?? 60_000),
    });
    const buf = Buffer.from(await r.arrayBuffer());
    const ms = performance.now() - t0;
    const out: Timed = { status: r.status, outcome: String(r.status), ms, bytes: buf.length, headers: r.headers };
    if (o.graphql || o.parse) {
      try {
        out.json = JSON.parse(buf.toString('utf8'));
      } catch {
        out.outcome += ' (not JSON)';
      }
    }
    const errors = o.graphql ? (out.json as { errors?: Array<{ extensions?: { code?: string } }> } | undefined)?.errors : undefined;
    if (errors !== undefined && errors.length > 0) {
      out.outcome += ` GraphQL ${[...new Set(errors.map((e) => e.extensions?.code ?? 'error'))].join(',')}`;
    }
    return out;
  } catch (err) {
    const e = err as Error & { cause?: Error };
    return { status: 0, outcome: 'no answer', ms: performance.now() - t0, bytes: 0, error: e.cause?.message ?? e.message };
  }
}

/** flagConnection's `pageInfo.endCursor` when there is a next page, else null (start over). */
export function nextCursor(t: Timed): string | null {
  const info = (t.json as { data?: { flagConnection?: { pageInfo?: { endCursor?: string | null; hasNextPage?: boolean } } } } | undefined)
    ?.data?.flagConnection?.pageInfo;
  return info?.hasNextPage === true && typeof info.endCursor === 'string' ? info.endCursor : null;
}

export interface AdminRecord {
  route: string;
  outcome: string;
  ms: number;
  bytes: number;
}

/** The admin loop's requests, in order; `after` is the GraphQL cursor (null: first page). */
export const ADMIN_ROUTES: Array<{ route: string; send(baseUrl: string, key: string, after: string | null): Promise<Timed> }> = [
  { route: 'GET /api/flags (unpaged)', send: (b, k) => timed(b, k, '/api/flags') },
  { route: `GET /api/flags?q=${SEARCH_TERM}&limit=50`, send: (b, k) => timed(b, k, `/api/flags?q=${SEARCH_TERM}&limit=50`) },
  { route: 'GraphQL flagConnection(first: 1000) + configs', send: (b, k, after) => timed(b, k, '/api/graphql', { graphql: { query: PAGE_QUERY, variables: { after } } }) },
  { route: 'GET /api/audit', send: (b, k) => timed(b, k, '/api/audit') },
  { route: `PUT /api/flags/${WRITTEN_FLAG} (description)`, send: (b, k) => timed(b, k, `/api/flags/${WRITTEN_FLAG}`, { put: { description: `admin write ${++writes}` } }) },
];

/** The route of the admin loop that writes (one audit event per request). */
export const WRITE_ROUTE = ADMIN_ROUTES[ADMIN_ROUTES.length - 1].route;

interface Spec {
  baseUrl: string;
  key: string;
  pauseMs?: number;
  /** One round of the loop's requests before `ready`, printed as `warm {"records":[…]}`. */
  warm?: boolean;
}

async function main(spec: Spec): Promise<void> {
  let running = false;
  let records: AdminRecord[] = [];
  let after: string | null = null;
  let next = 0;
  let loop: Promise<void> = Promise.resolve();
  // Warm fetch (undici) up, so that the first slice does not pay for loading it on the generator's core.
  await timed(spec.baseUrl, spec.key, '/healthz');
  const send = async (): Promise<void> => {
    const r = ADMIN_ROUTES[next];
    next = (next + 1) % ADMIN_ROUTES.length;
    const t = await r.send(spec.baseUrl, spec.key, after);
    records.push({ route: r.route, outcome: t.outcome, ms: t.ms, bytes: t.bytes });
    if (r.route.startsWith('GraphQL')) after = nextCursor(t);
  };
  const run = async (): Promise<void> => {
    while (running) {
      await send();
      if (spec.pauseMs && running) await new Promise((res) => setTimeout(res, spec.pauseMs));
    }
  };
  if (spec.warm) {
    for (let i = 0; i < ADMIN_ROUTES.length; i++) await send();
    process.stdout.write(`warm ${JSON.stringify({ records })}\n`);
    records = [];
  }
  process.on('SIGUSR1', () => {
    if (running) return;
    running = true;
    loop = run();
  });
  process.on('SIGUSR2', () => {
    running = false;
    void loop.then(() => {
      process.stdout.write(`${JSON.stringify({ records })}\n`);
      records = [];
    });
  });
  process.on('SIGTERM', () => process.exit(0));
  process.stdout.write('ready\n');
  setInterval(() => {}, 1 << 30); // stay alive between slices
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  void main(JSON.parse(process.argv[2] ?? '{}') as Spec);
}
