/**
 * How many front threads a node runs and how they share its port (CONTRACT 20, docs/threads.md),
 * decided once at start-up from VEXIL_FRONT_THREADS, VEXIL_FRONT_ACCEPT, the HTTP front that
 * loaded and the platform. Pure.
 */
import { ConfigError } from '../../config.js';

export interface ThreadPlan {
  /**
   * `single`: the main thread alone. `reuseport`: the main thread and `extra` more, each listening
   * (SO_REUSEPORT). `acceptor`: the main thread accepts and hands connections to `extra` threads.
   */
  mode: 'single' | 'reuseport' | 'acceptor';
  /** Threads to start besides the main thread. */
  extra: number;
  /** Threads that serve requests (what /healthz reports as `frontThreads`). */
  serving: number;
  /** Why fewer threads serve than were asked for, or a caveat; null when none. */
  note: string | null;
}

export interface FrontAbilities {
  kind: 'uws' | 'node';
  /** The uWebSockets.js binary has the acceptor pattern (getDescriptor / addChildAppDescriptor). */
  acceptor: boolean;
}

const single = (note: string | null): ThreadPlan => ({ mode: 'single', extra: 0, serving: 1, note });

export function planThreads(requested: number, accept: 'auto' | 'reuseport' | 'acceptor', front: FrontAbilities, platform: string = process.platform): ThreadPlan {
  if (requested <= 1) return single(null);
  if (front.kind === 'node') return single(`the node:http fallback serves on one thread (VEXIL_FRONT_THREADS=${requested} asked for more)`);
  const mode = accept !== 'auto' ? accept : platform === 'linux' ? 'reuseport' : front.acceptor ? 'acceptor' : null;
  if (mode === null) {
    return single(`neither SO_REUSEPORT spreading (Linux) nor uWebSockets.js's acceptor pattern is available here: one front thread (VEXIL_FRONT_THREADS=${requested} asked for more)`);
  }
  if (mode === 'acceptor') {
    if (!front.acceptor) {
      throw new ConfigError("VEXIL_FRONT_ACCEPT=acceptor: this uWebSockets.js binary has no acceptor pattern (getDescriptor / addChildAppDescriptor); use 'reuseport' on Linux or a newer uWebSockets.js build");
    }
    return { mode, extra: requested, serving: requested, note: null };
  }
  const note = platform === 'linux' ? null : `SO_REUSEPORT on ${platform} may not spread connections across threads; VEXIL_FRONT_ACCEPT=acceptor does where the binary has it`;
  return { mode, extra: requested - 1, serving: requested, note };
}
