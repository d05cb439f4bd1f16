/**
 * The Cleanup page (docs/insights.md, "Lifecycle"): flags that are stale or unused, with their
 * reasons, sortable by their last evaluation: the candidates for removal from the code and from
 * Vexil.
 */
import { useState } from 'preact/hooks';
import { gql } from '../api';
import { Loading, useLoad, when } from '../components';
import { flagHref } from '../router';
import { REASON_TEXT, StatusBadge, type Insights } from './insights';

/** The first flags of each status shown; the page says when there are more. */
const FIRST = 200;

interface Row {
  name: string;
  project: string;
  purpose: string;
  status: string;
  reasons: string[];
  last: string | null;
}

interface Page {
  totalCount: number;
  nodes: { name: string; project: string; purpose: string; insights: Pick<Insights, 'status' | 'reasons' | 'lastEvaluatedAt'> | null }[];
}

// A narrow range: the page needs the statuses and last evaluations, not the counts.
const QUERY = `query($f: Int!, $from: DateTime, $to: DateTime) {
  stale: flagConnection(first: $f, status: "stale") { totalCount nodes { ...row } }
  unused: flagConnection(first: $f, status: "unused") { totalCount nodes { ...row } }
}
fragment row on Flag { name project purpose insights(from: $from, to: $to, bucket: "day") { status reasons lastEvaluatedAt { stage at } } }`;

function rowsOf(p: Page, status: string): Row[] {
  return p.nodes.map((f) => {
    const ats = (f.insights?.lastEvaluatedAt ?? []).map((l) => l.at).filter((a): a is string => a !== null).sort();
    return { name: f.name, project: f.project, purpose: f.purpose, status: f.insights?.status ?? status, reasons: f.insights?.reasons ?? [], last: ats.length > 0 ? ats[ats.length - 1] : null };
  });
}

export function CleanupPage() {
  const [oldestFirst, setOldestFirst] = useState(true);
  const { data, error, loading, reload } = useLoad(async () => {
    const to = Date.now();
    const r = await gql<{ stale: Page; unused: Page }>(QUERY, { f: FIRST, from: new Date(to - 86_400_000).toISOString(), to: new Date(to).toISOString() });
    return { rows: [...rowsOf(r.stale, 'stale'), ...rowsOf(r.unused, 'unused')], more: r.stale.totalCount > FIRST || r.unused.totalCount > FIRST, stale: r.stale.totalCount, unused: r.unused.totalCount };
  }, []);
  const sorted = data ? [...data.rows].sort((a, b) => {
    // Never evaluated sorts as the oldest.
    const c = (a.last ?? '').localeCompare(b.last ?? '') || a.name.localeCompare(b.name);
    return oldestFirst ? c : -c;
  }) : [];
  return (
    <main id="main">
      <div class="title-row">
        <h1 tabIndex={-1}>Cleanup</h1>
        <div class="spacer" />
        <button type="button" onClick={reload}>Refresh</button>
      </div>
      <p class="hint intro">
        Flags that are potentially stale (older than their purpose’s expected lifetime, or serving one variant to every evaluation) or unused (not evaluated
        recently). Remove them from the code, then archive or delete them here. Lifetimes are organization settings.
      </p>
      {!data && <Loading error={error} loading={loading} />}
      {data && (
        <>
          <p class="count">
            {data.stale} stale, {data.unused} unused{data.more && ` (the first ${FIRST} of each are shown)`}
          </p>
          {sorted.length === 0 ? (
            <p>No stale or unused flags.</p>
          ) : (
            <div class="table-wrap">
            <table class="cleanup">
              <caption class="sr-only">Stale and unused flags</caption>
              <thead>
              <tr>
                <th scope="col">Flag</th>
                <th scope="col">Application</th>
                <th scope="col">Purpose</th>
                <th scope="col">Status</th>
                <th scope="col">Reasons</th>
                <th scope="col" aria-sort={oldestFirst ? 'ascending' : 'descending'}>
                  <button type="button" class="sort" onClick={() => setOldestFirst(!oldestFirst)}>
                    Last evaluated <span aria-hidden="true">{oldestFirst ? '▲' : '▼'}</span>
                    <span class="sr-only">{oldestFirst ? ' (oldest first; select for newest first)' : ' (newest first; select for oldest first)'}</span>
                  </button>
                </th>
              </tr>
              </thead>
              <tbody>
              {sorted.map((r) => (
                <tr key={r.name}>
                  <th scope="row"><a href={flagHref(r.name)}>{r.name}</a></th>
                  <td>{r.project}</td>
                  <td>{r.purpose}</td>
                  <td><StatusBadge status={r.status} /></td>
                  <td>{r.reasons.map((x) => REASON_TEXT[x] ?? x).join('; ')}</td>
                  <td>{r.last ? when(r.last) : <span class="muted">never</span>}</td>
                </tr>
              ))}
              </tbody>
            </table>
            </div>
          )}
        </>
      )}
    </main>
  );
}
