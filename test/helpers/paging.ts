/**
 * Helpers of the flag-list paging suites (test/node/rest/flag-paging{,-postgres}.test.ts): a seeded
 * set of varied flags created over REST, the list every filter should give computed from what the
 * writes answered (not from the list under test), and readers that walk every page over REST
 * (following `Link`) and over GraphQL (`flagConnection`).
 */
import { request, type Res, type TestNode } from './node.js';
import { boolVariants, must, postFlag, putFlag, type TapTest } from './flags.js';

export interface SeenFlag {
  name: string;
  project: string;
  type: string;
  description: string | null;
  tags: string[];
  isArchived: boolean;
  [k: string]: unknown;
}

/** REST filter parameters as a client sends them (text). */
export interface ListParams {
  application?: string;
  type?: string;
  archived?: 'true' | 'false';
  q?: string;
}

export const APPLICATIONS = ['web', 'billing', 'Mobile'];
export const TYPES = ['boolean', 'string', 'number', 'json'] as const;
export const DESCRIPTIONS = [null, 'Checkout flow', 'New BILLING page', 'Grüße aus Köln', 'dark-mode rollout', ''];
export const TAGS = ['Team-A', 'beta', 'ops', 'checkout'];
/** Search texts that hit names, descriptions, tags, across case, and nothing at all. */
export const SEARCHES = ['a', 'B', 'checkout', 'CHECK', 'team-a', 'grüße', 'page', '-', '.', '_', '1', 'x9', 'rollout', 'zzzz-none'];

const VARIANTS: Record<(typeof TYPES)[number], unknown[]> = {
  boolean: boolVariants,
  string: [{ key: 's', value: 'x', valueType: 'string' }],
  number: [{ key: 'n', value: 1.5, valueType: 'number' }],
  json: [{ key: 'j', value: { a: [1] }, valueType: 'json' }],
};

/** A small deterministic PRNG (mulberry32), so every run seeds the same flags. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const FIRST = 'ABCXYZabcxyz0189';
const REST = 'ABab19_.-';

/**
 * Creates `count` flags in the key's organization (which must have APPLICATIONS), with names
 * that exercise byte order (upper and lower case, digits, `_`, `.`, `-`), every type, varied
 * descriptions and tags, and about a fifth archived. Returns them as the writes answered them.
 */
export async function seedFlags(t: TapTest, n: TestNode, key: string, count: number, seed = 42): Promise<SeenFlag[]> {
  const rnd = prng(seed);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(rnd() * list.length)];
  const names = new Set<string>();
  while (names.size < count) {
    let s = pick([...FIRST]);
    const len = Math.floor(rnd() * 6);
    for (let i = 0; i < len; i++) s += pick([...REST]);
    names.add(s);
  }
  const out: SeenFlag[] = [];
  for (const name of names) {
    const type = pick(TYPES);
    const app = pick(APPLICATIONS);
    const tags = TAGS.filter(() => rnd() < 0.3);
    const description = pick(DESCRIPTIONS);
    // The project spelled in another case: the flag keeps the organization's spelling.
    const r = must(t, await postFlag(n, key, name, { project: rnd() < 0.3 ? app.toUpperCase() : app, type, variants: VARIANTS[type], description, tags }), 201, `create ${name}`);
    let f = r.body as SeenFlag;
    if (rnd() < 0.2) f = must(t, await putFlag(n, key, name, { isArchived: true }), 200, `archive ${name}`).body as SeenFlag;
    out.push(f);
  }
  return out;
}

const byName = (a: { name: string }, b: { name: string }) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

/** The flags a list with `p` must answer, in order, for a key scoped to `scope` (null: org-wide). */
export function expected(flags: readonly SeenFlag[], p: ListParams, scope: string | null = null): SeenFlag[] {
  const lower = (s: string | undefined) => (s === undefined ? undefined : s.toLowerCase());
  const app = lower(p.application);
  const q = p.q === undefined || p.q === '' ? undefined : p.q.toLowerCase();
  return flags
    .filter(
      (f) =>
        (scope === null || f.project.toLowerCase() === scope.toLowerCase()) &&
        (app === undefined || f.project.toLowerCase() === app) &&
        (p.type === undefined || f.type === p.type) &&
        (p.archived === undefined || f.isArchived === (p.archived === 'true')) &&
        (q === undefined || [f.name, f.description ?? '', ...f.tags].some((s) => s.toLowerCase().includes(q))),
    )
    .sort(byName);
}

export const query = (p: Record<string, string | number | undefined>): string => {
  const s = new URLSearchParams(Object.entries(p).filter(([, v]) => v !== undefined).map(([k, v]) => [k, String(v)])).toString();
  return s === '' ? '' : `?${s}`;
};

const LINK_RE = /^<([^>]+)>; rel="next"$/;

export interface RestWalk {
  names: string[];
  pages: Res[];
  /** Every problem found, as text (empty: none). */
  problems: string[];
}

/**
 * Walks every page of `GET /api/flags` with `limit` from the first, following `Link`, and
 * checks each page's invariants against `total` (the expected count).
 */
export async function walkRest(n: TestNode, key: string, p: ListParams, limit: number, total: number): Promise<RestWalk> {
  const problems: string[] = [];
  const names: string[] = [];
  const pages: Res[] = [];
  let url: string | null = n.url + '/api/flags' + query({ ...p, limit });
  while (url !== null && pages.length <= total + 1) {
    const r = await request(url, 'GET', '', { key });
    pages.push(r);
    if (r.status !== 200) {
      problems.push(`${url}: HTTP ${r.status} ${r.text.slice(0, 200)}`);
      break;
    }
    if (r.headers.get('x-total-count') !== String(total)) problems.push(`${url}: X-Total-Count ${r.headers.get('x-total-count')}, want ${total}`);
    names.push(...(r.body as SeenFlag[]).map((f) => f.name));
    const link = r.headers.get('link');
    if (link === null) {
      url = null;
      continue;
    }
    const m = LINK_RE.exec(link);
    if (m === null) {
      problems.push(`${url}: malformed Link ${link}`);
      break;
    }
    if (!m[1].startsWith(n.url + '/api/flags?')) problems.push(`${url}: Link is not an absolute URL of this node: ${m[1]}`);
    if ((r.body as unknown[]).length !== limit) problems.push(`${url}: a page with a next page holds ${(r.body as unknown[]).length}, want ${limit}`);
    const next = new URL(m[1]).searchParams;
    for (const [k, v] of Object.entries({ ...p, limit: String(limit) })) {
      if (next.get(k) !== v) problems.push(`${url}: Link lost ${k}=${v}`);
    }
    if (next.get('after') !== names[names.length - 1]) problems.push(`${url}: Link after=${next.get('after')}, want the page's last name`);
    url = m[1];
  }
  return { names, pages, problems };
}

/** GraphQL arguments for REST parameters `p`. */
export function gqlArgs(p: ListParams): Record<string, unknown> {
  const a: Record<string, unknown> = {};
  if (p.application !== undefined) a.application = p.application;
  if (p.type !== undefined) a.type = p.type;
  if (p.archived !== undefined) a.archived = p.archived === 'true';
  if (p.q !== undefined) a.search = p.q;
  return a;
}

const CONNECTION = /* GraphQL */ `
  query Page($first: Int!, $after: String, $search: String, $application: String, $type: String, $archived: Boolean) {
    flagConnection(first: $first, after: $after, search: $search, application: $application, type: $type, archived: $archived) {
      nodes { name }
      pageInfo { endCursor hasNextPage }
      totalCount
    }
    flags(first: $first, after: $after, search: $search, application: $application, type: $type, archived: $archived) { name }
  }
`;

/** Walks every page of `flagConnection` (and `flags` with the same arguments beside it). */
export async function walkGraphql(n: TestNode, key: string, p: ListParams, first: number, total: number): Promise<{ names: string[]; problems: string[] }> {
  const problems: string[] = [];
  const names: string[] = [];
  let after: string | null = null;
  for (let pages = 0; pages <= total + 1; pages++) {
    const r = await n.req('POST', '/api/graphql', { key, body: { query: CONNECTION, variables: { ...gqlArgs(p), first, after } } });
    const c = r.body?.data?.flagConnection;
    if (r.status !== 200 || r.body.errors !== undefined || c == null) {
      problems.push(`graphql: ${r.status} ${r.text.slice(0, 300)}`);
      break;
    }
    const page = c.nodes.map((x: { name: string }) => x.name);
    if (JSON.stringify(r.body.data.flags.map((x: { name: string }) => x.name)) !== JSON.stringify(page)) problems.push('graphql: flags(...) differs from flagConnection.nodes');
    if (c.totalCount !== total) problems.push(`graphql: totalCount ${c.totalCount}, want ${total}`);
    if (c.pageInfo.endCursor !== (page.length === 0 ? null : page[page.length - 1])) problems.push(`graphql: endCursor ${c.pageInfo.endCursor}`);
    names.push(...page);
    if (!c.pageInfo.hasNextPage) break;
    if (page.length !== first) problems.push(`graphql: a page with a next page holds ${page.length}`);
    after = c.pageInfo.endCursor;
  }
  return { names, problems };
}
