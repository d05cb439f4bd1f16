/**
 * Segments (docs/api.md, "Segments"): named audiences that rules reuse. List, create, edit (description and
 * conditions, with the rule editor's condition editor) and delete; a delete the server refuses
 * (a flag's rule uses the segment) shows its message, which names the flags.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { FLAG_NAME_MSG, FLAG_NAME_RE } from '../../../src/domain/input-formats';
import { inScope } from '../../../src/domain/name-matching';
import { gql, SEGMENT_FIELDS, type Segment } from '../api';
import { ConditionsEditor } from '../conditions';
import { ConfirmButton, DataTable, Field, Loading, messageOf, Status, useBusy, useLoad, when } from '../components';
import { conditionDrafts, conditionPaths, conditionsInput, placeApiError, type ConditionDraft, type Errors } from '../config-form';
import { useSession, type Session } from '../session';

/** Whether the key may write this segment (or, with `application` undefined, write any segment). */
function canWriteSegment(s: Session, application?: string | null): boolean {
  if (!s.can.write || s.viewer.environment !== null) return false;
  if (application === undefined) return true;
  return application === null ? s.viewer.application === null : inScope(s.viewer.application, application);
}

/** The condition editor as a segment uses it: paths `conditions[j]`, names "Field of condition 1". */
function SegmentConditions({ conditions, errors, onChange }: { conditions: ConditionDraft[]; errors: Errors; onChange: (c: ConditionDraft[]) => void }) {
  return (
    <fieldset>
      <legend>Conditions</legend>
      <p class="hint">A user is in the segment when every condition matches (none: every user).</p>
      <ConditionsEditor
        conditions={conditions}
        at=""
        errors={errors}
        suffix={(j) => ` of condition ${j + 1}`}
        addLabel="Add condition"
        removeLabel={(j) => `Remove condition ${j + 1}`}
        onChange={onChange}
      />
      {errors.conditions && <p class="error" role="alert">{errors.conditions}</p>}
    </fieldset>
  );
}

const KNOWN = (conditions: ConditionDraft[]) => ['name', 'description', 'application', 'conditions', ...conditionPaths(conditions, '')];

/** The API's message next to the control it names (a name that exists goes to Name). */
function apiErrors(err: unknown, conditions: ConditionDraft[]): Errors {
  const msg = messageOf(err);
  if (/already exists/.test(msg)) return { name: msg };
  return placeApiError(msg, KNOWN(conditions));
}

function NewSegmentForm({ onCreated, onCancel }: { onCreated: (name: string) => void; onCancel: () => void }) {
  const s = useSession();
  const [name, setName] = useState('');
  const [application, setApplication] = useState(s.viewer.application ?? '');
  const [description, setDescription] = useState('');
  const [conditions, setConditions] = useState<ConditionDraft[]>([]);
  const [errors, setErrors] = useState<Errors>({});
  const [busy, whileBusy] = useBusy();
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => heading.current?.focus(), []);
  const submit = async (e: Event) => {
    e.preventDefault();
    const errs: Errors = {};
    if (!FLAG_NAME_RE.test(name)) errs.name = `The name ${FLAG_NAME_MSG}.`;
    const input = conditionsInput(conditions, '', errs);
    setErrors(errs);
    if (Object.keys(errs).length > 0) return;
    await whileBusy(
      async () => {
        await gql('mutation($i: CreateSegmentInput!) { createSegment(input: $i) { name } }', {
          i: { name, application: application || null, description: description.trim() || null, conditions: input },
        });
        onCreated(name);
      },
      (err) => setErrors(apiErrors(err, conditions)),
    );
  };
  return (
    <form class="card" onSubmit={submit} novalidate aria-labelledby="new-segment-h">
      <h2 id="new-segment-h" tabIndex={-1} ref={heading}>New segment</h2>
      <div class="row">
        <Field label="Name" error={errors.name} hint="Letters, digits, '_', '.', '-'; rules name it; it cannot be changed later.">
          {(p) => <input {...p} value={name} onInput={(e) => setName(e.currentTarget.value)} autoComplete="off" />}
        </Field>
        <Field label="Application" error={errors.application} hint="Rules of this application's flags can use it.">
          {(p) => (
            <select {...p} value={application} onChange={(e) => setApplication(e.currentTarget.value)}>
              {s.viewer.application === null ? (
                <>
                  <option value="">Any (organization-wide)</option>
                  {s.applications.map((a) => <option key={a}>{a}</option>)}
                </>
              ) : (
                <option>{s.viewer.application}</option>
              )}
            </select>
          )}
        </Field>
      </div>
      <SegmentBody {...{ description, setDescription, conditions, setConditions, errors, busy, onCancel }} submitLabel="Create" />
    </form>
  );
}

/** What the new and the edit form share: description, conditions, the form's error and its buttons. */
function SegmentBody(p: {
  description: string;
  setDescription: (v: string) => void;
  conditions: ConditionDraft[];
  setConditions: (c: ConditionDraft[]) => void;
  errors: Errors;
  busy: boolean;
  submitLabel: string;
  onCancel: () => void;
}) {
  const { errors } = p;
  return (
    <>
      <Field label="Description" error={errors.description}>
        {(f) => <textarea {...f} rows={2} value={p.description} onInput={(e) => p.setDescription(e.currentTarget.value)} />}
      </Field>
      <SegmentConditions conditions={p.conditions} errors={errors} onChange={p.setConditions} />
      {errors.form && <p class="error" role="alert">{errors.form}</p>}
      <div class="actions">
        <button type="submit" class="primary" disabled={p.busy}>{p.submitLabel}</button>
        <button type="button" onClick={p.onCancel}>Cancel</button>
      </div>
    </>
  );
}

function EditSegmentForm({ segment, onSaved, onCancel }: { segment: Segment; onSaved: (name: string) => void; onCancel: () => void }) {
  const [description, setDescription] = useState(segment.description ?? '');
  const [conditions, setConditions] = useState<ConditionDraft[]>(() => conditionDrafts(segment.conditions));
  const [errors, setErrors] = useState<Errors>({});
  const [busy, whileBusy] = useBusy();
  // The form opens above the list: keyboard and screen reader users are taken to it.
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => heading.current?.focus(), []);
  const submit = async (e: Event) => {
    e.preventDefault();
    const errs: Errors = {};
    const input = conditionsInput(conditions, '', errs);
    setErrors(errs);
    if (Object.keys(errs).length > 0) return;
    await whileBusy(
      async () => {
        await gql('mutation($n: String!, $i: UpdateSegmentInput!) { updateSegment(name: $n, input: $i) { name } }', {
          n: segment.name,
          i: { description: description.trim() || null, conditions: input },
        });
        onSaved(segment.name);
      },
      (err) => setErrors(apiErrors(err, conditions)),
    );
  };
  return (
    <form class="card" onSubmit={submit} novalidate aria-labelledby="edit-segment-h">
      <h2 id="edit-segment-h" tabIndex={-1} ref={heading}>Edit {segment.name}</h2>
      <p class="meta">{segment.application === null ? 'Organization-wide' : <>Application <strong>{segment.application}</strong></>}</p>
      <SegmentBody {...{ description, setDescription, conditions, setConditions, errors, busy, onCancel }} submitLabel="Save" />
    </form>
  );
}

/** A condition in one line; long values (a list of 20,000 ids) are cut. */
function conditionText(c: Segment['conditions'][number]): string {
  const v = JSON.stringify(c.value) ?? 'null';
  const shown = v.length > 60 ? `${v.slice(0, 57)}…` : v;
  return `${c.field} ${c.operator} ${shown}${Array.isArray(c.value) && c.value.length > 5 ? ` (${c.value.length} values)` : ''}`;
}

export function SegmentsPage() {
  const s = useSession();
  const { data: loaded, error, loading, reload } = useLoad(() => gql<{ segments: Segment[] | null }>(`{ segments { ${SEGMENT_FIELDS} } }`).then((d) => d.segments ?? []), []);
  // A deleted segment leaves the list at once, not when the list has been read again.
  const [deleted, setDeleted] = useState<string | null>(null);
  useEffect(() => setDeleted(null), [loaded]);
  const data = deleted === null ? loaded : loaded?.filter((x) => x.name !== deleted);
  const [creating, setCreating] = useState(false);
  const [editing, setEditing] = useState<string | null>(null);
  const [status, setStatus] = useState<string | null>(null);
  const [rowError, setRowError] = useState<{ name: string; message: string } | null>(null);
  const editingSegment = editing === null ? undefined : data?.find((x) => x.name === editing);

  const remove = async (name: string) => {
    setRowError(null);
    setStatus(null);
    try {
      await gql('mutation($n: String!) { deleteSegment(name: $n) }', { n: name });
      if (editing === name) setEditing(null);
      setDeleted(name);
      setStatus(`Segment ${name} deleted.`);
      reload();
    } catch (err) {
      setRowError({ name, message: messageOf(err) });
    }
  };

  return (
    <main id="main">
      <div class="title-row">
        <h1 tabIndex={-1}>Segments</h1>
        {canWriteSegment(s) && !creating && (
          <button type="button" class="primary" onClick={() => { setCreating(true); setEditing(null); setStatus(null); }}>
            New segment
          </button>
        )}
      </div>
      <p class="hint">
        A segment is a named audience: a user is in it when every one of its conditions matches. A rule of a flag can require segments besides its own conditions.
        Organization-wide segments serve every application.
      </p>
      {creating && (
        <NewSegmentForm
          onCancel={() => setCreating(false)}
          onCreated={(name) => {
            setCreating(false);
            setStatus(`Segment ${name} created.`);
            reload();
          }}
        />
      )}
      {editingSegment && (
        <EditSegmentForm
          key={editingSegment.name}
          segment={editingSegment}
          onCancel={() => setEditing(null)}
          onSaved={(name) => {
            setEditing(null);
            setStatus(`Segment ${name} saved.`);
            reload();
          }}
        />
      )}
      <Status text={status} />
      <Loading error={error} loading={loading} />
      {data && data.length === 0 && <p>No segments yet.</p>}
      {data && data.length > 0 && (
        <DataTable caption="Segments this key can see" columns={['Name', 'Application', 'Conditions', 'Updated']} actions class="segments">
          {data.map((x) => (
            <tr key={x.name}>
              <th scope="row" id={`seg-${x.name}`}>
                {x.name}
                {x.description && <span class="desc">{x.description}</span>}
              </th>
              <td>{x.application ?? <span class="muted">organization-wide</span>}</td>
              <td>
                {x.conditions.length === 0 ? (
                  <span class="muted">every user</span>
                ) : (
                  <ul class="conds">
                    {x.conditions.map((c, i) => <li key={i}><code>{conditionText(c)}</code></li>)}
                  </ul>
                )}
              </td>
              <td>{when(x.updatedAt)}</td>
              <td class="row-actions">
                {canWriteSegment(s, x.application) && (
                  <>
                    <button type="button" aria-describedby={`seg-${x.name}`} onClick={() => { setEditing(x.name); setCreating(false); setStatus(null); }}>
                      Edit
                    </button>
                    <ConfirmButton label="Delete" question={`Delete segment ${x.name}?`} confirmLabel="Yes, delete" danger describedBy={`seg-${x.name}`} onConfirm={() => remove(x.name)} />
                  </>
                )}
                {rowError?.name === x.name && <p class="error" role="alert">{rowError.message}</p>}
              </td>
            </tr>
          ))}
        </DataTable>
      )}
    </main>
  );
}
