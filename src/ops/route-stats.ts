/**
 * Request counts and durations by route template and method, in plain numbers: an observation is
 * a few array increments. (prom-client's own `labels(...).inc()` / `.observe()` hash the label set
 * on every call, about 6 µs per request here; that is a tenth of a whole REST evaluation.) Every
 * front thread keeps its own table (no sharing on the hot path); /metrics adds them up when scraped
 * (metrics.ts, docs/threads.md).
 */

/** Seconds; evaluation answers sit in the first buckets, management writes further up. */
export const DURATION_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

/** The pre-bound children of one route template and method. */
export interface RouteObserver {
  observe(status: number, seconds: number): void;
}

/** One route's figures as they cross threads: [status, requests] pairs, one cell per bucket plus +Inf. */
export interface RouteStatsSnapshot {
  template: string;
  method: string;
  statuses: [number, number][];
  buckets: number[];
  sum: number;
  count: number;
}

class RouteStats implements RouteObserver {
  /** Requests by status code (index). */
  readonly byStatus: number[] = [];
  /** Not cumulative here; one cell per bucket plus +Inf. */
  readonly buckets = new Float64Array(DURATION_BUCKETS.length + 1);
  sum = 0;
  count = 0;

  constructor(
    readonly template: string,
    readonly method: string,
  ) {}

  observe(status: number, seconds: number): void {
    this.byStatus[status] = (this.byStatus[status] ?? 0) + 1;
    let i = 0;
    while (i < DURATION_BUCKETS.length && seconds > DURATION_BUCKETS[i]) i++;
    this.buckets[i]++;
    this.sum += seconds;
    this.count++;
  }

  snapshot(): RouteStatsSnapshot {
    const statuses: [number, number][] = [];
    this.byStatus.forEach((n, status) => statuses.push([status, n]));
    return { template: this.template, method: this.method, statuses, buckets: [...this.buckets], sum: this.sum, count: this.count };
  }
}

/** One thread's routes (an `ExchangeObserver`, exchange.ts). */
export class RouteStatsTable {
  private readonly byRoute = new Map<string, RouteStats>();

  /** The observer for one route template and method; built once per route, not per request. */
  route(template: string, method: string): RouteObserver {
    const id = `${method} ${template}`;
    let o = this.byRoute.get(id);
    if (o === undefined) {
      o = new RouteStats(template, method);
      this.byRoute.set(id, o);
    }
    return o;
  }

  snapshot(): RouteStatsSnapshot[] {
    return [...this.byRoute.values()].map((r) => r.snapshot());
  }
}

/** Several threads' figures as one node's: summed by route template and method. */
export function addRouteStats(tables: RouteStatsSnapshot[][]): RouteStatsSnapshot[] {
  const out = new Map<string, { s: RouteStatsSnapshot; byStatus: Map<number, number> }>();
  for (const table of tables) {
    for (const r of table) {
      const id = `${r.method} ${r.template}`;
      let acc = out.get(id);
      if (acc === undefined) {
        acc = { s: { template: r.template, method: r.method, statuses: [], buckets: new Array<number>(DURATION_BUCKETS.length + 1).fill(0), sum: 0, count: 0 }, byStatus: new Map() };
        out.set(id, acc);
      }
      for (const [status, n] of r.statuses) acc.byStatus.set(status, (acc.byStatus.get(status) ?? 0) + n);
      for (let i = 0; i < r.buckets.length; i++) acc.s.buckets[i] += r.buckets[i];
      acc.s.sum += r.sum;
      acc.s.count += r.count;
    }
  }
  return [...out.values()].map(({ s, byStatus }) => ({ ...s, statuses: [...byStatus].sort((a, b) => a[0] - b[0]) }));
}
