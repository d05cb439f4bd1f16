/** Management Keys: list, create (value shown once, with a copy button), rotate, disable, delete. */
import { useState } from 'preact/hooks';
import { gql, KEY_FIELDS, type ManagementKey, type Permission } from '../api';
import { ConfirmButton, DataTable, Field, Loading, messageOf, RevealOnce, useLoad, when } from '../components';
import { useSession } from '../session';

const PERMISSIONS: [Permission, string][] = [
  ['CanEvaluate', 'evaluate flags (needs an application)'],
  ['CanRead', 'read flags'],
  ['CanWrite', 'change flags'],
  ['Admin', 'manage keys (organization-wide only)'],
  ['CanApprove', 'review change requests (nothing else by itself)'],
];

function NewKeyForm({ onCreated, onCancel }: { onCreated: (name: string, value: string) => void; onCancel: () => void }) {
  const s = useSession();
  const [name, setName] = useState('');
  const [perms, setPerms] = useState<Permission[]>(['CanEvaluate']);
  const [application, setApplication] = useState('');
  const [environment, setEnvironment] = useState('');
  const [errors, setErrors] = useState<Record<string, string>>({});
  const submit = async (e: Event) => {
    e.preventDefault();
    const errs: Record<string, string> = {};
    if (!name.trim()) errs.name = 'Enter a name that says who or what uses the key.';
    if (perms.length === 0) errs.permissions = 'Choose at least one permission.';
    if (perms.includes('Admin') && (application || environment)) errs.permissions = 'An Admin key must be organization-wide: choose no application and no environment.';
    if (perms.includes('CanEvaluate') && !application && !errs.permissions) errs.application = 'A key without an application cannot evaluate; choose one.';
    setErrors(errs);
    if (Object.keys(errs).length > 0) return;
    try {
      const r = await gql<{ createManagementKey: { key: string } }>(
        'mutation($i: CreateManagementKeyInput!) { createManagementKey(input: $i) { id key } }',
        { i: { name: name.trim(), permissions: perms, application: application || null, environment: environment || null } },
      );
      onCreated(name.trim(), r.createManagementKey.key);
    } catch (err) {
      const msg = messageOf(err);
      if (/application/i.test(msg)) setErrors({ application: msg });
      else if (/environment/i.test(msg)) setErrors({ environment: msg });
      else if (/permission|Admin/.test(msg)) setErrors({ permissions: msg });
      else if (/^name/.test(msg)) setErrors({ name: msg });
      else setErrors({ form: msg });
    }
  };
  return (
    <form class="card" onSubmit={submit} novalidate aria-labelledby="new-key-h">
      <h2 id="new-key-h">New key</h2>
      <Field label="Name" error={errors.name}>{(p) => <input {...p} value={name} onInput={(e) => setName(e.currentTarget.value)} autoComplete="off" />}</Field>
      <fieldset aria-describedby={errors.permissions ? 'perm-err' : undefined}>
        <legend>Permissions</legend>
        <div class="checks">
          {PERMISSIONS.map(([p, what]) => (
            // The accessible name is the permission alone; the hint is its description.
            <span class="check" key={p}>
              <input
                type="checkbox"
                id={`perm-${p}`}
                aria-describedby={`perm-${p}-hint`}
                checked={perms.includes(p)}
                onChange={(e) => setPerms(e.currentTarget.checked ? [...perms, p] : perms.filter((x) => x !== p))}
              />
              <label for={`perm-${p}`}>{p}</label>
              <span class="hint" id={`perm-${p}-hint`}>{what}</span>
            </span>
          ))}
        </div>
        {errors.permissions && <p class="error" id="perm-err" role="alert">{errors.permissions}</p>}
      </fieldset>
      <div class="row">
        <Field label="Application" error={errors.application}>
          {(p) => (
            <select {...p} value={application} onChange={(e) => setApplication(e.currentTarget.value)}>
              <option value="">Any (organization-wide)</option>
              {s.applications.map((a) => <option key={a}>{a}</option>)}
            </select>
          )}
        </Field>
        <Field label="Environment" error={errors.environment}>
          {(p) => (
            <select {...p} value={environment} onChange={(e) => setEnvironment(e.currentTarget.value)}>
              <option value="">Any</option>
              {s.environments.map((a) => <option key={a}>{a}</option>)}
            </select>
          )}
        </Field>
      </div>
      {errors.form && <p class="error" role="alert">{errors.form}</p>}
      <div class="actions">
        <button type="submit" class="primary">Create</button>
        <button type="button" onClick={onCancel}>Cancel</button>
      </div>
    </form>
  );
}

export function KeysPage() {
  const s = useSession();
  const { data, error, loading, reload } = useLoad(() => gql<{ managementKeys: ManagementKey[] }>(`{ managementKeys { ${KEY_FIELDS} } }`).then((d) => d.managementKeys), []);
  const [creating, setCreating] = useState(false);
  const [revealed, setRevealed] = useState<{ title: string; value: string } | null>(null);
  const [rowError, setRowError] = useState<{ id: string; message: string } | null>(null);

  if (!s.can.admin) {
    return (
      <main id="main">
        <h1 tabIndex={-1}>Keys</h1>
        <p>Managing keys needs the Admin permission on an organization-wide key. This key cannot do it.</p>
      </main>
    );
  }
  const run = async (k: ManagementKey, what: 'rotate' | 'disable' | 'delete') => {
    setRowError(null);
    try {
      if (what === 'rotate') {
        const r = await gql<{ rotateManagementKey: { key: string } }>('mutation($id: ID!) { rotateManagementKey(id: $id) { key } }', { id: k.id });
        setRevealed({ title: `New value of ${k.name}`, value: r.rotateManagementKey.key });
      } else if (what === 'disable') await gql('mutation($id: ID!) { disableManagementKey(id: $id) { id } }', { id: k.id });
      else await gql('mutation($id: ID!) { deleteManagementKey(id: $id) }', { id: k.id });
      reload();
    } catch (err) {
      setRowError({ id: k.id, message: messageOf(err) });
    }
  };
  return (
    <main id="main">
      <div class="title-row">
        <h1 tabIndex={-1}>Keys</h1>
        {!creating && <button type="button" class="primary" onClick={() => { setCreating(true); setRevealed(null); }}>New key</button>}
      </div>
      {revealed && <RevealOnce title={revealed.title} label="Key value" hint="Copy this value now and store it safely: it is shown only this once." value={revealed.value} onDone={() => setRevealed(null)} />}
      {creating && (
        <NewKeyForm
          onCancel={() => setCreating(false)}
          onCreated={(name, value) => {
            setCreating(false);
            setRevealed({ title: `Key ${name} created`, value });
            reload();
          }}
        />
      )}
      <Loading error={error} loading={loading} />
      {data && (
        <DataTable caption="Management keys of the organization" columns={['Name', 'Permissions', 'Scope', 'Status', 'Created', 'Rotated']} actions>
          {data.map((k) => (
            <tr key={k.id}>
              <th scope="row" id={`key-${k.id}`}>
                {k.name}
                {k.id === s.viewer.id && <span class="badge">this key</span>}
              </th>
              <td>{k.permissions.join(', ')}</td>
              <td>{k.application ?? 'any application'}{' · '}{k.environment ?? 'any environment'}</td>
              <td>{k.disabled ? <span class="badge off">Disabled</span> : <span class="badge on">Active</span>}</td>
              <td>{when(k.createdAt)}</td>
              <td>{when(k.rotatedAt)}</td>
              <td class="row-actions">
                <ConfirmButton label="Rotate" question={`Rotate ${k.name}? The old value stops working at once.`} confirmLabel="Yes, rotate" describedBy={`key-${k.id}`} onConfirm={() => run(k, 'rotate')} />
                {!k.disabled && <ConfirmButton label="Disable" question={`Disable ${k.name}?`} confirmLabel="Yes, disable" describedBy={`key-${k.id}`} onConfirm={() => run(k, 'disable')} />}
                <ConfirmButton label="Delete" question={`Delete ${k.name}?`} confirmLabel="Yes, delete" danger describedBy={`key-${k.id}`} onConfirm={() => run(k, 'delete')} />
                {rowError?.id === k.id && <p class="error" role="alert">{rowError.message}</p>}
              </td>
            </tr>
          ))}
        </DataTable>
      )}
    </main>
  );
}
