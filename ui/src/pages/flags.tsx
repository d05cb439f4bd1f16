/**
 * The flags list: one page at a time from the server (docs/api.md, "Listing and paging"), whose search and filters run
 * on the server, with the total; per-stage state at a glance; and the "New flag" form. It never
 * loads every flag: an organization may hold 100,000.
 */
import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { FLAG_NAME_MSG, FLAG_NAME_RE } from '../../../src/domain/input-formats';
import { flagPage, gql, isAborted, type Flag, type FlagConnection, type FlagFilter } from '../api';
import { FLAG_PURPOSES } from '../../../src/domain/types';
import { DataTable, Field, Loading, messageOf, useBusy } from '../components';
import { flagHref, navigate, rememberedState, rememberState } from '../router';
import { useSession } from '../session';
import { VariantsEditor, defaultVariants, variantsFromRows, type VariantRow } from './variants';

type ListFlag = Pick<Flag, 'name' | 'project' | 'type' | 'isArchived' | 'tags' | 'description' | 'environments'> & {
  configs: { stage: string; clientId: string | null; enabled: boolean }[];
};

const TYPES = ['boolean', 'string', 'number', 'json'];

/** One cell's content (a plain function, not a component: rows × environments of them). */
function stageState(flag: ListFlag, stage: string) {
  if (!flag.environments.includes(stage)) return <span class="muted" title="The flag does not use this environment">n/a</span>;
  const base = flag.configs.find((c) => c.stage === stage && c.clientId === null);
  const clients = flag.configs.filter((c) => c.stage === stage && c.clientId !== null).length;
  const extra = clients > 0 ? ` +${clients} client` : '';
  if (base === undefined) return <span class="muted">not set{extra}</span>;
  return <span class={`badge ${base.enabled ? 'on' : 'off'}`}>{base.enabled ? 'On' : 'Off'}{extra}</span>;
}

function NewFlagForm({ onCancel }: { onCancel: () => void }) {
  const s = useSession();
  const apps = s.viewer.application ? [s.viewer.application] : s.applications;
  const [name, setName] = useState('');
  const [project, setProject] = useState(apps[0] ?? '');
  const [type, setType] = useState('boolean');
  const [description, setDescription] = useState('');
  const [tags, setTags] = useState('');
  const [purpose, setPurpose] = useState('release');
  const [rows, setRows] = useState<VariantRow[]>(defaultVariants('string'));
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [busy, whileBusy] = useBusy();

  const submit = async (e: Event) => {
    e.preventDefault();
    const errs: Record<string, string> = {};
    if (!FLAG_NAME_RE.test(name)) errs.name = `The name ${FLAG_NAME_MSG}.`;
    if (!project) errs.project = 'Choose an application.';
    const variants = type === 'boolean' ? { ok: true as const, variants: defaultVariants('boolean').map((r) => ({ key: r.key, value: r.value === 'true', valueType: 'boolean' })) } : variantsFromRows(type, rows);
    if (!variants.ok) errs.variants = variants.error;
    setErrors(errs);
    if (Object.keys(errs).length > 0) return;
    await whileBusy(
      async () => {
        const input = {
          name,
          project,
          type,
          description: description || null,
          tags: tags.split(',').map((t) => t.trim()).filter(Boolean),
          purpose,
          variants: variants.ok ? variants.variants : [],
        };
        await gql('mutation($input: CreateFlagInput!) { createFlag(input: $input) { name } }', { input });
        navigate(flagHref(name));
      },
      (err) => {
        const msg = messageOf(err);
        if (/^name|already exists/.test(msg)) setErrors({ name: msg });
        else if (/variants/.test(msg)) setErrors({ variants: msg });
        else if (/application|project/i.test(msg)) setErrors({ project: msg });
        else setErrors({ form: msg });
      },
    );
  };

  return (
    <form class="card" onSubmit={submit} novalidate aria-labelledby="new-flag-title">
      <h2 id="new-flag-title">New flag</h2>
      <div class="row">
        <Field label="Name" error={errors.name} hint="Letters, digits, '_', '.', '-'; it cannot be changed later.">
          {(p) => <input {...p} value={name} onInput={(e) => setName(e.currentTarget.value)} required autoComplete="off" />}
        </Field>
        <Field label="Application" error={errors.project}>
          {(p) => (
            <select {...p} value={project} onChange={(e) => setProject(e.currentTarget.value)}>
              {apps.map((a) => <option key={a}>{a}</option>)}
            </select>
          )}
        </Field>
        <Field label="Type">
          {(p) => (
            <select {...p} value={type} onChange={(e) => { setType(e.currentTarget.value); setRows(defaultVariants(e.currentTarget.value)); }}>
              {TYPES.map((t) => <option key={t}>{t}</option>)}
            </select>
          )}
        </Field>
        <Field label="Purpose" hint="Sets its expected lifetime.">
          {(p) => (
            <select {...p} value={purpose} onChange={(e) => setPurpose(e.currentTarget.value)}>
              {FLAG_PURPOSES.map((x) => <option key={x}>{x}</option>)}
            </select>
          )}
        </Field>
      </div>
      <Field label="Description">{(p) => <input {...p} value={description} onInput={(e) => setDescription(e.currentTarget.value)} />}</Field>
      <Field label="Tags" hint="Separated by commas.">{(p) => <input {...p} value={tags} onInput={(e) => setTags(e.currentTarget.value)} />}</Field>
      {type === 'boolean' ? (
        <p class="hint">A boolean flag gets the variants <code>on</code> = true and <code>off</code> = false.</p>
      ) : (
        <VariantsEditor type={type} rows={rows} onChange={setRows} error={errors.variants} />
      )}
      {errors.form && <p class="error" role="alert">{errors.form}</p>}
      <div class="actions">
        <button type="submit" class="primary" disabled={busy}>Create</button>
        <button type="button" onClick={onCancel}>Cancel</button>
      </div>
    </form>
  );
}

/** Rows per page. */
export const PAGE_SIZE = 50;
/** A page this long also gets a pager below the list. */
const BOTTOM_PAGER_ROWS = 20;
/** Quiet time after the last keystroke before the search goes to the server. */
const SEARCH_DELAY_MS = 150;
const LIST_FIELDS = 'name project type isArchived tags description environments configs { stage clientId enabled }';

type Show = 'active' | 'archived' | 'all';
/** What the list shows: kept in the history entry (and the filters in the URL) for back and forward. */
interface View {
  q: string;
  application: string;
  type: string;
  show: Show;
  /** The `after` cursor of each page before the current one and of the current one (page 1: []). */
  cursors: string[];
}
const STATE_NAME = 'vexilFlags';
const SHOWS: Show[] = ['active', 'archived', 'all'];

function initialView(): View {
  const remembered = rememberedState<View>(STATE_NAME);
  if (remembered) return remembered;
  const u = new URLSearchParams(location.search);
  const show = u.get('show') as Show;
  return { q: u.get('q') ?? '', application: u.get('application') ?? '', type: u.get('type') ?? '', show: SHOWS.includes(show) ? show : 'active', cursors: [] };
}

function remember(v: View): void {
  const u = new URLSearchParams();
  if (v.q) u.set('q', v.q);
  if (v.application) u.set('application', v.application);
  if (v.type) u.set('type', v.type);
  if (v.show !== 'active') u.set('show', v.show);
  rememberState(STATE_NAME, v, u);
}

const filterOf = (v: View): FlagFilter => ({
  search: v.q,
  application: v.application,
  type: v.type,
  archived: v.show === 'all' ? null : v.show === 'archived',
});
const narrowed = (v: View) => v.q.trim() !== '' || v.application !== '' || v.type !== '';

const number = (n: number) => n.toLocaleString('en-GB');
const plural = (n: number, one: string, many: string) => `${number(n)} ${n === 1 ? one : many}`;

interface Loaded {
  page: FlagConnection<ListFlag>;
  /** The view it answers. */
  view: View;
  /** Flags shown with this "Show" choice and no search or filter (for "3 of 100,000 flags"). */
  all: number | null;
}

export function FlagsPage() {
  const s = useSession();
  const [view, setView] = useState<View>(initialView);
  /** The search box as typed; `view.q` follows it after SEARCH_DELAY_MS. */
  const [text, setText] = useState(view.q);
  const [loaded, setLoaded] = useState<Loaded | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(true);
  const [creating, setCreating] = useState(false);
  /** Unfiltered totals by "Show" choice, learnt from pages without search or filter. */
  const totals = useRef(new Map<Show, number>());
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  const listTop = useRef<HTMLDivElement>(null);

  /** A new search or filter starts again at the first page (an unchanged one changes nothing). */
  const change = (next: Partial<Omit<View, 'cursors'>>) =>
    setView((v) => {
      const n = { ...v, ...next };
      return n.q === v.q && n.application === v.application && n.type === v.type && n.show === v.show ? v : { ...n, cursors: [] };
    });

  // One request per view: a newer view gives the older request up. A layout effect, so the request
  // leaves right after the render, not after the browser has painted it (sign-in, each search).
  const after = view.cursors.length > 0 ? view.cursors[view.cursors.length - 1] : null;
  useLayoutEffect(() => {
    remember(view);
    const ctl = new AbortController();
    setBusy(true);
    const known = totals.current.get(view.show);
    const countAll = narrowed(view) && known === undefined;
    flagPage<ListFlag>(LIST_FIELDS, PAGE_SIZE, after, filterOf(view), ctl.signal, countAll
      ? { fields: 'all: flagConnection(first: 1, archived: $archived) { totalCount }', vars: '' }
      : undefined).then(
      (r) => {
        const page = r.flagConnection;
        let all = known ?? null;
        if (!narrowed(view)) all = page.totalCount;
        else if (countAll) all = (r.all as { totalCount: number } | null)?.totalCount ?? null;
        if (all !== null) totals.current.set(view.show, all);
        setLoaded({ page, view, all });
        setError(null);
        setBusy(false);
      },
      (err) => {
        if (isAborted(err)) return;
        setError(messageOf(err));
        setBusy(false);
      },
    );
    return () => ctl.abort();
  }, [view.q, view.application, view.type, view.show, after]);

  useEffect(() => () => clearTimeout(timer.current), []);
  const onSearch = (value: string) => {
    setText(value);
    clearTimeout(timer.current);
    timer.current = setTimeout(() => change({ q: value }), SEARCH_DELAY_MS);
  };
  const searchNow = (e: Event) => {
    e.preventDefault();
    clearTimeout(timer.current);
    if (text !== view.q) change({ q: text });
  };

  const page = loaded?.page;
  const shownView = loaded?.view ?? view;
  const pageNo = shownView.cursors.length + 1;
  const pages = page ? Math.max(1, Math.ceil(page.totalCount / PAGE_SIZE)) : 1;
  const first = (pageNo - 1) * PAGE_SIZE + 1;
  const count = (() => {
    if (!page) return '';
    const total = page.totalCount;
    const what = narrowed(shownView) && loaded!.all !== null ? `${number(total)} of ${plural(loaded!.all, 'flag', 'flags')}` : plural(total, 'flag', 'flags');
    return page.nodes.length > 0 && total > page.nodes.length ? `${what}, showing ${number(first)}–${number(first + page.nodes.length - 1)}` : what;
  })();

  const paged = page !== undefined && (pageNo > 1 || page.pageInfo.hasNextPage);
  /** Previous and next page; the one below the list also brings the top of the list into view. */
  const pager = (where: 'top' | 'bottom') => {
    const go = (cursors: string[]) => {
      setView({ ...shownView, cursors });
      if (where === 'bottom') listTop.current?.scrollIntoView();
    };
    const end = page?.pageInfo.endCursor ?? null;
    return (
      <nav class={`pager ${where}`} aria-label={where === 'top' ? 'Pages of flags' : 'Pages of flags, below the list'}>
        <button type="button" disabled={pageNo === 1} onClick={() => go(shownView.cursors.slice(0, -1))}>
          Previous page
        </button>
        <span>Page {number(pageNo)} of {number(pages)}</span>
        <button type="button" disabled={!page?.pageInfo.hasNextPage || end === null} onClick={() => go([...shownView.cursors, end!])}>
          Next page
        </button>
      </nav>
    );
  };

  return (
    <main id="main">
      <div class="title-row">
        <h1 tabIndex={-1}>Flags</h1>
        {s.can.write && !creating && (
          <button type="button" class="primary" onClick={() => setCreating(true)}>New flag</button>
        )}
      </div>
      {creating && <NewFlagForm onCancel={() => setCreating(false)} />}
      <form class="filters" role="search" aria-label="Flags" onSubmit={searchNow}>
        <Field label="Search flags">
          {(p) => <input {...p} type="search" value={text} onInput={(e) => onSearch(e.currentTarget.value)} placeholder="Name, tag or description" autoComplete="off" spellcheck={false} />}
        </Field>
        <Field label="Filter by application">
          {(p) => (
            <select {...p} value={view.application} onChange={(e) => change({ application: e.currentTarget.value })}>
              <option value="">All applications</option>
              {s.applications.map((a) => <option key={a}>{a}</option>)}
            </select>
          )}
        </Field>
        <Field label="Filter by type">
          {(p) => (
            <select {...p} value={view.type} onChange={(e) => change({ type: e.currentTarget.value })}>
              <option value="">All types</option>
              {TYPES.map((t) => <option key={t}>{t}</option>)}
            </select>
          )}
        </Field>
        <Field label="Show">
          {(p) => (
            <select {...p} value={view.show} onChange={(e) => change({ show: e.currentTarget.value as Show })}>
              <option value="active">Active flags</option>
              <option value="archived">Archived flags</option>
              <option value="all">All flags</option>
            </select>
          )}
        </Field>
      </form>
      <Loading error={error ?? undefined} loading={!page && busy} />
      {page && (
        <>
          <div class="list-head" ref={listTop}>
            <p class="count" role="status">
              {count}
              {busy && <span class="muted"> (updating…)</span>}
            </p>
            {paged && pager('top')}
          </div>
          {page.nodes.length > 0 && (
            <DataTable caption="Flags, with the state of their configuration in each environment" columns={['Name', 'Application', 'Type', ...s.environments, 'Tags']} class="flags" busy={busy}>
              {page.nodes.map((f) => (
                <tr key={f.name}>
                  <th scope="row">
                    <a href={flagHref(f.name)}>{f.name}</a>
                    {f.isArchived && <span class="badge archived">Archived</span>}
                    {f.description && <span class="desc">{f.description}</span>}
                  </th>
                  <td>{f.project}</td>
                  <td>{f.type}</td>
                  {s.environments.map((e) => <td key={e}>{stageState(f, e)}</td>)}
                  <td>{f.tags.map((t) => <span class="tag" key={t}>{t}</span>)}</td>
                </tr>
              ))}
            </DataTable>
          )}
          {paged && page.nodes.length >= BOTTOM_PAGER_ROWS && pager('bottom')}
          {page.nodes.length === 0 && (
            <p>
              No flag matches.
              {!narrowed(shownView) && shownView.show === 'active' && s.can.write ? ' Create the first one with "New flag".' : ''}
            </p>
          )}
        </>
      )}
    </main>
  );
}
