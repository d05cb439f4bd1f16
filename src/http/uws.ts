/**
 * Finds a native uWebSockets.js binary that loads on this Node.js and libc. uWebSockets.js is not
 * on the npm registry under its own name; two republished packages carry its binaries:
 *
 * - `@btc-vision/uwebsockets.js` 20.57 (optional dependency): Node 20, 22, 24, 25; needs glibc ≥ 2.38.
 * - `@trufflesuite/uws-js-unofficial` 20.30 (installed as `uWebSockets.js`): Node ≤ 20; glibc 2.36 is
 *   enough. Its own entry point silently falls back to a broken JavaScript shim, so its binary is
 *   required directly and the shim is never used.
 *
 * Newest first. When none loads, `loadNativeUws` says why for each, and the node runs on the
 * `node:http` front instead (src/http/node-front.ts).
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

export type * from 'uWebSockets.js';
export type UwsModule = typeof import('uWebSockets.js');

const require = createRequire(import.meta.url);

export interface UwsCandidate {
  /** npm package name. */
  name: string;
  load(): UwsModule;
}

const binaryName = () => `uws_${process.platform}_${process.arch}_${process.versions.modules}.node`;

export const UWS_CANDIDATES: UwsCandidate[] = [
  { name: '@btc-vision/uwebsockets.js', load: () => require('@btc-vision/uwebsockets.js') as UwsModule },
  {
    name: '@trufflesuite/uws-js-unofficial',
    load: () => {
      const pkgDir = dirname(require.resolve('uWebSockets.js/package.json'));
      return require(join(pkgDir, 'binaries', binaryName())) as UwsModule;
    },
  },
];

export type UwsLoad =
  | { ok: true; module: UwsModule; name: string; version: string }
  | { ok: false; reasons: string[] };

function versionOf(name: string): string {
  try {
    const pkgName = name === '@trufflesuite/uws-js-unofficial' ? 'uWebSockets.js' : name;
    return (require(`${pkgName}/package.json`) as { version: string }).version;
  } catch {
    return 'unknown';
  }
}

/** The first candidate whose native binary loads and really is native code. */
export function loadNativeUws(candidates: UwsCandidate[] = UWS_CANDIDATES): UwsLoad {
  const reasons: string[] = [];
  for (const c of candidates) {
    try {
      const mod = c.load();
      if (!isNativeUws(mod)) {
        reasons.push(`${c.name}: not native code`);
        continue;
      }
      return { ok: true, module: mod, name: c.name, version: versionOf(c.name) };
    } catch (err) {
      const msg = err instanceof Error ? err.message : String(err);
      // The loader's first line says what failed: a missing ABI binary, or a glibc symbol version.
      const glibc = /GLIBC_[0-9.]+/.exec(msg);
      const missing = /Cannot find module|MODULE_NOT_FOUND/.test(msg);
      reasons.push(`${c.name}: ${glibc ? `needs ${glibc[0]}` : missing ? `no binary for Node ${process.version} (ABI ${process.versions.modules})` : msg.split('\n')[0]}`);
    }
  }
  return { ok: false, reasons };
}

/** True when `mod.App` is native code (not a JavaScript shim). */
export function isNativeUws(mod: { App: unknown }): boolean {
  return typeof mod.App === 'function' && /^function\s*\w*\s*\(\)\s*\{\s*\[native code\]\s*\}$/.test(Function.prototype.toString.call(mod.App));
}
