/**
 * The condition editor: a list of conditions (field, operator, value), each removable, and a
 * button to add one. A rule's conditions (pages/config.tsx) and a segment's (pages/segments.tsx)
 * are both edited with it; `at` is the API path they sit under, so the API's messages land next
 * to the same controls (config-form.ts, placeApiError).
 */
import { Field } from './components';
import { conditionPath, newCondition, OPERATORS, type ConditionDraft, type Errors } from './config-form';

export function ConditionsEditor(props: {
  conditions: ConditionDraft[];
  /** `rules[0]` for a rule's conditions, '' for a segment's. */
  at: string;
  errors: Errors;
  /** Told to screen readers after each label, to tell the rows apart: ` of rule 1, condition 2`. */
  suffix: (j: number) => string;
  addLabel: string;
  removeLabel: (j: number) => string;
  onChange: (conditions: ConditionDraft[]) => void;
}) {
  const { conditions, errors } = props;
  const setCond = (j: number, patch: Partial<ConditionDraft>) => props.onChange(conditions.map((c, k) => (k === j ? { ...c, ...patch } : c)));
  return (
    <>
      {conditions.map((c, j) => {
        const cat = conditionPath(props.at, j);
        const suffix = props.suffix(j);
        return (
          <div class="row condition" key={j}>
            <Field label="Field" srSuffix={suffix} error={errors[`${cat}.field`]} class="grow">
              {(p) => <input {...p} value={c.field} placeholder="country" onInput={(e) => setCond(j, { field: e.currentTarget.value })} />}
            </Field>
            <Field label="Operator" srSuffix={suffix} error={errors[`${cat}.operator`]}>
              {(p) => (
                <select {...p} value={c.operator} onChange={(e) => setCond(j, { operator: e.currentTarget.value })}>
                  {OPERATORS.map((o) => <option key={o}>{o}</option>)}
                </select>
              )}
            </Field>
            <Field label="Value" srSuffix={suffix} error={errors[`${cat}.value`]} class="grow">
              {(p) => <input {...p} value={c.value} placeholder='NL, 42, ["a","b"]' onInput={(e) => setCond(j, { value: e.currentTarget.value })} />}
            </Field>
            <button type="button" class="icon" aria-label={props.removeLabel(j)} onClick={() => props.onChange(conditions.filter((_, k) => k !== j))}>
              Remove
            </button>
          </div>
        );
      })}
      {conditions.length > 0 && <p class="hint">A value is read as JSON when it is JSON (42, true, ["a","b"], "42"), else as text.</p>}
      <button type="button" onClick={() => props.onChange([...conditions, newCondition()])}>
        {props.addLabel}
      </button>
    </>
  );
}
