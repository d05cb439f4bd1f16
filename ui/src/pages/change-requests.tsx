/**
 * Change requests (docs/change-requests.md): the list, and one request with its diff per target,
 * its history of revisions and reviews, Approve / Reject naming the hash reviewed, Apply, Close,
 * and a Preview with its transitions per flag and environment.
 */
import { useState } from 'preact/hooks';
import { gql } from '../api';
import { DataTable, Field, Loading, messageOf, Status, useLoad, when } from '../components';
import { BASE } from '../router';
import { useSession } from '../session';

interface Review { reviewer: { keyName: string | null }; decision: string; hash: string; revision: number; comment: string | null; at: string; voided: boolean }
interface DiffEntry { target: { type: string; flag?: string; stage?: string; clientId?: string | null; segment?: string }; before: unknown; after: unknown }
interface ChangeRequest {
  id: string;
  title: string;
  description: string | null;
  state: string;
  approved: boolean;
  revision: number;
  hash: string;
  author: { keyName: string | null };
  diff: DiffEntry[];
  environments: string[];
  requiredApprovals: { stage: string; required: number; approvals: number }[];
  approvals: Review[];
  rejections: Review[];
  createdAt: string;
  updatedAt: string;
  appliedAt: string | null;
  error: string | null;
  history?: { revisions: { revision: number; hash: string; author: { keyName: string | null }; createdAt: string }[]; reviews: Review[] };
}

const REVIEW = 'reviewer { keyName } decision hash revision comment at voided';
const LIST_FIELDS = 'id title state approved revision author { keyName } environments updatedAt';
const FIELDS = `id title description state approved revision hash author { keyName } diff environments requiredApprovals { stage required approvals }
  approvals { ${REVIEW} } rejections { ${REVIEW} } createdAt updatedAt appliedAt error
  history { revisions { revision hash author { keyName } createdAt } reviews { ${REVIEW} } }`;

const stateLabel = (r: { state: string; approved: boolean }) => (r.state === 'open' ? (r.approved ? 'open, approved' : 'open, awaiting review') : r.state);

export function describeTarget(t: DiffEntry['target']): string {
  if (t.type === 'config') return `${t.flag} · ${t.stage}${t.clientId ? ` · ${t.clientId}` : ''}`;
  if (t.type === 'flag') return `flag ${t.flag}`;
  if (t.type === 'segment') return `segment ${t.segment}`;
  return 'kill switch';
}

const shortHash = (h: string) => h.slice(0, 12);

export function ChangeRequestsPage({ id }: { id?: string }) {
  return id ? <ChangeRequestDetail id={id} /> : <ChangeRequestList />;
}

function ChangeRequestList() {
  const [state, setState] = useState('');
  const list = useLoad(
    () => gql<{ changeRequestConnection: { nodes: ChangeRequest[]; totalCount: number } }>(
      `query($s: String) { changeRequestConnection(state: $s, first: 200) { nodes { ${LIST_FIELDS} } totalCount } }`,
      { s: state || null },
    ),
    [state],
  );
  const rows = list.data?.changeRequestConnection.nodes ?? [];
  return (
    <main id="main">
      <h1 tabIndex={-1}>Change requests</h1>
      <p class="hint">Changes to protected environments are proposed here, reviewed against their exact content (the hash), and applied all at once.</p>
      <div class="row">
        <Field label="State">
          {(p) => (
            <select {...p} value={state} onChange={(e) => setState(e.currentTarget.value)}>
              <option value="">Any</option>
              {['open', 'rejected', 'scheduled', 'applied', 'closed', 'failed'].map((s) => <option key={s}>{s}</option>)}
            </select>
          )}
        </Field>
      </div>
      <Loading error={list.error} loading={list.loading} />
      {list.data && (
        <DataTable caption="Change requests" columns={['Title', 'State', 'Environments', 'Revision', 'Author', 'Updated']}>
          {rows.length === 0 && (
            <tr>
              <td colSpan={6}>No change requests.</td>
            </tr>
          )}
          {rows.map((r) => (
            <tr key={r.id}>
              <td><a href={`${BASE}change-requests/${r.id}`}>{r.title}</a></td>
              <td>{stateLabel(r)}</td>
              <td>{r.environments.join(', ')}</td>
              <td>{r.revision}</td>
              <td>{r.author.keyName}</td>
              <td>{when(r.updatedAt)}</td>
            </tr>
          ))}
        </DataTable>
      )}
    </main>
  );
}

function Json({ value }: { value: unknown }) {
  return <pre class="json">{value === null ? '(none)' : JSON.stringify(value, null, 2)}</pre>;
}

function ChangeRequestDetail({ id }: { id: string }) {
  const s = useSession();
  const canApprove = s.viewer.permissions.includes('CanApprove');
  const [status, setStatus] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [comment, setComment] = useState('');
  const one = useLoad(() => gql<{ changeRequest: ChangeRequest | null }>(`query($id: ID!) { changeRequest(id: $id) { ${FIELDS} } }`, { id }), [id]);
  const cr = one.data?.changeRequest;
  const act = async (what: string, mutation: string, vars: Record<string, unknown>) => {
    setError(null);
    setStatus(null);
    try {
      await gql(mutation, vars);
      setStatus(what);
      one.reload();
    } catch (err) {
      setError(messageOf(err));
    }
  };
  if (!cr) {
    return (
      <main id="main">
        <h1 tabIndex={-1}>Change request</h1>
        <Loading error={one.error ?? (one.data ? 'No such change request.' : undefined)} loading={one.loading} />
      </main>
    );
  }
  const live = cr.state === 'open' || cr.state === 'rejected';
  return (
    <main id="main">
      <p><a href={`${BASE}change-requests`}>All change requests</a></p>
      <h1 tabIndex={-1}>{cr.title}</h1>
      <p>
        <strong>{stateLabel(cr)}</strong> · revision {cr.revision} by {cr.author.keyName} · hash <code title={cr.hash}>{shortHash(cr.hash)}</code>
        {cr.appliedAt && <> · applied {when(cr.appliedAt)}</>}
      </p>
      {cr.description && <p>{cr.description}</p>}
      {cr.error && <p class="error">Failed: {cr.error}</p>}
      {cr.requiredApprovals.length > 0 && (
        <ul aria-label="Approvals required">
          {cr.requiredApprovals.map((e) => <li key={e.stage}>{e.stage}: {e.approvals} of {e.required} approvals</li>)}
        </ul>
      )}
      <section class="card" aria-labelledby="diff-h">
        <h2 id="diff-h">Changes</h2>
        {cr.diff.map((d, i) => (
          <div key={i} class="cr-change" role="group" aria-label={`Change to ${describeTarget(d.target)}`}>
            <h3>{describeTarget(d.target)}</h3>
            <div style={{ display: 'grid', gridTemplateColumns: '1fr 1fr', gap: '1rem' }}>
              <div><h4>Before</h4><Json value={d.before} /></div>
              <div><h4>After</h4><Json value={d.after} /></div>
            </div>
          </div>
        ))}
      </section>
      {live && (
        <section class="card" aria-labelledby="review-h">
          <h2 id="review-h">Review and apply</h2>
          {canApprove && (
            <>
              <p>You are reviewing revision {cr.revision}, hash <code>{cr.hash}</code>.</p>
              <Field label="Comment">{(p) => <input {...p} value={comment} onInput={(e) => setComment(e.currentTarget.value)} />}</Field>
              <div class="row">
                <button type="button" class="primary" onClick={() => act(`Approved hash ${shortHash(cr.hash)}.`, 'mutation($id: ID!, $h: String!, $c: String) { reviewChangeRequest(id: $id, decision: "approve", hash: $h, comment: $c) { id } }', { id, h: cr.hash, c: comment || null })}>
                  Approve
                </button>
                <button type="button" onClick={() => act(`Rejected hash ${shortHash(cr.hash)}.`, 'mutation($id: ID!, $h: String!, $c: String) { reviewChangeRequest(id: $id, decision: "reject", hash: $h, comment: $c) { id } }', { id, h: cr.hash, c: comment || null })}>
                  Reject
                </button>
              </div>
            </>
          )}
          {s.can.write && (
            <div class="row">
              <button type="button" class="primary" disabled={!cr.approved} onClick={() => act('Applied.', 'mutation($id: ID!, $h: String!) { applyChangeRequest(id: $id, hash: $h) { id } }', { id, h: cr.hash })}>
                Apply
              </button>
              <button type="button" onClick={() => act('Rebased: a new revision.', 'mutation($id: ID!) { rebaseChangeRequest(id: $id) { id } }', { id })}>Rebase</button>
              <button type="button" onClick={() => act('Closed.', 'mutation($id: ID!) { closeChangeRequest(id: $id) { id } }', { id })}>Close</button>
            </div>
          )}
        </section>
      )}
      {cr.state === 'applied' && s.can.write && (
        <button type="button" onClick={() => act('A revert was proposed.', 'mutation($id: ID!) { revertChangeRequest(id: $id) { id } }', { id })}>Propose a revert</button>
      )}
      {error && <p class="error" role="alert">{error}</p>}
      <Status text={status} />
      <Preview id={id} />
      <section class="card" aria-labelledby="history-h">
        <h2 id="history-h">History</h2>
        <h3 class="sub">Revisions</h3>
        <DataTable caption="Revisions" columns={['Revision', 'Hash', 'Author', 'At']}>
          {(cr.history?.revisions ?? []).map((r) => (
            <tr key={r.revision}><td>{r.revision}</td><td><code title={r.hash}>{shortHash(r.hash)}</code></td><td>{r.author.keyName}</td><td>{when(r.createdAt)}</td></tr>
          ))}
        </DataTable>
        <h3 class="sub">Reviews</h3>
        {(cr.history?.reviews ?? []).length === 0 && <p class="hint">No reviews yet.</p>}
        <DataTable caption="Reviews" columns={['Reviewer', 'Decision', 'Revision', 'Hash reviewed', 'Comment', 'At']}>
          {(cr.history?.reviews ?? []).map((r, i) => (
            <tr key={i}>
              <td>{r.reviewer.keyName}</td>
              <td>{r.decision}{r.voided ? ' (voided)' : ''}</td>
              <td>{r.revision}</td>
              <td><code title={r.hash}>{shortHash(r.hash)}</code></td>
              <td>{r.comment ?? ''}</td>
              <td>{when(r.at)}</td>
            </tr>
          ))}
        </DataTable>
      </section>
    </main>
  );
}

interface PreviewResult {
  evaluated: number;
  changed: number;
  flags: { flag: string; stage: string; evaluated: number; changed: number; transitions: { from: string | null; to: string | null; count: number }[] }[];
}

function Preview({ id }: { id: string }) {
  const [text, setText] = useState('[{"userId": "user-1", "context": {"country": "DE"}}]');
  const [result, setResult] = useState<PreviewResult | null>(null);
  const [error, setError] = useState<string | null>(null);
  const run = async (e: Event) => {
    e.preventDefault();
    setError(null);
    let contexts: unknown;
    try {
      contexts = JSON.parse(text);
    } catch {
      return setError('Contexts must be a JSON array of {userId, clientId?, context?}.');
    }
    try {
      const r = await gql<{ previewChangeRequest: PreviewResult }>(
        'mutation($id: ID!, $c: [PreviewContextInput!]) { previewChangeRequest(id: $id, contexts: $c) { evaluated changed flags { flag stage evaluated changed transitions { from to count } } } }',
        { id, c: contexts },
      );
      setResult(r.previewChangeRequest);
    } catch (err) {
      setError(messageOf(err));
    }
  };
  return (
    <section class="card" aria-labelledby="preview-h">
      <h2 id="preview-h">Preview</h2>
      <form onSubmit={run} novalidate>
        <Field label="Contexts" error={error} hint="A JSON array of up to 10,000 {userId, clientId?, context?}.">
          {(p) => <textarea {...p} rows={4} value={text} onInput={(e) => setText(e.currentTarget.value)} />}
        </Field>
        <button type="submit">Preview</button>
      </form>
      {result && (
        <>
          <p>{result.changed} of {result.evaluated} evaluations change.</p>
          <DataTable caption="Transitions" columns={['Flag', 'Environment', 'From', 'To', 'Contexts']}>
            {result.flags.flatMap((f) =>
              f.transitions.map((x, i) => (
                <tr key={`${f.flag}-${f.stage}-${i}`}>
                  <td>{f.flag}</td>
                  <td>{f.stage}</td>
                  <td>{x.from ?? '(none)'}</td>
                  <td>{x.to ?? '(none)'}</td>
                  <td>{x.count}</td>
                </tr>
              )),
            )}
          </DataTable>
        </>
      )}
    </section>
  );
}
