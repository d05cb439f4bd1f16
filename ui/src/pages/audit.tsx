/** The audit log (docs/audit.md), newest first, filtered by flag, with before/after of each change. */
import { useEffect, useState } from 'preact/hooks';
import { gql } from '../api';
import { DataTable, Field, Loading, messageOf, when } from '../components';
import { BASE, flagHref, navigate } from '../router';

interface AuditEvent {
  id: string;
  at: string;
  actor: { keyId: string | null; keyName: string | null; operator: boolean };
  action: string;
  target: { type: string; name: string; stage: string | null; clientId: string | null };
  application: string | null;
  before: unknown;
  after: unknown;
}

const PAGE = 50;
const QUERY = `query($t: String, $ty: String, $f: Int, $b: ID) {
  auditLog(target: $t, type: $ty, first: $f, before: $b) {
    id at actor { keyId keyName operator } action target { type name stage clientId } application before after
  }
}`;

function Target({ t }: { t: AuditEvent['target'] }) {
  const where = [t.stage, t.clientId && `client ${t.clientId}`].filter(Boolean).join(', ');
  return (
    <>
      {t.type === 'flag' ? <a href={flagHref(t.name)}>{t.name}</a> : <span>{t.type === 'key' ? `key ${t.name.slice(0, 8)}…` : t.name}</span>}
      {where && <span class="muted"> ({where})</span>}
    </>
  );
}

export function AuditPage({ flag }: { flag: string }) {
  const [filter, setFilter] = useState(flag);
  const [events, setEvents] = useState<AuditEvent[] | null>(null);
  const [more, setMore] = useState(false);
  const [error, setError] = useState<string | null>(null);

  const load = async (before: string | null) => {
    setError(null);
    try {
      const r = await gql<{ auditLog: AuditEvent[] }>(QUERY, { t: flag || null, ty: flag ? 'flag' : null, f: PAGE, b: before });
      setEvents((cur) => (before && cur ? [...cur, ...r.auditLog] : r.auditLog));
      setMore(r.auditLog.length === PAGE);
    } catch (err) {
      setError(messageOf(err));
    }
  };
  useEffect(() => {
    setFilter(flag);
    setEvents(null);
    void load(null);
  }, [flag]);

  return (
    <main id="main">
      <h1 tabIndex={-1}>Audit log{flag ? ` of ${flag}` : ''}</h1>
      <form class="filters" role="search" aria-label="Audit log" onSubmit={(e) => { e.preventDefault(); navigate(`${BASE}audit${filter.trim() ? `?flag=${encodeURIComponent(filter.trim())}` : ''}`); }}>
        <Field label="Flag name">{(p) => <input {...p} value={filter} onInput={(e) => setFilter(e.currentTarget.value)} />}</Field>
        <button type="submit">Filter</button>
      </form>
      <p class="hint">Leave the flag name empty to see every event you may see.</p>
      <Loading error={error ?? undefined} loading={events === null} />
      {events && events.length === 0 && <p>No events{flag ? ` for ${flag}` : ''}.</p>}
      {events && events.length > 0 && (
        <DataTable caption="Audit events, newest first" columns={['When', 'Who', 'Action', 'Target', 'Application', 'Change']} class="audit">
          {events.map((e) => (
            <tr key={e.id}>
              <td><time dateTime={e.at}>{when(e.at)}</time></td>
              <td>{e.actor.operator ? 'operator' : e.actor.keyName ?? e.actor.keyId ?? 'Vexil (system)'}</td>
              <td><code>{e.action}</code></td>
              <td><Target t={e.target} /></td>
              <td>{e.application ?? '—'}</td>
              <td>
                <details>
                  <summary>Before and after</summary>
                  <div class="diff">
                    <div><h3>Before</h3><pre tabIndex={0}>{JSON.stringify(e.before, null, 2)}</pre></div>
                    <div><h3>After</h3><pre tabIndex={0}>{JSON.stringify(e.after, null, 2)}</pre></div>
                  </div>
                </details>
              </td>
            </tr>
          ))}
        </DataTable>
      )}
      {more && events && <button type="button" onClick={() => load(events[events.length - 1].id)}>Older events</button>}
    </main>
  );
}
