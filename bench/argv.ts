/**
 * The one option reader of the stand-alone micro-benches (`node dist/bench/<name>.js --rounds 9`):
 * bench/run.ts's options are bench/options.ts's.
 */

/** The number after `--name` in `argv` (Number() of it, as given), or `fallback` when `--name` is absent. */
export function numberArg(name: string, fallback: number, argv: readonly string[] = process.argv): number {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? Number(argv[i + 1]) : fallback;
}
