/**
 * A flag's insights on its page (docs/insights.md, "Lifecycle"): its status and reasons, its
 * evaluations per environment over the last 14 days as a chart (hand-written SVG: one line per
 * environment over hourly buckets, missing buckets drawn as zero), and when each environment last
 * evaluated it.
 */
import { gql } from '../api';
import { Loading, useLoad, when } from '../components';

export interface Insights {
  status: string;
  reasons: string[];
  lastEvaluatedAt: { stage: string; at: string | null }[];
  series: { stage: string; start: string; count: number }[];
}

const HOUR = 3_600_000;
const DAYS = 14;
/** Colours for the environments' lines, in order (distinct, readable on white). */
const COLOURS = ['#1d4ed8', '#b45309', '#047857', '#7c3aed', '#be123c', '#0e7490', '#4d7c0f', '#9d174d'];

export const STATUS_TEXT: Record<string, string> = {
  new: 'New: never evaluated',
  active: 'Active',
  stale: 'Potentially stale',
  unused: 'Unused',
};
export const REASON_TEXT: Record<string, string> = {
  age: 'older than its purpose’s expected lifetime',
  unused: 'not evaluated in any environment recently',
  singleVariant: 'serves one variant to every evaluation',
};

export function StatusBadge({ status }: { status: string }) {
  return <span class={`badge status-${status}`}>{STATUS_TEXT[status] ?? status}</span>;
}

/** A round, short number for an axis: 1,234 → "1.2k". */
const short = (n: number) => (n >= 1e6 ? `${+(n / 1e6).toFixed(1)}M` : n >= 1e3 ? `${+(n / 1e3).toFixed(1)}k` : String(n));

/** The smallest "nice" number (1, 2 or 5 × 10^k) at or above `n`. */
function niceCeil(n: number): number {
  if (n <= 4) return 4;
  const p = 10 ** Math.floor(Math.log10(n));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= n) return m * p;
  return 10 * p;
}

export function EvaluationsChart({ environments, series, to }: { environments: string[]; series: Insights['series']; to: number }) {
  const end = Math.floor(to / HOUR) * HOUR + HOUR;
  const start = end - DAYS * 24 * HOUR;
  const n = DAYS * 24;
  const byStage = new Map(environments.map((e) => [e, new Array<number>(n).fill(0)]));
  for (const p of series) {
    const arr = byStage.get(p.stage);
    const i = Math.floor((Date.parse(p.start) - start) / HOUR);
    if (arr !== undefined && i >= 0 && i < n) arr[i] += p.count;
  }
  const max = niceCeil(Math.max(0, ...[...byStage.values()].flat()));
  const W = 640, H = 200, L = 44, R = 8, T = 10, B = 26;
  const x = (i: number) => L + (i / (n - 1)) * (W - L - R);
  const y = (v: number) => T + (1 - v / max) * (H - T - B);
  const ticks = [0, max / 4, max / 2, (3 * max) / 4, max];
  const days = Array.from({ length: DAYS / 2 + 1 }, (_, k) => k * 48);
  const total = [...byStage.values()].reduce((s, a) => s + a.reduce((x2, v) => x2 + v, 0), 0);
  return (
    <figure class="chart">
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-label={`Evaluations per hour over the last ${DAYS} days, per environment: ${total.toLocaleString()} in all`}>
        {ticks.map((v) => (
          <g key={v}>
            <line x1={L} x2={W - R} y1={y(v)} y2={y(v)} class="grid-line" />
            <text x={L - 6} y={y(v) + 4} class="axis" text-anchor="end">{short(v)}</text>
          </g>
        ))}
        {days.map((i) => (
          <text key={i} x={Math.min(x(Math.min(i, n - 1)), W - R - 20)} y={H - 8} class="axis" text-anchor={i === 0 ? 'start' : 'middle'}>
            {new Date(start + i * HOUR).toLocaleDateString(undefined, { month: 'short', day: 'numeric' })}
          </text>
        ))}
        {environments.map((env, k) => {
          const arr = byStage.get(env)!;
          const pts = arr.map((v, i) => `${x(i).toFixed(1)},${y(v).toFixed(1)}`).join(' ');
          return <polyline key={env} points={pts} fill="none" stroke={COLOURS[k % COLOURS.length]} stroke-width="1.6" stroke-linejoin="round" />;
        })}
      </svg>
      <figcaption>
        <ul class="legend">
          {environments.map((env, k) => (
            <li key={env}>
              <span class="swatch" style={{ background: COLOURS[k % COLOURS.length] }} aria-hidden="true" />
              {env}: {byStage.get(env)!.reduce((s, v) => s + v, 0).toLocaleString()}
            </li>
          ))}
        </ul>
      </figcaption>
    </figure>
  );
}

const QUERY = `query($n: String!, $f: DateTime, $t: DateTime) { flag(name: $n) { environments insights(from: $f, to: $t, bucket: "hour") {
  status reasons lastEvaluatedAt { stage at } series { stage start count } } } }`;

export function InsightsPanel({ name, purpose }: { name: string; purpose: string }) {
  const { data, error, loading } = useLoad(async () => {
    const now = Date.now();
    const to = Math.floor(now / HOUR) * HOUR + HOUR;
    const r = await gql<{ flag: { environments: string[]; insights: Insights } }>(QUERY, { n: name, f: new Date(to - DAYS * 24 * HOUR).toISOString(), t: new Date(to).toISOString() });
    return { ...r.flag, now };
  }, [name]);
  return (
    <section class="card insights" aria-labelledby="insights-h">
      <div class="title-row">
        <h2 id="insights-h">Usage</h2>
        {data && <StatusBadge status={data.insights.status} />}
      </div>
      {!data && <Loading error={error} loading={loading} />}
      {data && (
        <>
          <p class="hint">
            Purpose <strong>{purpose}</strong>
            {data.insights.reasons.length > 0 && <> · {data.insights.reasons.map((r) => REASON_TEXT[r] ?? r).join('; ')}</>}
          </p>
          <h3 class="sub">Evaluations per hour, last {DAYS} days</h3>
          {data.insights.series.some((p) => p.count > 0) ? (
            <EvaluationsChart environments={data.environments} series={data.insights.series} to={data.now} />
          ) : (
            <p class="hint">No evaluations in the last {DAYS} days.</p>
          )}
          <h3 class="sub">Last evaluated</h3>
          <dl class="last-seen">
            {data.insights.lastEvaluatedAt.map((l) => (
              <div key={l.stage}>
                <dt>{l.stage}</dt>
                <dd>{l.at ? when(l.at) : <span class="muted">never</span>}</dd>
              </div>
            ))}
          </dl>
        </>
      )}
    </section>
  );
}
