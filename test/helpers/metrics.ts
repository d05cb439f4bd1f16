/** Scrapes a node's `/metrics` and reads it with a real Prometheus text-format parser. */
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { REASON_CODES } from '../../src/domain/types.js';
import { createFlag, createKey, request, upsertConfig, type TestNode } from './node.js';

interface Family {
  name: string;
  type: string;
  metrics: { value?: string; labels?: Record<string, string>; count?: string; sum?: string; buckets?: Record<string, string> }[];
}

export class Scrape {
  readonly families = new Map<string, Family>();

  constructor(readonly text: string) {
    for (const f of parsePrometheusTextFormat(text) as Family[]) this.families.set(f.name, f);
  }

  private find(name: string, labels: Record<string, string>) {
    const f = this.families.get(name);
    return f?.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v));
  }

  /** A counter's or gauge's value for the sample with these labels (0 when absent). */
  value(name: string, labels: Record<string, string> = {}): number {
    return Number(this.find(name, labels)?.value ?? 0);
  }

  /**
   * A histogram's observation count for these labels (0 when absent). The parser folds a labelled
   * histogram's series into one, so its `<name>_count` samples are read as a counter family.
   */
  count(name: string, labels: Record<string, string> = {}): number {
    const lines = this.text.split('\n').filter((l) => l.startsWith(`${name}_count{`) || l.startsWith(`${name}_count `));
    const [family] = parsePrometheusTextFormat([`# TYPE ${name}_count counter`, ...lines, ''].join('\n')) as Family[];
    const m = family?.metrics.find((s) => Object.entries(labels).every(([k, v]) => s.labels?.[k] === v));
    return Number(m?.value ?? 0);
  }

  /** Every label value of every sample. */
  labelValues(): string[] {
    return [...this.families.values()].flatMap((f) => f.metrics.flatMap((m) => Object.values(m.labels ?? {})));
  }
}

export async function scrape(n: Pick<TestNode, 'url'>, token?: string): Promise<Scrape> {
  const r = await request(n.url, 'GET', '/metrics', token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } });
  if (r.status !== 200) throw new Error(`/metrics answered ${r.status}: ${r.text.slice(0, 200)}`);
  return new Scrape(r.text);
}

// ---- shared by the metrics suites ----

export const EVALS = 'vexil_evaluations_total';
export const REQS = 'vexil_http_requests_total';
export const DURATION = 'vexil_http_request_duration_seconds';
export const REASONS: readonly string[] = REASON_CODES;

/** Two flags: `checkout-flag` answers reason `default`, `dark-flag` reason `config_disabled`. */
export async function seedReasonFlags(t: { equal(a: unknown, b: unknown): unknown }, n: TestNode): Promise<string> {
  t.equal((await createFlag(n, 'checkout-flag')).status, 201);
  t.equal((await upsertConfig(n, 'checkout-flag', {})).status, 200);
  t.equal((await createFlag(n, 'dark-flag')).status, 201);
  t.equal((await upsertConfig(n, 'dark-flag', { enabled: false })).status, 200);
  return createKey(n, { permissions: ['CanEvaluate'], application: 'default' });
}

export const delta = (a: Scrape, b: Scrape, name: string, labels: Record<string, string>) => b.value(name, labels) - a.value(name, labels);

export function reasonDeltas(a: Scrape, b: Scrape): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of REASONS) {
    const d = delta(a, b, EVALS, { reason: r });
    if (d !== 0) out[r] = d;
  }
  return out;
}

export const TWO_EVALS = `{ a: evaluate(key: "checkout-flag", userId: "user-gql-1", stage: "production") { key reason { code } }
  b: evaluate(key: "dark-flag", userId: "user-gql-2", stage: "production") { key } }`;

