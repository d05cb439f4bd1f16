/**
 * ISO 8601 durations for the lifecycle settings (docs/insights.md, "Lifecycle"): pure, no I/O.
 *
 * Accepted: `P[nY][nM][nW][nD][T[nH][nM][nS]]` with whole numbers, at least one component, upper
 * case `P` and `T` (lower case is accepted too), and a `T` only when a time component follows.
 * A year counts 365 days and a month 30 days (durations here are lengths of time, not calendar
 * steps). The result must be at least one second (`PT1S`, the shortest the settings accept) and
 * at most `DURATION_MAX_MS` (100 years).
 */

export const SECOND_MS = 1000;
const MINUTE_MS = 60 * SECOND_MS;
const HOUR_MS = 60 * MINUTE_MS;
const DAY_MS = 24 * HOUR_MS;

/** The longest duration accepted: 100 years of 365 days. */
export const DURATION_MAX_MS = 100 * 365 * DAY_MS;

const DURATION_RE = /^P(?:(\d+)Y)?(?:(\d+)M)?(?:(\d+)W)?(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)S)?)?$/i;
const UNITS_MS = [365 * DAY_MS, 30 * DAY_MS, 7 * DAY_MS, DAY_MS, HOUR_MS, MINUTE_MS, SECOND_MS];

/** Why `text` is not an accepted duration, or its length in milliseconds. */
export function parseDuration(text: string): { ms: number } | { error: string } {
  if (typeof text !== 'string') return { error: 'expected an ISO 8601 duration such as P40D or PT1S' };
  const m = text.length <= 64 ? DURATION_RE.exec(text) : null;
  // `P` alone, `PT` and a `T` with nothing after it match the pattern but name no component.
  if (m === null || m.slice(1).every((g) => g === undefined) || /T$/i.test(text)) {
    return { error: `expected an ISO 8601 duration such as P40D or PT1S, got '${text.slice(0, 64)}'` };
  }
  let ms = 0;
  for (let i = 0; i < UNITS_MS.length; i++) {
    const g = m[i + 1];
    if (g !== undefined) ms += Number(g) * UNITS_MS[i];
  }
  if (!Number.isFinite(ms) || ms > DURATION_MAX_MS) return { error: `'${text}' is longer than 100 years` };
  if (ms < SECOND_MS) return { error: `'${text}' is shorter than PT1S` };
  return { ms };
}

/** The length of a duration already validated by `parseDuration` (throws otherwise). */
export function durationMs(text: string): number {
  const r = parseDuration(text);
  if ('error' in r) throw new Error(r.error);
  return r.ms;
}
