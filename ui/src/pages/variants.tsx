/** Variants edited as rows of key and value, typed by the flag's type (no raw JSON for scalars). */
import type { ValueType, Variant } from '../api';
import { useId } from '../components';

export interface VariantRow {
  key: string;
  /** The value as typed: 'true'/'false', text, a number, or JSON. */
  value: string;
}

export function defaultVariants(type: string): VariantRow[] {
  if (type === 'boolean') return [{ key: 'on', value: 'true' }, { key: 'off', value: 'false' }];
  if (type === 'number') return [{ key: 'a', value: '0' }, { key: 'b', value: '1' }];
  if (type === 'json') return [{ key: 'a', value: '{}' }];
  return [{ key: 'a', value: '' }, { key: 'b', value: '' }];
}

export const rowsOf = (variants: Variant[]): VariantRow[] =>
  variants.map((v) => ({ key: v.key, value: typeof v.value === 'string' ? v.value : JSON.stringify(v.value) }));

/** The variants for the API, or the first problem in words. */
export function variantsFromRows(type: string, rows: VariantRow[]): { ok: true; variants: Variant[] } | { ok: false; error: string } {
  const seen = new Set<string>();
  const out: Variant[] = [];
  for (const [i, r] of rows.entries()) {
    const at = `Variant ${i + 1}`;
    const key = r.key.trim();
    if (key === '') return { ok: false, error: `${at}: the key is empty.` };
    if (seen.has(key)) return { ok: false, error: `${at}: the key '${key}' is used twice.` };
    seen.add(key);
    let value: unknown = r.value;
    if (type === 'boolean') value = r.value === 'true';
    else if (type === 'number') {
      value = Number(r.value);
      if (r.value.trim() === '' || !Number.isFinite(value)) return { ok: false, error: `${at}: '${r.value}' is not a number.` };
    } else if (type === 'json') {
      try {
        value = JSON.parse(r.value);
      } catch {
        return { ok: false, error: `${at}: the value is not valid JSON.` };
      }
    }
    out.push({ key, value, valueType: type as ValueType });
  }
  return { ok: true, variants: out };
}

export function VariantsEditor(props: { type: string; rows: VariantRow[]; onChange: (rows: VariantRow[]) => void; error?: string | null; disabled?: boolean }) {
  const id = useId('variants');
  const { rows, onChange, type } = props;
  const set = (i: number, patch: Partial<VariantRow>) => onChange(rows.map((r, j) => (j === i ? { ...r, ...patch } : r)));
  return (
    <fieldset class="variants" aria-describedby={props.error ? `${id}-err` : undefined} disabled={props.disabled}>
      <legend>Variants</legend>
      {rows.map((r, i) => (
        <div class="row" key={i}>
          <div class="field">
            <label for={`${id}-k${i}`}>Variant {i + 1} key</label>
            <input id={`${id}-k${i}`} value={r.key} onInput={(e) => set(i, { key: e.currentTarget.value })} />
          </div>
          <div class="field grow">
            <label for={`${id}-v${i}`}>Variant {i + 1} value{type === 'json' ? ' (JSON)' : ''}</label>
            {type === 'boolean' ? (
              <select id={`${id}-v${i}`} value={r.value} onChange={(e) => set(i, { value: e.currentTarget.value })}>
                <option>true</option>
                <option>false</option>
              </select>
            ) : (
              <input id={`${id}-v${i}`} inputMode={type === 'number' ? 'decimal' : undefined} value={r.value} onInput={(e) => set(i, { value: e.currentTarget.value })} />
            )}
          </div>
          <button type="button" class="icon" aria-label={`Remove variant ${i + 1}`} onClick={() => onChange(rows.filter((_, j) => j !== i))}>
            Remove
          </button>
        </div>
      ))}
      <button type="button" onClick={() => onChange([...rows, { key: '', value: type === 'boolean' ? 'false' : type === 'json' ? 'null' : '' }])}>
        Add variant
      </button>
      {props.error && <p class="error" id={`${id}-err`} role="alert">{props.error}</p>}
    </fieldset>
  );
}
