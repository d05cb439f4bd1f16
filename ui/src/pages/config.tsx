/** One stage (or stage + clientId) configuration, edited in a form: rules, conditions, allocations. */
import { useState } from 'preact/hooks';
import { sameName } from '../../../src/domain/name-matching';
import { gql, CONFIG_FIELDS, type Flag, type FlagConfig } from '../api';
import { ConditionsEditor } from '../conditions';
import { ConfirmButton, Field, messageOf, Status, useBusy, useId, useLoad } from '../components';
import { draftOf, knownPaths, newRule, placeApiError, toInput, type ConfigDraft, type Errors, type RuleDraft } from '../config-form';
import { BASE } from '../router';

/** A segment a rule may name (docs/api.md, "Segments"): the flag's application's, or organization-wide. */
export interface SegmentOption { name: string; application: string | null; description: string | null }

/** The segments a rule of `flag` may use, of those the key can see. */
export const segmentsFor = (flag: Flag, all: readonly SegmentOption[]) => all.filter((x) => x.application === null || sameName(x.application, flag.project));

/** The segments a rule names, and a chooser to add one by name. */
function RuleSegments(props: { rule: RuleDraft; n: number; at: string; errors: Errors; segments: readonly SegmentOption[]; onChange: (segments: string[]) => void }) {
  const { rule, n, at, errors } = props;
  const available = props.segments.filter((x) => !rule.segments.includes(x.name));
  const [choice, setChoice] = useState('');
  const chosen = available.some((x) => x.name === choice) ? choice : (available[0]?.name ?? '');
  const error = errors[`${at}.segments`];
  return (
    <>
      <h4>Segments <span class="hint">(the user must also be in every one)</span></h4>
      {rule.segments.length === 0 ? (
        props.segments.length > 0 && <p class="hint">None.</p>
      ) : (
        <ul class="chips" aria-label={`Segments of rule ${n}`}>
          {rule.segments.map((name) => (
            <li key={name}>
              <span class="tag">{name}</span>
              <button type="button" class="icon" aria-label={`Remove segment ${name} from rule ${n}`} onClick={() => props.onChange(rule.segments.filter((x) => x !== name))}>
                Remove
              </button>
            </li>
          ))}
        </ul>
      )}
      {error && <p class="error" role="alert">{error}</p>}
      {available.length > 0 ? (
        <div class="row end">
          <Field label="Segment" srSuffix={` for rule ${n}`}>
            {(p) => (
              <select {...p} value={chosen} onChange={(e) => setChoice(e.currentTarget.value)}>
                {available.map((x) => (
                  <option key={x.name} value={x.name}>
                    {x.name}
                    {x.description ? ` (${x.description})` : ''}
                  </option>
                ))}
              </select>
            )}
          </Field>
          <button type="button" onClick={() => chosen && props.onChange([...rule.segments, chosen])}>
            Add segment to rule {n}
          </button>
        </div>
      ) : (
        props.segments.length === 0 && (
          <p class="hint">
            None: no segment can be used here yet. Create one on the <a href={`${BASE}segments`}>Segments</a> page.
          </p>
        )
      )}
    </>
  );
}

function RuleEditor(props: { flag: Flag; rule: RuleDraft; index: number; errors: Errors; segments: readonly SegmentOption[]; onChange: (r: RuleDraft | null) => void }) {
  const { flag, rule, index: i, errors } = props;
  const at = `rules[${i}]`;
  const n = i + 1;
  const set = (patch: Partial<RuleDraft>) => props.onChange({ ...rule, ...patch });
  const setAlloc = (j: number, patch: Partial<RuleDraft['allocations'][number]>) =>
    set({ allocations: rule.allocations.map((a, k) => (k === j ? { ...a, ...patch } : a)) });
  return (
    <fieldset class="rule">
      <legend>Rule {n}</legend>
      {errors[at] && <p class="error" role="alert">{errors[at]}</p>}
      <div class="row">
        <Field label={`Priority of rule ${n}`} error={errors[`${at}.priority`]} hint="Lower numbers are checked first." class="narrow">
          {(p) => <input {...p} type="number" step="1" value={rule.priority} onInput={(e) => set({ priority: e.currentTarget.value })} />}
        </Field>
        <button type="button" class="danger-link" onClick={() => props.onChange(null)}>Remove rule {n}</button>
      </div>
      <h4>Conditions <span class="hint">(all must match; none matches every user)</span></h4>
      <ConditionsEditor
        conditions={rule.conditions}
        at={at}
        errors={errors}
        suffix={(j) => ` of rule ${n}, condition ${j + 1}`}
        addLabel={`Add condition to rule ${n}`}
        removeLabel={(j) => `Remove condition ${j + 1} of rule ${n}`}
        onChange={(conditions) => set({ conditions })}
      />
      <RuleSegments rule={rule} n={n} at={at} errors={errors} segments={props.segments} onChange={(segments) => set({ segments })} />
      <h4>Allocations <span class="hint">(add up to 100%)</span></h4>
      {rule.allocations.map((a, j) => {
        const aat = `${at}.allocations[${j}]`;
        const suffix = ` of rule ${n}, allocation ${j + 1}`;
        return (
          <div class="row allocation" key={j}>
            <Field label="Variant" srSuffix={suffix} error={errors[`${aat}.variantKey`]}>
              {(p) => (
                <select {...p} value={a.variantKey} onChange={(e) => setAlloc(j, { variantKey: e.currentTarget.value })}>
                  {!flag.variants.some((v) => v.key === a.variantKey) && <option value={a.variantKey}>{a.variantKey || '(choose)'}</option>}
                  {flag.variants.map((v) => <option key={v.key}>{v.key}</option>)}
                </select>
              )}
            </Field>
            <Field label="Percentage" srSuffix={suffix} error={errors[`${aat}.percentage`]} class="narrow">
              {(p) => <input {...p} type="number" min="0" max="100" step="any" value={a.percentage} onInput={(e) => setAlloc(j, { percentage: e.currentTarget.value })} />}
            </Field>
            <button type="button" class="icon" aria-label={`Remove allocation ${j + 1} of rule ${n}`} onClick={() => set({ allocations: rule.allocations.filter((_, k) => k !== j) })}>
              Remove
            </button>
          </div>
        );
      })}
      {errors[`${at}.allocations`] && <p class="error" role="alert">{errors[`${at}.allocations`]}</p>}
      <button type="button" onClick={() => set({ allocations: [...rule.allocations, { variantKey: flag.variants[0]?.key ?? '', percentage: '0' }] })}>
        Add allocation to rule {n}
      </button>
    </fieldset>
  );
}

/**
 * A configuration's settings and rules as form controls, on a draft: the configuration editor
 * below and a scheduled change of a whole configuration (pages/schedules.tsx) both use it.
 * `enabled`: also show the "Enabled" checkbox (the editor has its own switch, saved at once).
 */
export function ConfigFields(props: {
  flag: Flag;
  draft: ConfigDraft;
  set: (patch: Partial<ConfigDraft>) => void;
  errors: Errors;
  segments: readonly SegmentOption[];
  title: string;
  disabled: boolean;
  enabled?: boolean;
}) {
  const { flag, draft, set, errors, title } = props;
  return (
    <fieldset disabled={props.disabled} class="plain">
      <legend class="sr-only">Settings of {title}</legend>
      {props.enabled && (
        <label class="switch">
          <input type="checkbox" checked={draft.enabled} onChange={(e) => set({ enabled: e.currentTarget.checked })} />
          Enabled
        </label>
      )}
      <div class="row">
        <Field label="Default variant" error={errors.defaultVariantKey}>
          {(p) => (
            <select {...p} value={draft.defaultVariantKey} onChange={(e) => set({ defaultVariantKey: e.currentTarget.value })}>
              {flag.variants.map((v) => <option key={v.key}>{v.key}</option>)}
            </select>
          )}
        </Field>
        <Field label="Rollout percentage" error={errors.rolloutPercentage} class="narrow">
          {(p) => <input {...p} type="number" min="0" max="100" step="any" value={draft.rolloutPercentage} onInput={(e) => set({ rolloutPercentage: e.currentTarget.value })} />}
        </Field>
        <Field label="Enrollment cut-off" error={errors.enrollmentCutoff} hint="Optional %: users above it are not newly enrolled." class="narrow">
          {(p) => <input {...p} type="number" min="0" max="100" step="any" value={draft.enrollmentCutoff} onInput={(e) => set({ enrollmentCutoff: e.currentTarget.value })} />}
        </Field>
        <Field label="Active from" error={errors.activeFrom} hint="Optional, your local time.">
          {(p) => <input {...p} type="datetime-local" value={draft.activeFrom} onInput={(e) => set({ activeFrom: e.currentTarget.value })} />}
        </Field>
        <Field label="Active until" error={errors.activeUntil} hint="Optional, your local time.">
          {(p) => <input {...p} type="datetime-local" value={draft.activeUntil} onInput={(e) => set({ activeUntil: e.currentTarget.value })} />}
        </Field>
      </div>
      <h4>Rules <span class="hint">({draft.rules.length === 0 ? 'none: everyone in the rollout gets the default variant' : 'the first matching rule by priority decides'})</span></h4>
      {draft.rules.map((r, i) => (
        <RuleEditor key={i} flag={flag} rule={r} index={i} errors={errors} segments={props.segments} onChange={(nr) => set({ rules: nr === null ? draft.rules.filter((_, k) => k !== i) : draft.rules.map((x, k) => (k === i ? nr : x)) })} />
      ))}
      {errors.rules && <p class="error" role="alert">{errors.rules}</p>}
      <button type="button" onClick={() => set({ rules: [...draft.rules, newRule(flag, draft.rules)] })}>Add rule</button>
    </fieldset>
  );
}

/**
 * A configuration form's draft and the messages of its last attempt (the editor's and the schedule
 * form's). `set` edits the draft and clears those messages: they named a draft that is gone.
 */
export function useConfigDraft(init: () => ConfigDraft) {
  const [draft, setDraft] = useState<ConfigDraft>(init);
  const [errors, setErrors] = useState<Errors>({});
  const set = (patch: Partial<ConfigDraft>) => {
    setDraft((d) => ({ ...d, ...patch }));
    setErrors({});
  };
  return { draft, setDraft, set, errors, setErrors };
}

export function ConfigEditor(props: { flag: Flag; stage: string; clientId: string | null; config?: FlagConfig; segments: readonly SegmentOption[]; canWrite: boolean; onChanged: () => void }) {
  const { flag, stage, clientId, config } = props;
  const { draft, setDraft, set, errors, setErrors } = useConfigDraft(() => draftOf(flag, stage, clientId, config));
  const [status, setStatus] = useState<string | null>(null);
  const [busy, whileBusy] = useBusy();
  const id = useId('cfg');
  const title = clientId === null ? stage : `${stage}, client ${clientId}`;

  const fail = (err: unknown) => setErrors(placeApiError(messageOf(err), knownPaths(draft)));
  // A protected environment (docs/change-requests.md): Save becomes "Propose change", a change request.
  const policy = useLoad(() => gql<{ environmentPolicy: { requiredApprovals: number } | null }>('query($s: String!) { environmentPolicy(stage: $s) { requiredApprovals } }', { s: stage }), [stage]);
  const isProtected = (policy.data?.environmentPolicy?.requiredApprovals ?? 0) > 0;
  const [proposed, setProposed] = useState<string | null>(null);

  const toggle = async (enabled: boolean) => {
    set({ enabled });
    if (!config || isProtected) return; // saved (or proposed) with the form
    setErrors({});
    await whileBusy(
      async () => {
        await gql('mutation($n: String!, $s: String!, $c: String, $e: Boolean!) { setFlagConfigEnabled(name: $n, stage: $s, clientId: $c, enabled: $e) { enabled } }', { n: flag.name, s: stage, c: clientId, e: enabled });
        setStatus(`${title}: ${enabled ? 'enabled' : 'disabled'}.`);
        props.onChanged();
      },
      (err) => {
        set({ enabled: !enabled });
        fail(err);
      },
    );
  };

  const save = async (e: Event) => {
    e.preventDefault();
    setStatus(null);
    const { errors: errs, input } = toInput(flag, draft);
    setErrors(errs);
    if (!input) {
      setStatus('Not saved: fix the fields marked above.');
      return;
    }
    if (isProtected) {
      await whileBusy(async () => {
        const r = await gql<{ createChangeRequest: { id: string } }>('mutation($i: ChangeRequestInput!) { createChangeRequest(input: $i) { id } }', {
          i: { title: `${flag.name}: ${title}`, changes: [{ op: 'upsertConfig', flag: flag.name, input }] },
        });
        setProposed(r.createChangeRequest.id);
        setStatus(`${title}: proposed as a change request; it applies once reviewed.`);
      }, fail);
      return;
    }
    await whileBusy(
      async () => {
        const r = await gql<{ upsertFlagConfig: FlagConfig }>(`mutation($n: String!, $i: UpsertFlagConfigInput!) { upsertFlagConfig(name: $n, input: $i) { ${CONFIG_FIELDS} } }`, { n: flag.name, i: input });
        setDraft(draftOf(flag, stage, clientId, r.upsertFlagConfig));
        setStatus(`${title}: saved.`);
        props.onChanged();
      },
      fail,
    );
  };

  const remove = async () => {
    try {
      await gql('mutation($n: String!, $s: String!, $c: String) { deleteFlagConfig(name: $n, stage: $s, clientId: $c) }', { n: flag.name, s: stage, c: clientId });
      setDraft(draftOf(flag, stage, clientId, undefined));
      setStatus(`${title}: configuration deleted.`);
      props.onChanged();
    } catch (err) {
      fail(err);
    }
  };

  return (
    <section class="card config" aria-labelledby={`${id}-h`}>
      <form onSubmit={save} novalidate>
        <div class="title-row">
          <h3 id={`${id}-h`}>
            <span class="sr-only">Configuration </span>
            {title}
          </h3>
          <label class="switch">
            <input type="checkbox" role="switch" checked={draft.enabled} disabled={!props.canWrite || busy} onChange={(e) => toggle(e.currentTarget.checked)} />
            Enabled
          </label>
          <span class={`badge ${!config ? 'muted' : draft.enabled ? 'on' : 'off'}`}>{!config ? 'Not saved yet' : draft.enabled ? 'On' : 'Off'}</span>
        </div>
        <ConfigFields flag={flag} draft={draft} set={set} errors={errors} segments={props.segments} title={title} disabled={!props.canWrite} />
        {errors.form && <p class="error" role="alert">{errors.form}</p>}
        {errors.clientId && <p class="error" role="alert">{errors.clientId}</p>}
        {props.canWrite && (
          <div class="actions">
            <button type="submit" class="primary" disabled={busy}>{isProtected ? 'Propose change' : 'Save'}</button>
            {config && <ConfirmButton label="Delete configuration" question={`Delete the ${title} configuration?`} confirmLabel="Yes, delete it" danger onConfirm={remove} />}
          </div>
        )}
        <Status text={status} />
        {proposed && <p><a href={`${BASE}change-requests/${proposed}`}>Open the change request</a></p>}
      </form>
    </section>
  );
}
