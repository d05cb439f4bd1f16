/**
 * Environment and application names are compared case-insensitively (SPEC 4.1 rule 2) and an
 * organization never holds two that differ only in case, so a name resolves to one canonical
 * spelling.
 */
export const sameName = (a: string, b: string): boolean => a === b || a.toLowerCase() === b.toLowerCase();

/** The canonical spelling of `name` in `list`, or undefined. */
export function findName(list: readonly string[], name: string): string | undefined {
  for (const n of list) if (n === name) return n;
  const lower = name.toLowerCase();
  for (const n of list) if (n.toLowerCase() === lower) return n;
  return undefined;
}

export const hasName = (list: readonly string[], name: string): boolean => findName(list, name) !== undefined;

/**
 * A clientId namespaced `<application>:<client>` belongs to that application (CONTRACT.md 6 step
 * 5); returns the application named, when it is one of the organization's.
 */
export function clientIdApplication(clientId: string | null, applications: readonly string[]): string | undefined {
  if (clientId === null) return undefined;
  const colon = clientId.indexOf(':');
  return colon <= 0 ? undefined : findName(applications, clientId.slice(0, colon));
}
