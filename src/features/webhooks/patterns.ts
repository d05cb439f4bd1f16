/**
 * Event patterns of a webhook endpoint (docs/webhooks.md, "Events"): an audit action
 * (`flag.create`), `*` for every action, or a prefix with `*` after a dot (`flag.*`, `change.*`).
 * Pure. The outbox matches them in SQL (outbox.ts) exactly as `matches` does here.
 */

/** One pattern: segments of lower-case letters, digits, `_` and `-`, separated by dots; the last may be `*`. */
export const PATTERN_RE = /^(\*|[a-z][a-z0-9_-]*(\.[a-z][a-z0-9_-]*)*(\.\*)?)$/;

export const MAX_PATTERNS = 50;
export const MAX_PATTERN_LENGTH = 100;

/** The reason `p` is not a pattern, or null when it is one. */
export function patternProblem(p: unknown): string | null {
  if (typeof p !== 'string') return 'must be a string';
  if (p.length === 0 || p.length > MAX_PATTERN_LENGTH) return `must be 1..${MAX_PATTERN_LENGTH} characters`;
  if (!PATTERN_RE.test(p)) return "must be an audit action (flag.create), '*', or a prefix ending in '.*' (flag.*)";
  return null;
}

/** Whether `action` (an audit action or `webhook.test`) is one the pattern subscribes to. */
export function matches(pattern: string, action: string): boolean {
  if (pattern === '*') return true;
  if (pattern.endsWith('.*')) return action.startsWith(pattern.slice(0, -1));
  return pattern === action;
}

export const matchesAny = (patterns: readonly string[], action: string): boolean => patterns.some((p) => matches(p, action));
