/**
 * graphql-jit 0.8.9 embeds literal argument values in the code it generates as
 * `JSON.stringify(...)`, then rewrites its own marker strings (`"__MAGIC_DATE__<uuid><x>"` becomes
 * `new Date(<x>)`, likewise NaN and ±Infinity) with regular expressions. A string literal that
 * carries such a marker would therefore be turned into code: remote code execution for any key.
 * Documents whose strings carry one are refused before compiling (execute.ts).
 *
 * A marker is what `/__MAGIC_[A-Z_]*__[0-9a-f]{8}_/` finds. That regular expression backtracks:
 * on a string repeating `__MAGIC_` it retries the `[A-Z_]*` run from every occurrence, quadratic in
 * the string (≈1.5 s on a 100 KiB literal). `hasJitMarker` decides the same question in one pass:
 * a match is a run of [A-Z_] characters that holds `__MAGIC_` at some position i and ends in `__`
 * at a position j ≥ i + 8, followed by 8 lowercase hex digits and `_`. So it suffices to remember
 * the earliest `__MAGIC_` of the current run; every character is looked at a bounded number of
 * times (`stats.steps` counts them, for the tests).
 */

const PREFIX = '__MAGIC_';
const UNDERSCORE = 95;

const inClass = (c: number): boolean => (c >= 65 && c <= 90) || c === UNDERSCORE; // [A-Z_]
const isHex = (c: number): boolean => (c >= 48 && c <= 57) || (c >= 97 && c <= 102); // [0-9a-f]

export interface ScanStats {
  steps: number;
}

/** Whether `s` contains a graphql-jit marker (the regular expression above), in linear time. */
export function hasJitMarker(s: string, stats?: ScanStats): boolean {
  if (!s.includes(PREFIX)) return false;
  let steps = 0;
  let magicAt = -1; // earliest `__MAGIC_` in the current [A-Z_] run, or -1
  const n = s.length;
  try {
    for (let p = 0; p < n; p++) {
      steps++;
      const c = s.charCodeAt(p);
      if (!inClass(c)) {
        magicAt = -1;
        continue;
      }
      if (magicAt < 0 && c === UNDERSCORE && s.startsWith(PREFIX, p)) {
        steps += PREFIX.length;
        magicAt = p;
      }
      // `__` ending the run at p, p + 1, then 8 hex digits and `_`.
      if (magicAt >= 0 && p >= magicAt + PREFIX.length && c === UNDERSCORE && s.charCodeAt(p + 1) === UNDERSCORE) {
        let q = p + 2;
        while (q < p + 10 && q < n && isHex(s.charCodeAt(q))) q++;
        steps += q - p - 2;
        if (q === p + 10 && s.charCodeAt(q) === UNDERSCORE) return true;
      }
    }
    return false;
  } finally {
    if (stats) stats.steps += steps;
  }
}
