/** A flag's page: metadata, variants, dependencies, environments, configurations, evaluation, scheduled changes. */
import { useEffect, useRef, useState } from 'preact/hooks';
import { inScope } from '../../../src/domain/name-matching';
import { FLAG_FIELDS, gql, gqlPartial, type Evaluation, type Flag } from '../api';
import { ConfirmButton, Field, Loading, messageOf, Status, useBusy, useLoad, when } from '../components';
import { BASE, navigate } from '../router';
import { useSession } from '../session';
import { ConfigEditor, segmentsFor, type SegmentOption } from './config';
import { SchedulesPanel } from './schedules';
import { FlagNameInput } from '../flag-picker';
import { rowsOf, VariantsEditor, variantsFromRows, type VariantRow } from './variants';
import { InsightsPanel } from './insights';
import { FLAG_PURPOSES } from '../../../src/domain/types';

function DetailsForm({ flag, canWrite, saved, onSaved }: { flag: Flag; canWrite: boolean; saved?: string; onSaved: (status: string) => void }) {
  const [description, setDescription] = useState(flag.description ?? '');
  const [tags, setTags] = useState(flag.tags.join(', '));
  const [purpose, setPurpose] = useState<string>(flag.purpose ?? 'release');
  const [rows, setRows] = useState<VariantRow[]>(rowsOf(flag.variants));
  const [deps, setDeps] = useState(flag.dependencies.map((d) => ({ flag: d.flag, variants: (d.variants ?? []).join(', ') })));
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [status, setStatus] = useState<string | null>(saved ?? null);

  const save = async (e: Event) => {
    e.preventDefault();
    setStatus(null);
    const v = variantsFromRows(flag.type, rows);
    const errs: Record<string, string> = {};
    if (!v.ok) errs.variants = v.error;
    deps.forEach((d, i) => {
      if (!d.flag.trim()) errs[`dependencies[${i}]`] = 'Enter the name of a parent flag.';
      else if (d.flag.trim() === flag.name) errs[`dependencies[${i}]`] = 'A flag cannot depend on itself.';
    });
    setErrors(errs);
    if (!v.ok || Object.keys(errs).length > 0) return;
    const input = {
      description: description || null,
      tags: tags.split(',').map((t) => t.trim()).filter(Boolean),
      purpose,
      variants: v.variants,
      dependencies: deps.map((d) => {
        const variants = d.variants.split(',').map((x) => x.trim()).filter(Boolean);
        return { flag: d.flag.trim(), variants: variants.length > 0 ? variants : null };
      }),
    };
    try {
      await gql('mutation($n: String!, $i: UpdateFlagInput!) { updateFlag(name: $n, input: $i) { name } }', { n: flag.name, i: input });
      setStatus('Details saved.');
      onSaved('Details saved.');
    } catch (err) {
      const msg = messageOf(err);
      if (/^variants|variant/.test(msg)) setErrors({ variants: msg });
      else if (/^dependencies|depend|cycle|parent/i.test(msg)) setErrors({ dependencies: msg });
      else if (/^tags/.test(msg)) setErrors({ tags: msg });
      else if (/^description/.test(msg)) setErrors({ description: msg });
      else setErrors({ form: msg });
    }
  };

  return (
    <form class="card" onSubmit={save} novalidate aria-labelledby="details-h">
      <h2 id="details-h">Details</h2>
      <fieldset class="plain" disabled={!canWrite}>
        <legend class="sr-only">Details of {flag.name}</legend>
        <Field label="Description" error={errors.description}>
          {(p) => <textarea {...p} rows={2} value={description} onInput={(e) => setDescription(e.currentTarget.value)} />}
        </Field>
        <Field label="Tags" hint="Separated by commas." error={errors.tags}>
          {(p) => <input {...p} value={tags} onInput={(e) => setTags(e.currentTarget.value)} />}
        </Field>
        <Field label="Purpose" hint="Sets how long the flag is expected to live before it is called stale.">
          {(p) => (
            <select {...p} value={purpose} onChange={(e) => setPurpose(e.currentTarget.value)}>
              {FLAG_PURPOSES.map((x) => <option key={x}>{x}</option>)}
            </select>
          )}
        </Field>
        <VariantsEditor type={flag.type} rows={rows} onChange={setRows} error={errors.variants} />
        <fieldset>
          <legend>Dependencies</legend>
          <p class="hint">This flag only takes effect for a user when each parent flag is on for them (optionally: with one of the listed variants).</p>
          {deps.map((d, i) => (
            <div class="row" key={i}>
              <Field label={`Parent flag ${i + 1}`} hint="Type to search the flags." error={errors[`dependencies[${i}]`]}>
                {(p) => <FlagNameInput {...p} value={d.flag} exclude={flag.name} onValue={(v) => setDeps(deps.map((x, j) => (j === i ? { ...x, flag: v } : x)))} />}
              </Field>
              <Field label={`Required variants of parent ${i + 1}`} hint="Optional, separated by commas." class="grow">
                {(p) => <input {...p} value={d.variants} onInput={(e) => setDeps(deps.map((x, j) => (j === i ? { ...x, variants: e.currentTarget.value } : x)))} />}
              </Field>
              <button type="button" class="icon" aria-label={`Remove dependency ${i + 1}`} onClick={() => setDeps(deps.filter((_, j) => j !== i))}>Remove</button>
            </div>
          ))}
          <button type="button" onClick={() => setDeps([...deps, { flag: '', variants: '' }])}>Add dependency</button>
          {errors.dependencies && <p class="error" role="alert">{errors.dependencies}</p>}
        </fieldset>
      </fieldset>
      {errors.form && <p class="error" role="alert">{errors.form}</p>}
      {canWrite && (
        <div class="actions">
          <button type="submit" class="primary">Save details</button>
        </div>
      )}
      <Status text={status} />
    </form>
  );
}

function EnvironmentsForm({ flag, canWrite, saved, onSaved }: { flag: Flag; canWrite: boolean; saved?: string; onSaved: (status: string) => void }) {
  const s = useSession();
  const [chosen, setChosen] = useState<string[]>(flag.environments);
  const [error, setError] = useState<string | null>(null);
  const [status, setStatus] = useState<string | null>(saved ?? null);
  const save = async (e: Event) => {
    e.preventDefault();
    setStatus(null);
    setError(null);
    try {
      await gql('mutation($n: String!, $e: [String!]!) { updateFlagEnvironments(name: $n, environments: $e) { name } }', { n: flag.name, e: chosen });
      setStatus('Environments saved.');
      onSaved('Environments saved.');
    } catch (err) {
      setError(messageOf(err));
    }
  };
  return (
    <form class="card" onSubmit={save} aria-labelledby="envs-h">
      <h2 id="envs-h">Environments</h2>
      <fieldset class="plain" disabled={!canWrite} aria-describedby={error ? 'envs-err' : undefined}>
        <legend class="sr-only">Environments this flag uses</legend>
        <div class="checks">
          {s.environments.map((env) => (
            <label key={env}>
              <input type="checkbox" checked={chosen.includes(env)} onChange={(e) => setChosen(e.currentTarget.checked ? [...chosen, env] : chosen.filter((x) => x !== env))} /> {env}
            </label>
          ))}
        </div>
      </fieldset>
      {error && <p class="error" id="envs-err" role="alert">{error}</p>}
      {canWrite && <div class="actions"><button type="submit">Save environments</button></div>}
      <Status text={status} />
    </form>
  );
}

function EvaluationPanel({ flag }: { flag: Flag }) {
  const [userId, setUserId] = useState('user-1');
  const [stage, setStage] = useState(flag.environments.find((e) => /prod/i.test(e)) ?? flag.environments[0] ?? '');
  const [context, setContext] = useState('{}');
  const [clientId, setClientId] = useState('');
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [result, setResult] = useState<Evaluation | null>(null);
  const [busy, whileBusy] = useBusy();
  const run = async (e: Event) => {
    e.preventDefault();
    const errs: Record<string, string> = {};
    let ctx: unknown = null;
    if (!userId.trim()) errs.userId = 'Enter a user id.';
    if (context.trim() !== '') {
      try {
        ctx = JSON.parse(context);
        if (ctx === null || typeof ctx !== 'object' || Array.isArray(ctx)) errs.context = 'The context must be a JSON object, like {"country": "NL"}.';
      } catch (err) {
        errs.context = `The context is not valid JSON: ${(err as Error).message}`;
      }
    }
    setErrors(errs);
    if (Object.keys(errs).length > 0) return;
    await whileBusy(
      async () => {
        const r = await gql<{ explainEvaluation: Evaluation }>(
          'query($k: String!, $u: String!, $s: String!, $c: Any, $cl: String) { explainEvaluation(key: $k, userId: $u, stage: $s, context: $c, clientId: $cl) { key variant reason { code message ruleId } } }',
          { k: flag.name, u: userId, s: stage, c: ctx, cl: clientId.trim() || null },
        );
        setResult(r.explainEvaluation);
      },
      (err) => {
        const msg = messageOf(err);
        setResult(null);
        if (/context/i.test(msg)) setErrors({ context: msg });
        else if (/userId/.test(msg)) setErrors({ userId: msg });
        else if (/clientId/.test(msg)) setErrors({ clientId: msg });
        else if (/nvironment|stage/.test(msg)) setErrors({ stage: msg });
        else setErrors({ form: msg });
      },
    );
  };
  return (
    <section class="card" aria-labelledby="eval-h">
      <h2 id="eval-h">Try an evaluation</h2>
      <p class="hint">Shows what an application would get for this user, with the reason. Nothing is recorded.</p>
      <form onSubmit={run} novalidate>
        <div class="row">
          <Field label="User ID" error={errors.userId}>{(p) => <input {...p} value={userId} onInput={(e) => setUserId(e.currentTarget.value)} />}</Field>
          <Field label="Stage" error={errors.stage}>
            {(p) => (
              <select {...p} value={stage} onChange={(e) => setStage(e.currentTarget.value)}>
                {flag.environments.map((env) => <option key={env}>{env}</option>)}
              </select>
            )}
          </Field>
          <Field label="Client ID" hint="Optional." error={errors.clientId}>{(p) => <input {...p} value={clientId} onInput={(e) => setClientId(e.currentTarget.value)} />}</Field>
        </div>
        <Field label="Context (JSON)" error={errors.context} hint='For example {"country": "NL", "plan": "pro"}'>
          {(p) => <textarea {...p} class="mono" rows={3} spellcheck={false} value={context} onInput={(e) => setContext(e.currentTarget.value)} />}
        </Field>
        {errors.form && <p class="error" role="alert">{errors.form}</p>}
        <div class="actions"><button type="submit" class="primary" disabled={busy}>Evaluate</button></div>
      </form>
      <div aria-live="polite">
        {result && (
          <dl class="result" aria-label="Evaluation result">
            <div><dt>Variant</dt><dd><code>{result.key ?? '(none)'}</code></dd></div>
            <div><dt>Value</dt><dd><code>{JSON.stringify(result.variant)}</code></dd></div>
            <div><dt>Reason</dt><dd><code class="reason">{result.reason.code}</code></dd></div>
            <div class="wide"><dt>Message</dt><dd>{result.reason.message}</dd></div>
            {result.reason.ruleId && <div><dt>Rule</dt><dd><code>{result.reason.ruleId}</code></dd></div>}
          </dl>
        )}
      </div>
    </section>
  );
}

function ClientConfigAdder({ stage, onAdd }: { stage: string; onAdd: (clientId: string) => void }) {
  const [value, setValue] = useState('');
  const [error, setError] = useState<string | null>(null);
  return (
    <div class="row end adder">
      <Field label={`Client ID for ${stage}`} error={error}>
        {(p) => <input {...p} value={value} onInput={(e) => setValue(e.currentTarget.value)} />}
      </Field>
      <button type="button" onClick={() => {
        if (!value.trim()) return setError('Enter a client id.');
        setError(null);
        onAdd(value.trim());
        setValue('');
      }}>
        Add client configuration
      </button>
    </div>
  );
}

export function FlagPage({ name }: { name: string }) {
  const s = useSession();
  const [version, setVersion] = useState(0);
  const { data, error, loading, reload } = useLoad(
    // The segments its rules may choose (docs/api.md, "Segments") come with the flag, in the same request.
    // A failure to list them does not keep the flag from showing.
    async () => {
      const r = await gqlPartial<{ flag?: Flag; segments?: SegmentOption[] | null }>(`query($n: String!) { flag(name: $n) { ${FLAG_FIELDS} } segments { name application description } }`, { n: name });
      const failed = r.errors.find((e) => e.path[0] === 'flag') ?? (r.data.flag === undefined ? r.errors[0] : undefined);
      if (failed) throw failed;
      return r.data as { flag: Flag; segments?: SegmentOption[] | null };
    },
    [name],
  );
  const [extraClients, setExtraClients] = useState<{ stage: string; clientId: string }[]>([]);
  const [actionError, setActionError] = useState<string | null>(null);
  const [status, setStatus] = useState<string | null>(null);
  /** What a form said before the page was redrawn with the saved flag (it starts afresh). */
  const [saved, setSaved] = useState<{ details?: string; envs?: string }>({});
  const redraw = useRef(false);
  /** Configurations shown afresh (a scheduled change applied them): each one's editor is keyed by its count. */
  const [fresh, setFresh] = useState<Record<string, number>>({});
  const refreshing = useRef<string[]>([]);
  // After a change, the forms start afresh from the saved flag: once the reload has answered
  // (starting them from the flag as it was would show the old values).
  useEffect(() => {
    if (redraw.current && data) {
      redraw.current = false;
      setVersion((v) => v + 1);
    }
    if (refreshing.current.length > 0 && data) {
      const ids = refreshing.current;
      refreshing.current = [];
      setFresh((f) => Object.fromEntries([...Object.entries(f), ...ids.map((k) => [k, (f[k] ?? 0) + 1])]));
    }
  }, [data]);
  const refresh = (said: { details?: string; envs?: string } = {}) => {
    setSaved(said);
    redraw.current = true;
    reload();
  };
  if (!data) return <main id="main"><h1 tabIndex={-1}>{name}</h1><Loading error={error} loading={loading} /></main>;
  if (!data.flag) return <main id="main"><h1 tabIndex={-1}>{name}</h1><p class="error" role="alert">No flag is named {name}.</p><p><a href={BASE}>Go to the flags</a></p></main>;
  const flag = data.flag;
  const segments = segmentsFor(flag, data.segments ?? []);
  const cfgKey = (stage: string, clientId: string | null) => `${stage}/${clientId ?? ''}/${fresh[`${stage}\u0000${clientId ?? ''}`] ?? 0}`;
  const canWrite = s.can.write && inScope(s.viewer.application, flag.project);
  const canWriteStage = (st: string) => canWrite && inScope(s.viewer.environment, st);
  const act = async (mutation: string, done: string) => {
    setActionError(null);
    setStatus(null);
    try {
      await gql(`mutation($n: String!) { ${mutation}(name: $n) { name } }`, { n: flag.name });
      setStatus(done);
      refresh();
    } catch (err) {
      setActionError(messageOf(err));
    }
  };
  const del = async () => {
    setActionError(null);
    try {
      await gql('mutation($n: String!) { deleteFlag(name: $n) }', { n: flag.name });
      navigate(BASE);
    } catch (err) {
      setActionError(messageOf(err));
    }
  };
  return (
    <main id="main" key={version}>
      <p class="crumbs"><a href={BASE}>Flags</a> /</p>
      <div class="title-row">
        <h1 tabIndex={-1}>{flag.name}</h1>
        {flag.isArchived && <span class="badge archived">Archived</span>}
        <div class="spacer" />
        {canWrite && (flag.isArchived ? (
          <button type="button" onClick={() => act('restoreFlag', 'Flag restored.')}>Restore</button>
        ) : (
          <ConfirmButton label="Archive" question="Archive this flag? It then evaluates to its default variant." confirmLabel="Yes, archive" onConfirm={() => act('archiveFlag', 'Flag archived.')} />
        ))}
        {canWrite && <ConfirmButton label="Delete" question={`Delete ${flag.name} for good?`} confirmLabel="Yes, delete" danger onConfirm={del} />}
      </div>
      {actionError && <p class="error" role="alert">{actionError}</p>}
      <Status text={status} />
      <p class="meta">
        Application <strong>{flag.project}</strong> · type <strong>{flag.type}</strong> · created {when(flag.createdAt)} · updated {when(flag.updatedAt)}
        {s.hasAudit && <> · <a href={`${BASE}audit?flag=${encodeURIComponent(flag.name)}`}>Audit log for this flag</a></>}
      </p>
      <div class="columns">
        <div class="main-col">
          <h2>Configurations</h2>
          {flag.environments.length === 0 && <p>This flag uses no environment. Choose some under Environments.</p>}
          {flag.environments.map((env) => {
            const clients = [
              ...flag.configs.filter((c) => c.stage === env && c.clientId !== null).map((c) => c.clientId!),
              ...extraClients.filter((x) => x.stage === env && !flag.configs.some((c) => c.stage === env && c.clientId === x.clientId)).map((x) => x.clientId),
            ];
            return (
              <div key={env}>
                <ConfigEditor key={cfgKey(env, null)} flag={flag} stage={env} clientId={null} config={flag.configs.find((c) => c.stage === env && c.clientId === null)} segments={segments} canWrite={canWriteStage(env)} onChanged={reload} />
                {clients.map((cl) => (
                  <ConfigEditor key={cfgKey(env, cl)} flag={flag} stage={env} clientId={cl} config={flag.configs.find((c) => c.stage === env && c.clientId === cl)} segments={segments} canWrite={canWriteStage(env)} onChanged={reload} />
                ))}
                {canWriteStage(env) && <ClientConfigAdder stage={env} onAdd={(clientId) => setExtraClients([...extraClients, { stage: env, clientId }])} />}
              </div>
            );
          })}
        </div>
        <div class="side-col">
          <InsightsPanel name={flag.name} purpose={flag.purpose ?? 'release'} />
          <EvaluationPanel flag={flag} />
          <SchedulesPanel
            flag={flag}
            segments={segments}
            canWriteStage={canWriteStage}
            onApplied={(changed) => {
              refreshing.current.push(...changed.map((c) => `${c.stage}\u0000${c.clientId ?? ''}`));
              reload();
            }}
          />
          <DetailsForm flag={flag} canWrite={canWrite} saved={saved.details} onSaved={(x) => refresh({ details: x })} />
          <EnvironmentsForm flag={flag} canWrite={canWrite} saved={saved.envs} onSaved={(x) => refresh({ envs: x })} />
        </div>
      </div>
    </main>
  );
}
