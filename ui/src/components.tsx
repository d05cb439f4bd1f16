/** Small shared pieces: labelled fields with their error, notices, confirmation, loading. */
import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useState } from 'preact/hooks';
import { ApiError } from './api';

let nextId = 0;
export const useId = (prefix: string) => useState(() => `${prefix}-${++nextId}`)[0];

/** A message in words next to the control it belongs to. */
export function ErrorText({ id, error }: { id: string; error?: string | null }) {
  if (!error) return null;
  return (
    <p class="error" id={id} role="alert">
      {error}
    </p>
  );
}

/** Props for a control inside a Field: its id, its error wiring. */
export interface ControlProps {
  id: string;
  'aria-invalid'?: 'true';
  'aria-describedby'?: string;
}

/** A label, a control (render prop) and the control's error or hint below it. */
export function Field(props: {
  label: string;
  /** Read by screen readers after the label (to tell repeated rows apart). */
  srSuffix?: string;
  error?: string | null;
  hint?: string;
  class?: string;
  children: (p: ControlProps) => ComponentChildren;
}) {
  const id = useId('f');
  const describedBy = [props.error ? `${id}-err` : '', props.hint ? `${id}-hint` : ''].filter(Boolean).join(' ');
  return (
    <div class={`field ${props.class ?? ''}`}>
      <label for={id}>
        {props.label}
        {props.srSuffix && <span class="sr-only">{props.srSuffix}</span>}
      </label>
      {props.children({ id, ...(props.error ? { 'aria-invalid': 'true' as const } : {}), ...(describedBy ? { 'aria-describedby': describedBy } : {}) })}
      {props.hint && (
        <p class="hint" id={`${id}-hint`}>
          {props.hint}
        </p>
      )}
      <ErrorText id={`${id}-err`} error={props.error} />
    </div>
  );
}

/** A success or information line, announced politely. */
export function Status({ text }: { text: string | null }) {
  return (
    <p class="status" role="status">
      {text ?? ''}
    </p>
  );
}

/** A button that asks for confirmation inline before running `onConfirm`. */
export function ConfirmButton(props: {
  label: string;
  question: string;
  confirmLabel?: string;
  /** The button that keeps things as they are ("Cancel" unless given). */
  keepLabel?: string;
  disabled?: boolean;
  danger?: boolean;
  describedBy?: string;
  onConfirm: () => void | Promise<void>;
}) {
  const [asking, setAsking] = useState(false);
  if (!asking) {
    return (
      <button type="button" class={props.danger ? 'danger' : ''} disabled={props.disabled} aria-describedby={props.describedBy} onClick={() => setAsking(true)}>
        {props.label}
      </button>
    );
  }
  return (
    <span class="confirm" role="group" aria-label={props.question}>
      <span>{props.question}</span>
      <button
        type="button"
        class="danger"
        ref={(el) => el?.focus()}
        onClick={async () => {
          setAsking(false);
          await props.onConfirm();
        }}
      >
        {props.confirmLabel ?? `Yes, ${props.label.toLowerCase()}`}
      </button>
      <button type="button" onClick={() => setAsking(false)}>
        {props.keepLabel ?? 'Cancel'}
      </button>
    </span>
  );
}

export const messageOf = (err: unknown): string => (err instanceof ApiError || err instanceof Error ? err.message : String(err));

/**
 * The busy state of a form that disables its submit control while it submits: `busy` while `work`
 * runs, and an error it throws goes to `fail` (where the form places it beside its fields).
 */
export function useBusy(): [busy: boolean, run: (work: () => Promise<void>, fail: (err: unknown) => void) => Promise<void>] {
  const [busy, setBusy] = useState(false);
  const run = async (work: () => Promise<void>, fail: (err: unknown) => void) => {
    setBusy(true);
    try {
      await work();
    } catch (err) {
      fail(err);
    } finally {
      setBusy(false);
    }
  };
  return [busy, run];
}

/** Loads data with `load`; `reload` runs it again. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]) {
  const [state, setState] = useState<{ data?: T; error?: string; loading: boolean }>({ loading: true });
  const run = useCallback(() => {
    let live = true;
    load().then(
      (data) => live && setState({ data, loading: false }),
      (err) => live && setState({ error: messageOf(err), loading: false }),
    );
    return () => {
      live = false;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, deps);
  useEffect(run, [run]);
  return { ...state, reload: run };
}

/**
 * A table of records: its caption for screen readers, a header cell per column (and a last,
 * visually hidden "Actions" one where rows carry buttons), then the rows.
 */
export function DataTable(props: { caption: string; columns: string[]; actions?: boolean; class?: string; busy?: boolean; children: ComponentChildren }) {
  return (
    <div class="table-wrap">
      <table class={props.class} aria-busy={props.busy ? 'true' : undefined}>
        <caption class="sr-only">{props.caption}</caption>
        <thead>
          <tr>
            {props.columns.map((c, i) => <th scope="col" key={i}>{c}</th>)}
            {props.actions && <th scope="col"><span class="sr-only">Actions</span></th>}
          </tr>
        </thead>
        <tbody>{props.children}</tbody>
      </table>
    </div>
  );
}

export function Loading({ error, loading }: { error?: string; loading: boolean }) {
  if (error) return <p class="error" role="alert">{error}</p>;
  if (loading) return <p aria-live="polite">Loading…</p>;
  return null;
}

/** Formats an ISO date-time for people, in their locale, with seconds dropped. */
export const when = (iso: string | null) => (iso ? new Date(iso).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' }) : '—');

/** Copies text to the clipboard and says so. */
export function CopyButton({ text, label = 'Copy' }: { text: string; label?: string }) {
  const [done, setDone] = useState<string | null>(null);
  return (
    <>
      <button
        type="button"
        onClick={async () => {
          try {
            await navigator.clipboard.writeText(text);
            setDone('Copied to the clipboard.');
          } catch {
            setDone('Copying is not allowed here: select the value and copy it yourself.');
          }
        }}
      >
        {label}
      </button>
      <span role="status" class="hint">
        {done ?? ''}
      </span>
    </>
  );
}

/** A secret shown this once (a key value, a webhook signing secret): a read-only field, Copy, and "I have stored it". */
export function RevealOnce({ title, label, hint, value, onDone }: { title: string; label: string; hint: string; value: string; onDone: () => void }) {
  return (
    <div class="card reveal" role="region" aria-labelledby="reveal-h">
      <h2 id="reveal-h">{title}</h2>
      <p>{hint}</p>
      <div class="row">
        <Field label={label} class="grow">
          {(p) => <input {...p} class="mono" readOnly value={value} onFocus={(e) => e.currentTarget.select()} />}
        </Field>
        <CopyButton text={value} />
      </div>
      <button type="button" onClick={onDone}>I have stored it</button>
    </div>
  );
}
