/**
 * A flag's scheduled changes (docs/api.md, "Scheduled changes"): the list, soonest first, with status, time, what
 * each changes and who scheduled it; a form to schedule an on/off change (`enabled`) or a whole
 * configuration (`config`, edited with the configuration form's fields) at a chosen time; and
 * "Cancel schedule" on a pending one. While a change is pending the list looks again just after
 * its time, and tells the page when one was applied (its configuration is then shown afresh).
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { gql, SCHEDULE_FIELDS, type Flag, type FlagConfig, type Schedule } from '../api';
import { ConfirmButton, Field, messageOf, Status, useBusy, useId } from '../components';
import { draftOf, knownPaths, placeApiError, toInput, type Errors } from '../config-form';
import { ConfigFields, useConfigDraft, type SegmentOption } from './config';

const pad = (n: number) => String(n).padStart(2, '0');
/** A `datetime-local` value (to the second) in the browser's time zone. */
const localInput = (d: Date) =>
  `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
/** The next full hour but one: a sensible first suggestion. */
const defaultTime = () => {
  const d = new Date(Date.now() + 3_600_000);
  d.setMinutes(0, 0, 0);
  return localInput(d);
};
const timeZone = (() => {
  try {
    return Intl.DateTimeFormat().resolvedOptions().timeZone;
  } catch {
    return 'local';
  }
})();
/** A schedule's time for people, to the second (a change a few seconds ahead is told apart). */
const at = (iso: string) => new Date(iso).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium' });

const where = (x: { stage: string; clientId: string | null }) => (x.clientId === null ? x.stage : `${x.stage}, client ${x.clientId}`);

/** What a scheduled configuration sets, in a line. */
function configSummary(c: FlagConfig): string {
  const segs = [...new Set(c.rules.flatMap((r) => r.segments ?? []))];
  const rules = `${c.rules.length} rule${c.rules.length === 1 ? '' : 's'}${segs.length > 0 ? ` (segments ${segs.join(', ')})` : ''}`;
  return `${c.enabled ? 'on' : 'off'}, default variant ${c.defaultVariantKey}, rollout ${c.rolloutPercentage}%, ${rules}`;
}

export const changeText = (x: Schedule) =>
  x.enabled !== null ? (x.enabled ? 'Enable' : 'Disable') : x.config ? `Set the whole configuration: ${configSummary(x.config)}` : 'Set the whole configuration';

const STATUS_CLASS: Record<string, string> = { pending: 'pending', applied: 'on', cancelled: 'archived', failed: 'off' };

type Kind = 'enable' | 'disable' | 'config';

function ScheduleForm(props: { flag: Flag; stages: string[]; segments: readonly SegmentOption[]; onScheduled: (s: Schedule) => void }) {
  const { flag, stages } = props;
  const [stage, setStage] = useState(stages.find((e) => /prod/i.test(e)) ?? stages[0] ?? '');
  const [clientId, setClientId] = useState('');
  const [time, setTime] = useState(defaultTime);
  const [kind, setKind] = useState<Kind>('enable');
  const cid = clientId.trim() || null;
  /** The clientId whose configuration the whole-configuration form starts from: set when the field is left, not per keystroke. */
  const [startedFrom, setStartedFrom] = useState<string | null>(null);
  const current = () => flag.configs.find((c) => c.stage === stage && c.clientId === startedFrom);
  const { draft, setDraft, set, errors, setErrors } = useConfigDraft(() => draftOf(flag, stage, startedFrom, current()));
  const [busy, whileBusy] = useBusy();
  const id = useId('sched');
  // The whole configuration starts from the chosen configuration as it is now.
  useEffect(() => setDraft(draftOf(flag, stage, startedFrom, current())), [stage, startedFrom]); // eslint-disable-line react-hooks/exhaustive-deps

  const submit = async (e: Event) => {
    e.preventDefault();
    const errs: Errors = {};
    const when = time ? new Date(time) : null;
    if (!when || Number.isNaN(when.getTime())) errs.at = 'Enter a date and time.';
    else if (when.getTime() <= Date.now()) errs.at = 'Choose a time in the future.';
    let config: Record<string, unknown> | undefined;
    if (kind === 'config') {
      const r = toInput(flag, { ...draft, stage, clientId: cid });
      Object.assign(errs, r.errors);
      config = r.input;
    }
    setErrors(errs);
    if (Object.keys(errs).length > 0) return;
    const input = { at: when!.toISOString(), stage, clientId: cid, ...(kind === 'config' ? { config } : { enabled: kind === 'enable' }) };
    await whileBusy(
      async () => {
        const r = await gql<{ scheduleFlagChange: Schedule }>(`mutation($n: String!, $i: ScheduleInput!) { scheduleFlagChange(name: $n, input: $i) { ${SCHEDULE_FIELDS} } }`, { n: flag.name, i: input });
        // The stage, client and change stay chosen (for the next one); the time starts afresh.
        setTime(defaultTime());
        props.onScheduled(r.scheduleFlagChange);
      },
      (err) => {
        // A configuration's messages are `config: rules[0]...`: placed as the configuration form places its own.
        const msg = messageOf(err).replace(/(^|; )config(?:: |\.)/g, '$1');
        setErrors(placeApiError(msg, ['at', 'stage', 'clientId', 'enabled', ...(kind === 'config' ? knownPaths(draft) : [])]));
      },
    );
  };

  const kinds: [Kind, string, string][] = [
    ['enable', 'Enable', 'Turns the configuration on; nothing else changes.'],
    ['disable', 'Disable', 'Turns the configuration off; nothing else changes.'],
    ['config', 'Whole configuration', 'Replaces all its fields with the ones below (creates it if it does not exist).'],
  ];
  return (
    <form onSubmit={submit} novalidate aria-labelledby={`${id}-h`} class="schedule-form">
      <h3 id={`${id}-h`}>Schedule a change</h3>
      <div class="row">
        <Field label="Stage" error={errors.stage}>
          {(p) => (
            <select {...p} value={stage} onChange={(e) => setStage(e.currentTarget.value)}>
              {stages.map((s) => <option key={s}>{s}</option>)}
            </select>
          )}
        </Field>
        <Field label="Client ID" hint="Optional." error={errors.clientId} class="narrow">
          {(p) => <input {...p} value={clientId} onInput={(e) => setClientId(e.currentTarget.value)} onChange={(e) => setStartedFrom(e.currentTarget.value.trim() || null)} />}
        </Field>
        <Field label="Time" hint={`Your time zone (${timeZone}), to the second.`} error={errors.at}>
          {(p) => <input {...p} type="datetime-local" step="1" value={time} onInput={(e) => setTime(e.currentTarget.value)} />}
        </Field>
      </div>
      <fieldset>
        <legend>Change</legend>
        <div class="checks choices">
          {kinds.map(([k, label, hint]) => (
            <span class="check" key={k}>
              <input type="radio" name={`${id}-kind`} id={`${id}-${k}`} aria-describedby={`${id}-${k}-hint`} checked={kind === k} onChange={() => setKind(k)} />
              <label for={`${id}-${k}`}>{label}</label>
              <span class="hint" id={`${id}-${k}-hint`}>{hint}</span>
            </span>
          ))}
        </div>
      </fieldset>
      {kind === 'config' && (
        <ConfigFields flag={flag} draft={draft} set={set} errors={errors} segments={props.segments} title={`the change to ${where({ stage, clientId: cid })}`} disabled={false} enabled />
      )}
      {errors.form && <p class="error" role="alert">{errors.form}</p>}
      <div class="actions">
        <button type="submit" class="primary" disabled={busy}>Schedule</button>
      </div>
    </form>
  );
}

export function SchedulesPanel(props: {
  flag: Flag;
  segments: readonly SegmentOption[];
  canWriteStage: (stage: string) => boolean;
  /** A pending change was applied since the list was last read: its configuration changed. */
  onApplied: (changed: { stage: string; clientId: string | null }[]) => void;
}) {
  const { flag } = props;
  const [list, setList] = useState<Schedule[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [status, setStatus] = useState<string | null>(null);
  const [rowError, setRowError] = useState<{ id: string; message: string } | null>(null);
  const prev = useRef<Schedule[] | null>(null);
  const onApplied = useRef(props.onApplied);
  onApplied.current = props.onApplied;

  const load = async () => {
    try {
      const r = await gql<{ flag: { schedules: Schedule[] } | null }>(`query($n: String!) { flag(name: $n) { schedules { ${SCHEDULE_FIELDS} } } }`, { n: flag.name });
      const next = r.flag?.schedules ?? [];
      const was = new Map((prev.current ?? []).map((x) => [x.id, x.status]));
      const applied = next.filter((x) => x.status === 'applied' && was.get(x.id) === 'pending');
      prev.current = next;
      setList(next);
      setError(null);
      if (applied.length > 0) onApplied.current(applied);
    } catch (err) {
      setError(messageOf(err));
    }
  };
  // Read again whenever the page read the flag again (a deleted configuration cancels its schedules).
  useEffect(() => void load(), [flag]); // eslint-disable-line react-hooks/exhaustive-deps
  // Look again just after the soonest pending change is due (and every second while it is late).
  useEffect(() => {
    const due = (list ?? []).filter((x) => x.status === 'pending').map((x) => Date.parse(x.at));
    if (due.length === 0) return;
    const delay = Math.min(Math.max(Math.min(...due) - Date.now() + 1200, 1000), 600_000);
    const timer = setTimeout(() => void load(), delay);
    return () => clearTimeout(timer);
  }, [list]); // eslint-disable-line react-hooks/exhaustive-deps

  const cancel = async (x: Schedule) => {
    setRowError(null);
    setStatus(null);
    try {
      await gql('mutation($n: String!, $id: ID!) { cancelSchedule(name: $n, id: $id) }', { n: flag.name, id: x.id });
      setStatus(`Cancelled: ${where(x)}, ${changeText(x).split(':')[0].toLowerCase()} at ${at(x.at)}.`);
    } catch (err) {
      setRowError({ id: x.id, message: messageOf(err) });
    }
    await load();
  };

  const stages = flag.environments.filter(props.canWriteStage);
  return (
    <section class="card" aria-labelledby="sched-h">
      <h2 id="sched-h">Scheduled changes</h2>
      <p class="hint">Each change is applied once, within a second of its time, with the authority of the key that scheduled it. Times are in your time zone ({timeZone}).</p>
      {error && <p class="error" role="alert">{error}</p>}
      {list === null && !error && <p aria-live="polite">Loading…</p>}
      {list && list.length === 0 && <p>No scheduled changes.</p>}
      {list && list.length > 0 && (
        <ol class="schedules" aria-label={`Scheduled changes of ${flag.name}, soonest first`}>
          {list.map((x) => (
            <li key={x.id} aria-labelledby={`s-${x.id}`} class={`schedule ${x.status}`}>
              <div class="title-row">
                <strong id={`s-${x.id}`}>
                  <time dateTime={x.at}>{at(x.at)}</time>
                  <span class="sr-only">, {where(x)}, {x.status}</span>
                </strong>
                <span class={`badge ${STATUS_CLASS[x.status] ?? ''}`}>{x.status}</span>
              </div>
              <p class="change">
                <strong>{where(x)}</strong>: {changeText(x)}
              </p>
              <p class="hint">
                Scheduled by {x.createdBy.keyName}
                {x.appliedAt && <> · applied {at(x.appliedAt)}</>}
              </p>
              {x.error && <p class="error">Failed: {x.error}</p>}
              {x.status === 'pending' && props.canWriteStage(x.stage) && (
                <div class="actions">
                  <ConfirmButton label="Cancel schedule" question={`Cancel the change to ${where(x)} at ${at(x.at)}?`} confirmLabel="Yes, cancel it" keepLabel="Keep it" describedBy={`s-${x.id}`} onConfirm={() => cancel(x)} />
                </div>
              )}
              {rowError?.id === x.id && <p class="error" role="alert">{rowError.message}</p>}
            </li>
          ))}
        </ol>
      )}
      <Status text={status} />
      {stages.length > 0 && (
        <ScheduleForm
          flag={flag}
          stages={stages}
          segments={props.segments}
          onScheduled={(x) => {
            setStatus(`Scheduled: ${where(x)}, ${changeText(x).split(':')[0].toLowerCase()} at ${at(x.at)}.`);
            void load();
          }}
        />
      )}
    </section>
  );
}
