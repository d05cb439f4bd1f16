/**
 * The syntax of a targeting condition (`{field, operator, value}`): the operators and the field
 * path format. Validation checks configurations against it, the engine compiles conditions with
 * it, and the admin web UI (ui/), which bundles this module, offers and checks the same; no
 * imports, no I/O. What each operator matches is the engine's (src/engine/conditions.ts).
 */

export const OPERATORS: readonly string[] = Object.freeze([
  '==',
  '!=',
  'in',
  'not_in',
  'contains',
  'starts_with',
  'ends_with',
  '<',
  '<=',
  '>',
  '>=',
]);

const OPERATOR_SET: ReadonlySet<string> = new Set(OPERATORS);

export function isOperator(op: string): boolean {
  return OPERATOR_SET.has(op);
}

/** Dotted path of letters, digits and underscores; no hyphen, space or empty segment. */
export const FIELD_PATH_RE = /^[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)*$/;

export function isValidFieldPath(path: string): boolean {
  return typeof path === 'string' && FIELD_PATH_RE.test(path);
}
