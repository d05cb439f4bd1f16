/** The admin web UI: sign-in, the page frame and the page router. */
import { render } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { abilitiesOf, ApiError, gqlPartial, KEY_FIELDS, onUnauthorized, session, type ManagementKey } from './api';
import { Field, messageOf, useBusy } from './components';
import { BASE, navigate, onLinkClick, useLocation } from './router';
import { SessionContext, useSession, type Session } from './session';
import { FlagsPage } from './pages/flags';
import { FlagPage } from './pages/flag';
import { KeysPage } from './pages/keys';
import { SegmentsPage } from './pages/segments';
import { ChangeRequestsPage } from './pages/change-requests';
import { OrganizationPage } from './pages/organization';
import { AuditPage } from './pages/audit';
import { CleanupPage } from './pages/cleanup';
import { WebhooksPage } from './pages/webhooks';
import { KEY_RE } from '../../src/domain/input-formats';

interface OrgData {
  viewer: ManagementKey | null;
  environments: string[] | null;
  applications: string[] | null;
  __type: { fields: { name: string }[] } | null;
}

/**
 * Who the key is and the organization's names, in one request (sign-in is on the way to the first
 * page of flags). Environments and applications need CanRead: a key without it still signs in.
 * Nothing here grows with the number of flags.
 */
async function loadSession(key: string): Promise<Omit<Session, 'refreshOrg'>> {
  const r = await gqlPartial<OrgData>(`{ viewer { ${KEY_FIELDS} } environments applications __type(name: "Query") { fields { name } } }`, undefined, key);
  const viewer = r.data.viewer;
  if (!viewer) throw r.errors[0] ?? new ApiError('The server did not say who this key is.', 'INTERNAL', 500);
  return {
    viewer,
    can: abilitiesOf(viewer),
    environments: r.data.environments ?? [],
    applications: r.data.applications ?? [],
    hasAudit: r.data.__type?.fields.some((f) => f.name === 'auditLog') ?? false,
  };
}

function SignIn({ onSignedIn, notice }: { onSignedIn: (s: Omit<Session, 'refreshOrg'>) => void; notice: string | null }) {
  const [key, setKey] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, whileBusy] = useBusy();
  const submit = async (e: Event) => {
    e.preventDefault();
    const value = key.trim();
    if (!KEY_RE.test(value)) {
      setError('A Management Key is 64 lowercase hexadecimal characters (0-9, a-f).');
      return;
    }
    setError(null);
    await whileBusy(
      async () => {
        const s = await loadSession(value);
        session.set(value);
        onSignedIn(s);
      },
      (err) => setError(err instanceof ApiError && err.status === 401 ? 'Sign-in failed: this Management Key is unknown or disabled.' : messageOf(err)),
    );
  };
  return (
    <main class="signin">
      <h1>
        <img src="/ui/favicon.svg" alt="" width={32} height={32} /> Vexil
      </h1>
      <p>Feature flag administration. Sign in with a Management Key; it is kept in this browser tab only and forgotten when you sign out or close the tab.</p>
      {notice && <p class="notice" role="status">{notice}</p>}
      <form onSubmit={submit} novalidate>
        <Field label="Management key" error={error}>
          {(p) => (
            <input {...p} type="password" autoComplete="off" spellcheck={false} value={key} onInput={(e) => setKey(e.currentTarget.value)} required />
          )}
        </Field>
        <button type="submit" class="primary" disabled={busy}>
          Sign in
        </button>
      </form>
    </main>
  );
}

function Nav({ s, path, onSignOut }: { s: Session; path: string; onSignOut: () => void }) {
  const top = path.split('/')[0];
  const links: [string, string, boolean][] = [
    ['Flags', '', s.can.read],
    ['Segments', 'segments', s.can.read],
    ['Cleanup', 'cleanup', s.can.read],
    ['Change requests', 'change-requests', s.can.read],
    ['Keys', 'keys', s.can.admin],
    ['Webhooks', 'webhooks', s.can.admin],
    ['Organization', 'organization', s.can.read],
    ['Audit log', 'audit', s.can.read && s.hasAudit],
  ];
  return (
    <header class="top">
      <a class="brand" href={BASE}>
        <img src="/ui/favicon.svg" alt="" width={24} height={24} /> Vexil
      </a>
      <nav aria-label="Main">
        <ul>
          {links
            .filter(([, , shown]) => shown)
            .map(([label, href]) => (
              <li key={href}>
                <a href={BASE + href} aria-current={(top === 'flags' ? '' : top) === href ? 'page' : undefined}>
                  {label}
                </a>
              </li>
            ))}
        </ul>
      </nav>
      <div class="who">
        <span>
          Signed in as <strong>{s.viewer.name}</strong>
          <span class="perms"> ({s.viewer.permissions.join(', ')}{s.viewer.application ? `; ${s.viewer.application}` : ''}{s.viewer.environment ? `; ${s.viewer.environment}` : ''})</span>
        </span>
        <button type="button" onClick={onSignOut}>
          Sign out
        </button>
      </div>
    </header>
  );
}

function Page({ path, query, seq }: { path: string; query: URLSearchParams; seq: number }) {
  const s = useSession();
  const parts = path.split('/').filter(Boolean);
  if (!s.can.read && parts[0] !== 'keys') {
    return (
      <main id="main">
        <h1>Nothing to manage with this key</h1>
        <p>This key ({s.viewer.permissions.join(', ')}) cannot read flags. Sign in with a key that has CanRead or CanWrite.</p>
      </main>
    );
  }
  if (parts[0] === 'flags' && parts[1]) return <FlagPage key={parts[1]} name={decodeURIComponent(parts[1])} />;
  if (parts[0] === 'keys') return <KeysPage />;
  if (parts[0] === 'webhooks') return <WebhooksPage />;
  if (parts[0] === 'segments') return <SegmentsPage />;
  if (parts[0] === 'change-requests') return <ChangeRequestsPage key={parts[1] ?? ''} id={parts[1] ? decodeURIComponent(parts[1]) : undefined} />;
  if (parts[0] === 'organization') return <OrganizationPage />;
  if (parts[0] === 'cleanup') return <CleanupPage />;
  if (parts[0] === 'audit' && s.hasAudit) return <AuditPage flag={query.get('flag') ?? ''} />;
  // Keyed by the navigation: each visit starts from its URL and history entry (back returns to the
  // page, search and filters the person left).
  if (parts.length === 0 || parts[0] === 'flags') return <FlagsPage key={seq} />;
  return (
    <main id="main">
      <h1>Page not found</h1>
      <p>
        <a href={BASE}>Go to the flags</a>
      </p>
    </main>
  );
}

function App() {
  const loc = useLocation();
  const [s, setS] = useState<Omit<Session, 'refreshOrg'> | null>(null);
  const [restoring, setRestoring] = useState(() => session.get() !== null);
  const [notice, setNotice] = useState<string | null>(null);
  const mainRef = useRef<HTMLDivElement>(null);

  const signOut = useCallback((why: string | null) => {
    session.clear();
    setS(null);
    setNotice(why);
    navigate(BASE, true);
  }, []);

  useEffect(() => onUnauthorized(() => signOut('Your key stopped working (unknown, rotated or disabled). Sign in again.')), [signOut]);

  useEffect(() => {
    const key = session.get();
    if (key === null) return;
    loadSession(key).then(
      (x) => {
        setS(x);
        setRestoring(false);
      },
      (err) => {
        setRestoring(false);
        signOut(messageOf(err));
      },
    );
  }, [signOut]);

  // Move focus to the page heading after navigation, for keyboard and screen reader users.
  useEffect(() => {
    mainRef.current?.querySelector('h1')?.focus();
  }, [loc.path]);

  if (restoring) return <p aria-live="polite">Loading…</p>;
  if (s === null) return <SignIn onSignedIn={(x) => { setNotice(null); setS(x); }} notice={notice} />;
  const full: Session = {
    ...s,
    refreshOrg: async () => {
      const r = await gqlPartial<OrgData>('{ environments applications }');
      setS((cur) => cur && { ...cur, environments: r.data.environments ?? cur.environments, applications: r.data.applications ?? cur.applications });
    },
  };
  return (
    <SessionContext.Provider value={full}>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <Nav s={full} path={loc.path} onSignOut={() => signOut('You are signed out. The key was removed from this tab.')} />
      <div ref={mainRef} class="page">
        <Page path={loc.path} query={loc.query} seq={loc.seq} />
      </div>
    </SessionContext.Provider>
  );
}

document.addEventListener('click', onLinkClick);
render(<App />, document.getElementById('app')!);
