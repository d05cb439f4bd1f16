/**
 * The guard of every test that runs compiled code (dist/: the management actor, the pool's
 * workers, `node dist/src/main.js`, the UI bundle, the provider bundle): it refuses to run on a
 * dist/ older than its sources, instead of silently testing yesterday's build. The build script
 * owns what "older" means (scripts/build.mjs, `outOfDate`); this only asks it, once per process.
 */
// @ts-expect-error: a plain ES module without declarations, shared with `npm run build`
import { outOfDate } from '../../scripts/build.mjs';
import { projectRoot } from '../../src/util/paths.js';

export interface Staleness {
  step: string;
  file: string;
  reason: string;
}

/** Why dist/ under `root` cannot be tested, or null when it is current (`steps`: the build's own by default). */
export function distStaleness(root: string = projectRoot(), steps?: unknown[]): string | null {
  const stale = outOfDate(root, steps) as Staleness[];
  if (stale.length === 0) return null;
  const s = stale[0]!;
  const what = s.reason.endsWith(' changed') ? `dist/ is older than ${s.file}` : `dist/ is out of date (${s.reason})`;
  return `${what}: run npm run build`;
}

let checked = false;

/** Throws, saying why, when dist/ is older than its sources; checks once per test process. */
export function requireFreshDist(): void {
  if (checked) return;
  const why = distStaleness();
  if (why !== null) throw new Error(why);
  checked = true;
}
