/**
 * Prometheus metrics for one node (README, "Metrics"), on a registry of its own so several nodes
 * can share a process (tests). Label values are only route templates, methods, status codes and
 * reason codes: never a flag name, user id or key value.
 *
 * Hot-path cost: an HTTP observation is a few increments on its route's pre-built observer (no
 * label set built, no string, no allocation); an evaluation is one `Atomics.add` (eval-counts.ts).
 * Everything is turned into prom-client samples only when scraped.
 */
import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import { REASON_CODES } from '../domain/types.js';
import { REJECT_REASONS } from '../cluster/wire.js';
import { EvalCounts } from './eval-counts.js';
import { addRouteStats, DURATION_BUCKETS, RouteStatsTable, type RouteObserver, type RouteStatsSnapshot } from './route-stats.js';

export type { RouteObserver } from './route-stats.js';


export interface GaugeSources {
  queueDepth(): number;
  clusterNodes(): number;
  busConnected(): boolean;
  snapshotAgeSeconds(): number;
  /** Bus messages rejected since start, by reason (src/cluster/wire.ts). */
  busRejected(): ReadonlyMap<string, number>;
  /** Statements the node ran to read snapshot data since start, by kind (registry.ts `SnapshotReadKind`). */
  snapshotReads(): ReadonlyMap<string, number>;
  /** Flags by lifecycle status per organization (docs/insights.md, "Lifecycle"). */
  flagStatuses?(): readonly { orgName: string; counts: Record<string, number> }[];
  /** Webhook deliveries by result and the outbox's pending messages (docs/webhooks.md), asked for at each scrape. */
  webhooks?(): Promise<WebhookStats>;
}

export interface WebhookStats {
  deliveries: [string, number][];
  pending: number;
  oldestPendingSeconds: number;
}

/** `vexil_webhook_deliveries_total{result}` labels. */
const WEBHOOK_RESULTS = ['success', 'retry', 'gave_up', 'disabled'];

interface ExportedValue {
  metricName: string;
  labels: Record<string, string | number>;
  value: number;
}

/** The duration histogram of every route, as a prom-client collector (Registry.registerMetric). */
class RouteHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly routes: () => Iterable<RouteStatsSnapshot>,
  ) {}

  async get(): Promise<{ name: string; help: string; type: string; aggregator: string; values: ExportedValue[] }> {
    const values: ExportedValue[] = [];
    for (const r of this.routes()) {
      const labels = { route: r.template, method: r.method };
      let cumulative = 0;
      for (let i = 0; i <= DURATION_BUCKETS.length; i++) {
        cumulative += r.buckets[i];
        const le = i < DURATION_BUCKETS.length ? DURATION_BUCKETS[i] : '+Inf';
        values.push({ metricName: `${this.name}_bucket`, labels: { ...labels, le }, value: cumulative });
      }
      values.push({ metricName: `${this.name}_sum`, labels, value: r.sum });
      values.push({ metricName: `${this.name}_count`, labels, value: r.count });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  reset(): void {}
}

export class NodeMetrics {
  readonly registry = new Registry();
  readonly evalCounts: EvalCounts;
  private readonly evaluations: Counter<'reason'>;
  /** This thread's requests; the other front threads' are asked for at each scrape (`threads`). */
  private readonly routes = new RouteStatsTable();
  /** Every front thread's requests, added up at the last scrape. */
  private scraped: RouteStatsSnapshot[] = [];
  private threads: (() => Promise<RouteStatsSnapshot[][]>) | null = null;
  private readonly drainTimer: NodeJS.Timeout;
  private readonly sources: GaugeSources;
  /** The webhook figures read at the last scrape. */
  private webhookStats: WebhookStats = { deliveries: [], pending: 0, oldestPendingSeconds: 0 };

  constructor(sources: GaugeSources, evalCounts = new EvalCounts()) {
    this.evalCounts = evalCounts;
    this.sources = sources;
    const registers = [this.registry];
    const registry = this.registry;
    collectDefaultMetrics({ register: this.registry });
    const drain = () => this.evalCounts.drain((reason, n) => this.evaluations.labels(reason).inc(n));
    this.evaluations = new Counter({
      name: 'vexil_evaluations_total',
      help: 'Flag evaluations served (REST, GraphQL, OFREP), by reason code (docs/evaluation.md)',
      labelNames: ['reason'],
      registers,
      collect: drain,
    });
    for (const r of REASON_CODES) this.evaluations.labels(r).inc(0);
    // Keeps each shared 32-bit cell far from overflowing between scrapes.
    this.drainTimer = setInterval(drain, 10_000);
    this.drainTimer.unref();
    // What the request counter has been given so far, by route and status (its totals only grow).
    const flushed = new Map<string, number>();
    const requests: Counter<'route' | 'method' | 'status'> = new Counter({
      name: 'vexil_http_requests_total',
      help: 'HTTP requests answered, by route template, method and status',
      labelNames: ['route', 'method', 'status'],
      registers,
      collect: () => {
        for (const r of this.scraped) {
          for (const [status, n] of r.statuses) {
            const id = `${r.method} ${r.template} ${status}`;
            const d = n - (flushed.get(id) ?? 0);
            if (d === 0) continue;
            requests.labels(r.template, r.method, String(status)).inc(d);
            flushed.set(id, n);
          }
        }
      },
    });
    this.registry.registerMetric(
      new RouteHistogram(
        'vexil_http_request_duration_seconds',
        'Time from a request arriving to its answer being written, by route template and method',
        () => this.scraped,
      ) as unknown as Parameters<Registry['registerMetric']>[0],
    );
    const gauge = (name: string, help: string, read: () => number) =>
      new Gauge({
        name,
        help,
        registers,
        collect() {
          this.set(read());
        },
      });
    const rejectedFlushed = new Map<string, number>();
    const rejected: Counter<'reason'> = new Counter({
      name: 'vexil_bus_rejected_total',
      help: 'Cluster bus messages dropped unread: too large, malformed, unsigned, wrongly signed, expired or replayed',
      labelNames: ['reason'],
      registers,
      collect() {
        for (const [reason, n] of sources.busRejected()) {
          const d = n - (rejectedFlushed.get(reason) ?? 0);
          rejected.labels(reason).inc(d);
          rejectedFlushed.set(reason, n);
        }
      },
    });
    for (const r of REJECT_REASONS) rejected.labels(r).inc(0);
    const readsFlushed = new Map<string, number>();
    new Counter({
      name: 'vexil_snapshot_reads_total',
      help: 'Statements this node ran to read flag data for its snapshots: "changes" (one per catch-up), "organization" (four per whole load)',
      labelNames: ['kind'],
      registers,
      collect() {
        for (const [kind, n] of sources.snapshotReads()) {
          this.labels(kind).inc(n - (readsFlushed.get(kind) ?? 0));
          readsFlushed.set(kind, n);
        }
      },
    });
    const flagStatuses = sources.flagStatuses;
    if (flagStatuses !== undefined) {
      new Gauge({
        name: 'vexil_flags',
        help: 'Flags by lifecycle status (new, unused, stale, active) per organization, as this node computes them',
        labelNames: ['organization', 'status'],
        registers,
        collect() {
          this.reset();
          for (const o of flagStatuses()) for (const [status, n] of Object.entries(o.counts)) this.labels(o.orgName, status).set(n);
        },
      });
    }
    const webhooksFlushed = new Map<string, number>();
    new Counter({
      name: 'vexil_webhook_deliveries_total',
      help: 'Webhook delivery attempts this node made, by result: success (2xx), retry (failed, tried again), gave_up (failed past the retry period), disabled (410 Gone)',
      labelNames: ['result'],
      registers,
      collect: () => {
        const c = registry.getSingleMetric('vexil_webhook_deliveries_total') as Counter<'result'>;
        for (const r of WEBHOOK_RESULTS) c.labels(r).inc(0);
        for (const [result, n] of this.webhookStats.deliveries) {
          const d = n - (webhooksFlushed.get(result) ?? 0);
          if (d > 0) c.labels(result).inc(d);
          webhooksFlushed.set(result, n);
        }
      },
    });
    gauge('vexil_webhook_pending', 'Webhook messages waiting to be delivered (enabled endpoints, every node)', () => this.webhookStats.pending);
    gauge('vexil_webhook_oldest_pending_seconds', 'Age of the oldest webhook message not yet delivered (enabled endpoints, every node); 0 when none', () => this.webhookStats.oldestPendingSeconds);
    gauge('vexil_eval_pool_queue_depth', 'Evaluations handed to the worker pool and not yet answered', sources.queueDepth);
    gauge('vexil_cluster_nodes', 'Nodes this node sees on the cluster bus, itself included', sources.clusterNodes);
    gauge('vexil_bus_connected', '1 while the cluster bus (NATS) is connected or local, else 0', () => (sources.busConnected() ? 1 : 0));
    gauge('vexil_snapshot_age_seconds', 'Seconds since this node last confirmed its snapshots against the database', sources.snapshotAgeSeconds);
  }

  /** The observer for one route template and method; build it once per route, not per request. */
  route(template: string, method: string): RouteObserver {
    return this.routes.route(template, method);
  }

  /** The other front threads' request figures, asked for at each scrape: the node reports as one. */
  addThreads(read: () => Promise<RouteStatsSnapshot[][]>): void {
    this.threads = read;
  }

  /** The exposition text, in Prometheus's text format. */
  async text(): Promise<string> {
    const own = this.routes.snapshot();
    this.scraped = this.threads === null ? own : addRouteStats([own, ...(await this.threads())]);
    if (this.sources.webhooks !== undefined) {
      try {
        this.webhookStats = await this.sources.webhooks();
      } catch {
        // The database is unreachable: the last figures stand (vexil_snapshot_age_seconds tells).
      }
    }
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  close(): void {
    clearInterval(this.drainTimer);
    this.registry.clear();
  }
}
