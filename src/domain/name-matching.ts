/**
 * Matching environment and application names: two names are the same when they are equal ignoring
 * case (`a.toLowerCase() === b.toLowerCase()`), and an organization never holds two that differ
 * only in case, so a name resolves to one canonical spelling. Also the rules built on it: a key's
 * application or environment scope, and the application a namespaced clientId names.
 *
 * Owned here for the server (the engine's hot path included) and the admin web UI (ui/), which
 * bundles this module: no imports, no I/O. Allocation-free whenever the strings are ASCII (valid
 * names always are); other strings fall back to String.prototype.toLowerCase, so the result is
 * always exactly that of comparing the lower-case forms.
 */

/**
 * Whether `a.slice(0, aEnd)` and `b` are the same name. Folds ASCII case code unit by code unit;
 * at the first non-ASCII difference, or when the lengths differ and either string is not ASCII,
 * compares the lower-case forms instead (lower-casing can change a non-ASCII string's length).
 */
function sameNameAt(a: string, aEnd: number, b: string): boolean {
  const n = b.length;
  if (aEnd !== n) return !(isAscii(a, aEnd) && isAscii(b, n)) && a.slice(0, aEnd).toLowerCase() === b.toLowerCase();
  for (let i = 0; i < n; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x === y) continue;
    if (x >= 0x80 || y >= 0x80) return a.slice(0, aEnd).toLowerCase() === b.toLowerCase();
    // Both ASCII: the lower-case forms of the prefixes so far have the same length, so an ASCII
    // difference that survives folding is a difference of the lower-case forms.
    if (x >= 0x41 && x <= 0x5a) x += 0x20;
    if (y >= 0x41 && y <= 0x5a) y += 0x20;
    if (x !== y) return false;
  }
  return true;
}

function isAscii(s: string, end: number): boolean {
  for (let i = 0; i < end; i++) if (s.charCodeAt(i) >= 0x80) return false;
  return true;
}

/**
 * The key a name is filed under where names are looked up by key (maps, caches): two names that
 * are the same name have the same key.
 */
export const nameKey = (name: string): string => name.toLowerCase();

/** Whether `a` and `b` are the same name (equal ignoring case). */
export function sameName(a: string, b: string): boolean {
  return a === b || sameNameAt(a, a.length, b);
}

/** The canonical spelling of `name` in `list`, or undefined. */
export function findName(list: readonly string[], name: string): string | undefined {
  for (let i = 0; i < list.length; i++) if (list[i] === name) return list[i];
  for (let i = 0; i < list.length; i++) if (sameNameAt(name, name.length, list[i])) return list[i];
  return undefined;
}

export const hasName = (list: readonly string[], name: string): boolean => findName(list, name) !== undefined;

/**
 * Whether a key's application or environment scope covers `name`: a null scope (organization-wide
 * key, or no environment scope) covers every name; otherwise the scope must be the same name.
 */
export function inScope(scope: string | null, name: string): boolean {
  return scope === null || sameName(scope, name);
}

/**
 * A clientId namespaced `<application>:<client>` belongs to that application: returns the
 * application named (in the organization's spelling), when it is one of `applications`.
 */
export function clientIdApplication(clientId: string | null, applications: readonly string[]): string | undefined {
  if (clientId === null) return undefined;
  const colon = clientId.indexOf(':');
  if (colon <= 0) return undefined;
  for (let i = 0; i < applications.length; i++) {
    const app = applications[i];
    if (app.length === colon && clientId.startsWith(app)) return app;
  }
  for (let i = 0; i < applications.length; i++) {
    if (sameNameAt(clientId, colon, applications[i])) return applications[i];
  }
  return undefined;
}
