/**
 * A stage configuration as a form draft: text fields as typed, checked before saving, and turned
 * into UpsertFlagConfigInput. Errors are keyed by the API's own paths (`rolloutPercentage`,
 * `rules[0].conditions[1].field`, ...) so that the API's messages land next to the same controls.
 */
import { isValidFieldPath, OPERATORS } from '../../src/domain/condition-syntax';
import type { Condition, Flag, FlagConfig } from './api';

export { OPERATORS };

export interface ConditionDraft { field: string; operator: string; value: string }
export interface AllocationDraft { variantKey: string; percentage: string }
/** `segments`: names of segments the context must be in besides the conditions (docs/api.md, "Segments"). */
export interface RuleDraft { id: string | null; priority: string; conditions: ConditionDraft[]; segments: string[]; allocations: AllocationDraft[] }
export interface ConfigDraft {
  stage: string;
  clientId: string | null;
  enabled: boolean;
  defaultVariantKey: string;
  rolloutPercentage: string;
  enrollmentCutoff: string;
  /** `datetime-local` values, in the browser's time zone. */
  activeFrom: string;
  activeUntil: string;
  rules: RuleDraft[];
}

export type Errors = Record<string, string>;

const pad = (n: number) => String(n).padStart(2, '0');
/** ISO instant -> `datetime-local` value in local time. */
export function toLocalInput(iso: string | null): string {
  if (!iso) return '';
  const d = new Date(iso);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/** A condition value as typed: JSON when it parses, else the text itself. */
export const valueText = (v: unknown) => (typeof v === 'string' && !looksLikeJson(v) ? v : JSON.stringify(v));
const looksLikeJson = (s: string) => {
  try {
    JSON.parse(s);
    return true;
  } catch {
    return false;
  }
};
export function parseValue(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** Conditions as the API has them -> drafts (the rule editor and the segments page). */
export const conditionDrafts = (conditions: readonly Condition[]): ConditionDraft[] =>
  conditions.map((x) => ({ field: x.field, operator: x.operator, value: valueText(x.value) }));

export const newCondition = (): ConditionDraft => ({ field: '', operator: '==', value: '' });

/**
 * Checks condition drafts and answers them as API input; errors go to `${at}.conditions[j].field`
 * and `.operator` (`at`: `rules[0]`, or '' for a segment's own conditions).
 */
export function conditionsInput(conditions: ConditionDraft[], at: string, errors: Errors): Condition[] {
  return conditions.map((c, j) => {
    const cat = conditionPath(at, j);
    if (!isValidFieldPath(c.field)) errors[`${cat}.field`] = "Enter a field path: letters, digits, '_' and dots (for example country or user.plan).";
    if (!OPERATORS.includes(c.operator)) errors[`${cat}.operator`] = 'Choose an operator.';
    return { field: c.field, operator: c.operator, value: parseValue(c.value) };
  });
}

/** The API's path of condition `j` under `at` (`rules[0].conditions[1]`, or `conditions[1]`). */
export const conditionPath = (at: string, j: number) => `${at ? `${at}.` : ''}conditions[${j}]`;

/** The error paths of condition drafts under `at`. */
export const conditionPaths = (conditions: ConditionDraft[], at: string): string[] =>
  conditions.flatMap((_, j) => ['field', 'operator', 'value'].map((f) => `${conditionPath(at, j)}.${f}`));

export function draftOf(flag: Flag, stage: string, clientId: string | null, c: FlagConfig | undefined): ConfigDraft {
  return {
    stage,
    clientId,
    enabled: c?.enabled ?? false,
    defaultVariantKey: c?.defaultVariantKey ?? flag.variants[flag.variants.length - 1]?.key ?? '',
    rolloutPercentage: String(c?.rolloutPercentage ?? 100),
    enrollmentCutoff: c?.enrollmentCutoff == null ? '' : String(c.enrollmentCutoff),
    activeFrom: toLocalInput(c?.activeFrom ?? null),
    activeUntil: toLocalInput(c?.activeUntil ?? null),
    rules: (c?.rules ?? []).map((r) => ({
      id: r.id,
      priority: String(r.priority),
      conditions: conditionDrafts(r.conditions),
      segments: [...(r.segments ?? [])],
      allocations: r.allocations.map((a) => ({ variantKey: a.variantKey, percentage: String(a.percentage) })),
    })),
  };
}

export function newRule(flag: Flag, rules: RuleDraft[]): RuleDraft {
  const max = rules.reduce((m, r) => Math.max(m, Number(r.priority) || 0), 0);
  return { id: null, priority: String(max + 1), conditions: [newCondition()], segments: [], allocations: [{ variantKey: flag.variants[0]?.key ?? '', percentage: '100' }] };
}

function percent(text: string, path: string, errors: Errors, optional = false): number | null {
  if (text.trim() === '') {
    if (!optional) errors[path] = 'Enter a percentage from 0 to 100.';
    return null;
  }
  const n = Number(text);
  if (!Number.isFinite(n) || n < 0 || n > 100) errors[path] = 'Enter a percentage from 0 to 100.';
  return n;
}

/** Checks a draft; answers the API input when it is valid, else the errors by path. */
export function toInput(flag: Flag, d: ConfigDraft): { errors: Errors; input?: Record<string, unknown> } {
  const errors: Errors = {};
  const variants = new Set(flag.variants.map((v) => v.key));
  if (!variants.has(d.defaultVariantKey)) errors.defaultVariantKey = 'Choose a variant.';
  const rollout = percent(d.rolloutPercentage, 'rolloutPercentage', errors);
  const cutoff = percent(d.enrollmentCutoff, 'enrollmentCutoff', errors, true);
  const from = d.activeFrom ? new Date(d.activeFrom) : null;
  const until = d.activeUntil ? new Date(d.activeUntil) : null;
  if (from && Number.isNaN(from.getTime())) errors.activeFrom = 'Enter a date and time.';
  if (until && Number.isNaN(until.getTime())) errors.activeUntil = 'Enter a date and time.';
  if (from && until && !(from < until)) errors.activeUntil = 'The end must be after the start.';
  const rules = d.rules.map((r, i) => {
    const at = `rules[${i}]`;
    const priority = Number(r.priority);
    if (r.priority.trim() === '' || !Number.isInteger(priority)) errors[`${at}.priority`] = 'Enter a whole number (lower runs first).';
    const conditions = conditionsInput(r.conditions, at, errors);
    let sum = 0;
    const allocations = r.allocations.map((a, j) => {
      const aat = `${at}.allocations[${j}]`;
      if (!variants.has(a.variantKey)) errors[`${aat}.variantKey`] = 'Choose a variant.';
      const p = percent(a.percentage, `${aat}.percentage`, errors) ?? 0;
      sum += p;
      return { variantKey: a.variantKey, percentage: p };
    });
    if (allocations.length === 0) errors[`${at}.allocations`] = 'A rule needs at least one allocation.';
    else if (Math.abs(sum - 100) > 1e-9) errors[`${at}.allocations`] = `The allocations add up to ${sum}%; they must add up to 100%.`;
    return { ...(r.id ? { id: r.id } : {}), priority, conditions, segments: r.segments, allocations };
  });
  if (Object.keys(errors).length > 0) return { errors };
  return {
    errors,
    input: {
      stage: d.stage,
      clientId: d.clientId,
      enabled: d.enabled,
      defaultVariantKey: d.defaultVariantKey,
      rolloutPercentage: rollout,
      rules,
      activeFrom: from ? from.toISOString() : null,
      activeUntil: until ? until.toISOString() : null,
      enrollmentCutoff: cutoff,
    },
  };
}

/**
 * Places an API message next to the control it names: each `path: message` part goes to the
 * longest known path that prefixes it; the rest goes to `form`.
 */
export function placeApiError(message: string, known: string[]): Errors {
  const out: Errors = {};
  const add = (k: string, m: string) => (out[k] = out[k] ? `${out[k]} ${m}` : m);
  const byLength = [...known].sort((a, b) => b.length - a.length);
  for (const part of message.replace(/^Not allowed \(403\): /, '').split(/; (?=[\w[\].]+: )/)) {
    const m = /^([\w[\].]+): (.*)$/.exec(part);
    const path = m ? byLength.find((k) => m[1] === k || m[1].startsWith(k + '.') || m[1].startsWith(k + '[')) : undefined;
    if (path) add(path, m![2]);
    else add('form', part);
  }
  if (message.startsWith('Not allowed') && out.form && !out.form.startsWith('Not allowed')) out.form = `Not allowed (403): ${out.form}`;
  return out;
}

/** Every error path a draft's controls can show. */
export function knownPaths(d: ConfigDraft): string[] {
  const out = ['defaultVariantKey', 'rolloutPercentage', 'enrollmentCutoff', 'activeFrom', 'activeUntil', 'clientId', 'rules'];
  d.rules.forEach((r, i) => {
    out.push(`rules[${i}]`, `rules[${i}].priority`, `rules[${i}].allocations`, `rules[${i}].segments`);
    out.push(...conditionPaths(r.conditions, `rules[${i}]`));
    r.allocations.forEach((_, j) => out.push(`rules[${i}].allocations[${j}].variantKey`, `rules[${i}].allocations[${j}].percentage`));
  });
  return out;
}
