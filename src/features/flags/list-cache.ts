/**
 * The last large flag list this actor serialised, kept as bytes with the organization version it
 * was read at. An admin script that fetches every flag (37 MB at 100,000 flags) again and again
 * then costs one copy per fetch instead of walking and serialising 100,000 flags each time, which
 * took the management actor about 0.4 s of CPU and its garbage collection helpers more
 * (docs/benchmarks.md, "Large organizations"). Any write gives the organization a new version, so
 * an entry never answers for data it was not made from; the list after a write is assembled from
 * each flag's kept JSON instead (list-body.ts).
 *
 * One entry (the memory of one answer, at most VEXIL_MAX_ANSWER_BYTES), and only answers over
 * `minBytes`: a page is cheap to make again. A gzip-coded list (list-route.ts) is kept under its
 * own key, as the bytes sent (about 2.5 MB at 100,000 flags).
 */
export interface CachedList {
  headers: Record<string, string>;
  body: Buffer;
}

export class LargeListCache {
  private key: string | null = null;
  private entry: CachedList | null = null;

  constructor(private readonly minBytes: number) {}

  /** The list cached under `key`, if it is the last one kept. */
  get(key: string): CachedList | null {
    return key === this.key ? this.entry : null;
  }

  /** Keeps `entry` under `key` when it is large enough to be worth it. */
  offer(key: string, entry: CachedList): void {
    if (entry.body.length < this.minBytes) return;
    this.key = key;
    this.entry = entry;
  }
}

/**
 * What a list answer depends on: the organization and its version (its data), the key's
 * application scope (what it may see), the query string (filters, page), the Host its `Link`
 * is built on and its content coding (`gzip` for a gzip body made by the route, '' otherwise).
 */
export const listCacheKey = (orgId: string, version: number, application: string | null, query: string, host: string, coding: string): string =>
  `${orgId}\n${version}\n${application ?? ''}\n${query}\n${host}\n${coding}`;
