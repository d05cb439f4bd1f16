/** The flags list: search and filters, per-stage state at a glance, and the "New flag" form. */
import { useMemo, useState } from 'preact/hooks';
import { FLAG_NAME_MSG, FLAG_NAME_RE } from '../../../src/domain/name-rules';
import { gql, type Flag } from '../api';
import { Field, Loading, messageOf, useLoad } from '../components';
import { flagHref, navigate } from '../router';
import { useSession } from '../session';
import { VariantsEditor, defaultVariants, variantsFromRows, type VariantRow } from './variants';

type ListFlag = Pick<Flag, 'name' | 'project' | 'type' | 'isArchived' | 'tags' | 'description' | 'environments'> & {
  configs: { stage: string; clientId: string | null; enabled: boolean }[];
};

const TYPES = ['boolean', 'string', 'number', 'json'];

/** One cell's content (a plain function, not a component: 1,000 flags × environments of them). */
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
  const [rows, setRows] = useState<VariantRow[]>(defaultVariants('string'));
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [busy, setBusy] = useState(false);

  const submit = async (e: Event) => {
    e.preventDefault();
    const errs: Record<string, string> = {};
    if (!FLAG_NAME_RE.test(name)) errs.name = `The name ${FLAG_NAME_MSG}.`;
    if (!project) errs.project = 'Choose an application.';
    const variants = type === 'boolean' ? { ok: true as const, variants: defaultVariants('boolean').map((r) => ({ key: r.key, value: r.value === 'true', valueType: 'boolean' })) } : variantsFromRows(type, rows);
    if (!variants.ok) errs.variants = variants.error;
    setErrors(errs);
    if (Object.keys(errs).length > 0) return;
    setBusy(true);
    try {
      const input = {
        name,
        project,
        type,
        description: description || null,
        tags: tags.split(',').map((t) => t.trim()).filter(Boolean),
        variants: variants.ok ? variants.variants : [],
      };
      await gql('mutation($input: CreateFlagInput!) { createFlag(input: $input) { name } }', { input });
      navigate(flagHref(name));
    } catch (err) {
      const msg = messageOf(err);
      if (/^name|already exists/.test(msg)) setErrors({ name: msg });
      else if (/variants/.test(msg)) setErrors({ variants: msg });
      else if (/application|project/i.test(msg)) setErrors({ project: msg });
      else setErrors({ form: msg });
    } finally {
      setBusy(false);
    }
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

export function FlagsPage() {
  const s = useSession();
  const { data, error, loading } = useLoad(
    () => gql<{ flags: ListFlag[] }>('{ flags { name project type isArchived tags description environments configs { stage clientId enabled } } }').then((d) => d.flags),
    [],
  );
  const [search, setSearch] = useState('');
  const [type, setType] = useState('');
  const [app, setApp] = useState('');
  const [archived, setArchived] = useState('active');
  const [creating, setCreating] = useState(false);

  const shown = useMemo(() => {
    const q = search.trim().toLowerCase();
    return (data ?? []).filter(
      (f) =>
        (archived === 'all' || (archived === 'archived') === f.isArchived) &&
        (type === '' || f.type === type) &&
        (app === '' || f.project === app) &&
        (q === '' || f.name.toLowerCase().includes(q) || f.tags.some((t) => t.toLowerCase().includes(q)) || (f.description ?? '').toLowerCase().includes(q)),
    );
  }, [data, search, type, app, archived]);

  return (
    <main id="main">
      <div class="title-row">
        <h1 tabIndex={-1}>Flags</h1>
        {s.can.write && !creating && (
          <button type="button" class="primary" onClick={() => setCreating(true)}>New flag</button>
        )}
      </div>
      {creating && <NewFlagForm onCancel={() => setCreating(false)} />}
      <div class="filters" role="search" aria-label="Flags">
        <Field label="Search flags">
          {(p) => <input {...p} type="search" value={search} onInput={(e) => setSearch(e.currentTarget.value)} placeholder="Name, tag or description" />}
        </Field>
        <Field label="Filter by application">
          {(p) => (
            <select {...p} value={app} onChange={(e) => setApp(e.currentTarget.value)}>
              <option value="">All applications</option>
              {s.applications.map((a) => <option key={a}>{a}</option>)}
            </select>
          )}
        </Field>
        <Field label="Filter by type">
          {(p) => (
            <select {...p} value={type} onChange={(e) => setType(e.currentTarget.value)}>
              <option value="">All types</option>
              {TYPES.map((t) => <option key={t}>{t}</option>)}
            </select>
          )}
        </Field>
        <Field label="Show">
          {(p) => (
            <select {...p} value={archived} onChange={(e) => setArchived(e.currentTarget.value)}>
              <option value="active">Active flags</option>
              <option value="archived">Archived flags</option>
              <option value="all">All flags</option>
            </select>
          )}
        </Field>
      </div>
      <Loading error={error} loading={loading} />
      {data && (
        <>
          <p class="count" role="status">
            {shown.length} of {data.length} flags
          </p>
          <div class="table-wrap">
            <table class="flags">
              <caption class="sr-only">Flags, with the state of their configuration in each environment</caption>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Application</th>
                  <th scope="col">Type</th>
                  {s.environments.map((e) => <th scope="col" key={e}>{e}</th>)}
                  <th scope="col">Tags</th>
                </tr>
              </thead>
              <tbody>
                {shown.map((f) => (
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
              </tbody>
            </table>
          </div>
          {shown.length === 0 && <p>No flag matches.{data.length === 0 && s.can.write ? ' Create the first one with "New flag".' : ''}</p>}
        </>
      )}
    </main>
  );
}
