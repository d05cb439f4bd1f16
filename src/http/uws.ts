/**
 * uWebSockets.js, loaded once. The package silently falls back to a slow Node.js shim when its
 * native binary does not load; `assertNativeUws` refuses to run on that shim unless the operator
 * explicitly allows it (VEXIL_ALLOW_UWS_FALLBACK=1).
 */
import { createRequire } from 'node:module';

export type * from 'uWebSockets.js';
type UwsModule = typeof import('uWebSockets.js');

export const uws = createRequire(import.meta.url)('uWebSockets.js') as UwsModule;

/** True when the native binary is in use (its functions are native code). */
export function isNativeUws(mod: { App: unknown } = uws): boolean {
  return typeof mod.App === 'function' && /^function\s*\w*\s*\(\)\s*\{\s*\[native code\]\s*\}$/.test(Function.prototype.toString.call(mod.App));
}

export function assertNativeUws(allowFallback: boolean, mod: { App: unknown } = uws): void {
  if (isNativeUws(mod) || allowFallback) return;
  throw new Error(
    'uWebSockets.js is running on its slow JavaScript fallback (the native binary did not load for ' +
      `Node ${process.version} on ${process.platform}-${process.arch}). Refusing to start; set ` +
      'VEXIL_ALLOW_UWS_FALLBACK=1 to run anyway.',
  );
}
