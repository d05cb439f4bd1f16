/** The organization: environments and applications (add, rename, remove) and kill-switch rules. */
import { useState } from 'preact/hooks';
import { NAME_MSG, NAME_RE } from '../../../src/domain/input-formats';
import { ApiError, gql, type KillSwitchRule } from '../api';
import { ConfirmButton, Field, Loading, messageOf, Status, useLoad } from '../components';
import { FlagNameInput } from '../flag-picker';
import { useSession } from '../session';
import { PolicyCard } from './policies';

type ListKind = 'environments' | 'applications';
const SINGULAR: Record<ListKind, string> = { environments: 'environment', applications: 'application' };
const MUTATIONS: Record<ListKind, { rename: string; replace: string }> = {
  environments: { rename: 'renameEnvironment', replace: 'replaceEnvironments' },
  applications: { rename: 'renameApplication', replace: 'replaceApplications' },
};

function NameRow({ kind, name, list, canEdit }: { kind: ListKind; name: string; list: string[]; canEdit: boolean }) {
  const s = useSession();
  const [renaming, setRenaming] = useState(false);
  const [to, setTo] = useState(name);
  const [error, setError] = useState<string | null>(null);
  const m = MUTATIONS[kind];
  const rename = async (e: Event) => {
    e.preventDefault();
    if (!NAME_RE.test(to)) return setError(`The name ${NAME_MSG}.`);
    try {
      await gql(`mutation($f: String!, $t: String!) { ${m.rename}(from: $f, to: $t) }`, { f: name, t: to });
      setRenaming(false);
      setError(null);
      await s.refreshOrg();
    } catch (err) {
      setError(messageOf(err));
    }
  };
  const remove = async () => {
    try {
      await gql(`mutation($l: [String!]!) { ${m.replace}(${kind}: $l) }`, { l: list.filter((x) => x !== name) });
      await s.refreshOrg();
    } catch (err) {
      setError(messageOf(err));
    }
  };
  return (
    <li>
      {renaming ? (
        <form class="row inline end" onSubmit={rename} novalidate>
          <Field label={`New name for ${name}`} error={error}>
            {(p) => <input {...p} value={to} ref={(el) => el?.focus()} onInput={(e) => setTo(e.currentTarget.value)} />}
          </Field>
          <button type="submit" class="primary">Save name</button>
          <button type="button" onClick={() => { setRenaming(false); setError(null); setTo(name); }}>Cancel</button>
        </form>
      ) : (
        <div class="row inline">
          <span class="name">{name}</span>
          {canEdit && (
            <>
              <button type="button" aria-label={`Rename ${name}`} onClick={() => setRenaming(true)}>Rename</button>
              <ConfirmButton label="Remove" question={`Remove ${SINGULAR[kind]} ${name}?`} confirmLabel="Yes, remove" danger onConfirm={remove} describedBy={undefined} />
            </>
          )}
          {error && <p class="error" role="alert">{error}</p>}
        </div>
      )}
    </li>
  );
}

function NameList({ kind, title, hint }: { kind: ListKind; title: string; hint: string }) {
  const s = useSession();
  const list = s[kind];
  const [adding, setAdding] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [status, setStatus] = useState<string | null>(null);
  const add = async (e: Event) => {
    e.preventDefault();
    setStatus(null);
    const name = adding.trim();
    if (!NAME_RE.test(name)) return setError(`The name ${NAME_MSG}.`);
    try {
      await gql(`mutation($l: [String!]!) { ${MUTATIONS[kind].replace}(${kind}: $l) }`, { l: [...list, name] });
      setAdding('');
      setError(null);
      setStatus(`Added ${name}.`);
      await s.refreshOrg();
    } catch (err) {
      setError(messageOf(err));
    }
  };
  return (
    <section class="card" aria-labelledby={`${kind}-h`}>
      <h2 id={`${kind}-h`}>{title}</h2>
      <p class="hint">{hint}</p>
      <ul class="names">
        {list.map((n) => <NameRow key={n} kind={kind} name={n} list={list} canEdit={s.can.orgSettings} />)}
      </ul>
      {s.can.orgSettings && (
        <form class="row inline end" onSubmit={add} novalidate>
          <Field label={`New ${SINGULAR[kind]}`} error={error}>{(p) => <input {...p} value={adding} onInput={(e) => setAdding(e.currentTarget.value)} />}</Field>
          <button type="submit">Add {SINGULAR[kind]}</button>
        </form>
      )}
      <Status text={status} />
    </section>
  );
}

function KillSwitch() {
  const s = useSession();
  const { data, error, loading, reload } = useLoad(() => gql<{ killSwitch: KillSwitchRule[] }>('{ killSwitch { flag application environment } }'), []);
  const [rule, setRule] = useState<KillSwitchRule>({ flag: null, application: null, environment: null });
  const [formError, setFormError] = useState<string | null>(null);
  const [flagError, setFlagError] = useState<string | null>(null);
  const [status, setStatus] = useState<string | null>(null);
  const replace = async (rules: KillSwitchRule[], done: string) => {
    setFormError(null);
    setStatus(null);
    try {
      await gql('mutation($r: [KillSwitchRuleInput!]!) { replaceKillSwitch(rules: $r) { flag } }', { r: rules });
      setStatus(done);
      reload();
    } catch (err) {
      setFormError(messageOf(err));
    }
  };
  const describe = (r: KillSwitchRule) =>
    [r.flag ? `flag ${r.flag}` : 'every flag', r.application ? `in application ${r.application}` : 'in every application', r.environment ? `in ${r.environment}` : 'in every environment'].join(' ');
  return (
    <section class="card" aria-labelledby="ks-h">
      <h2 id="ks-h">Kill switch</h2>
      <p class="hint">An active rule turns matching flags off at once: they answer their default variant with reason <code>killswitch</code>.</p>
      <Loading error={error} loading={loading} />
      {data && (
        <>
          {data.killSwitch.length === 0 ? <p>No kill-switch rule is active.</p> : (
            <ul class="names">
              {data.killSwitch.map((r, i) => (
                <li key={i} class="row inline">
                  <span class="name">Off: {describe(r)}</span>
                  {s.can.orgSettings && (
                    <button type="button" aria-label={`Remove kill-switch rule: ${describe(r)}`} onClick={() => replace(data.killSwitch.filter((_, j) => j !== i), 'Rule removed.')}>Remove</button>
                  )}
                </li>
              ))}
            </ul>
          )}
          {s.can.orgSettings && (
            <form class="row end" novalidate onSubmit={async (e) => {
              e.preventDefault();
              setFlagError(null);
              setFormError(null);
              const flag = rule.flag?.trim() || null;
              if (!flag && !rule.application && !rule.environment) return setFormError('A rule with no flag, application or environment would turn off every flag. Choose at least one.');
              if (flag) {
                // The name is typed (with suggestions): check that the flag exists before adding.
                try {
                  const r = await gql<{ flag: { name: string } | null }>('query($n: String!) { flag(name: $n) { name } }', { n: flag });
                  if (!r.flag) return setFlagError(`No flag is named ${flag}.`);
                } catch (err) {
                  return setFlagError(err instanceof ApiError && err.code === 'NOT_FOUND' ? `No flag is named ${flag}.` : messageOf(err));
                }
              }
              replace([...data.killSwitch, { ...rule, flag }], 'Rule added.');
            }}>
              <Field label="Kill flag" error={flagError}>
                {(p) => <FlagNameInput {...p} value={rule.flag ?? ''} placeholder="Any flag (type to search)" onValue={(v) => setRule({ ...rule, flag: v || null })} />}
              </Field>
              <Field label="In application">
                {(p) => (
                  <select {...p} value={rule.application ?? ''} onChange={(e) => setRule({ ...rule, application: e.currentTarget.value || null })}>
                    <option value="">Any application</option>
                    {s.applications.map((a) => <option key={a}>{a}</option>)}
                  </select>
                )}
              </Field>
              <Field label="In environment">
                {(p) => (
                  <select {...p} value={rule.environment ?? ''} onChange={(e) => setRule({ ...rule, environment: e.currentTarget.value || null })}>
                    <option value="">Any environment</option>
                    {s.environments.map((a) => <option key={a}>{a}</option>)}
                  </select>
                )}
              </Field>
              <button type="submit" class="danger">Add kill-switch rule</button>
            </form>
          )}
          {formError && <p class="error" role="alert">{formError}</p>}
          <Status text={status} />
        </>
      )}
    </section>
  );
}

export function OrganizationPage() {
  const s = useSession();
  return (
    <main id="main">
      <h1 tabIndex={-1}>Organization</h1>
      {!s.can.orgSettings && <p class="notice">Changing these settings needs CanWrite on a key without application or environment scope; this key can only look.</p>}
      <div class="grid">
        <NameList kind="environments" title="Environments" hint="The stages flags are configured and evaluated in. Renaming one renames it everywhere: flags, configurations, keys." />
        <NameList kind="applications" title="Applications" hint="Each flag belongs to one application. Renaming one renames it everywhere: flags, keys, kill-switch rules." />
      </div>
      <KillSwitch />
      <PolicyCard />
    </main>
  );
}
