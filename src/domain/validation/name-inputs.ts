/** Parsing name inputs: single names and name lists (environments, applications, organizations, flags). */
import { z } from 'zod';
import { assertUniqueCI, flagName, name, parseInput } from './common.js';

/** One environment / application / organization name (e.g. `renameEnvironment(to)`). */
export function parseName(data: unknown, what: string): string {
  return parseInput(name, data, what);
}

/** One flag name (FLAG_NAME_RE). */
export function parseFlagName(data: unknown, what = 'name'): string {
  return parseInput(flagName, data, what);
}

/** The organization's environments or applications: non-empty, valid, case-insensitively unique. */
export function parseNameList(data: unknown, what: 'environments' | 'applications'): string[] {
  const list = parseInput(z.array(name).min(1), data, what);
  assertUniqueCI(list, what);
  return list;
}

/**
 * The environments of one flag (`createFlag.environments`, `updateFlagEnvironments`): valid,
 * case-insensitively unique names; may be empty (the flag then evaluates nowhere).
 */
export function parseFlagEnvironments(data: unknown, what = 'environments'): string[] {
  const list = parseInput(z.array(name), data, what);
  assertUniqueCI(list, what);
  return list;
}
