/**
 * A text field for a flag's name whose suggestions come from a search on the server: an
 * organization may hold 100,000 flags, so no page lists them all in a select. It is an
 * `<input list>` (role combobox) with a `<datalist>` of at most SUGGESTIONS names that contain what
 * was typed (flagConnection's search), asked for on focus and after each pause in typing.
 */
import { useEffect, useState } from 'preact/hooks';
import { flagPage } from './api';
import { useId, type ControlProps } from './components';

const SUGGESTIONS = 20;
const DELAY_MS = 150;

export function FlagNameInput(
  props: ControlProps & {
    value: string;
    onValue: (value: string) => void;
    /** A name never suggested (the flag itself, for its dependencies). */
    exclude?: string;
    placeholder?: string;
    disabled?: boolean;
  },
) {
  const { value, onValue, exclude, ...control } = props;
  const listId = useId('flag-names');
  /** The text searched for; null until the field is used (a page of pickers asks nothing). */
  const [query, setQuery] = useState<string | null>(null);
  const [names, setNames] = useState<string[]>([]);
  useEffect(() => {
    if (query === null) return;
    const ctl = new AbortController();
    const timer = setTimeout(() => {
      flagPage<{ name: string }>('name', SUGGESTIONS + 1, null, { search: query }, ctl.signal).then(
        (r) => setNames(r.flagConnection.nodes.map((n) => n.name).filter((n) => n !== exclude).slice(0, SUGGESTIONS)),
        () => setNames([]), // suggestions only: the field still takes any name, the server checks it
      );
    }, DELAY_MS);
    return () => {
      clearTimeout(timer);
      ctl.abort();
    };
  }, [query, exclude]);
  return (
    <>
      <input
        {...control}
        list={listId}
        value={value}
        autoComplete="off"
        spellcheck={false}
        onFocus={() => setQuery((q) => q ?? value.trim())}
        onInput={(e) => {
          onValue(e.currentTarget.value);
          setQuery(e.currentTarget.value.trim());
        }}
      />
      <datalist id={listId}>
        {names.map((n) => (
          <option key={n} value={n} />
        ))}
      </datalist>
    </>
  );
}
