/**
 * How many front threads a node runs and how they share the port (src/http/threads/plan.ts,
 * CONTRACT 20): the node:http fallback runs one; SO_REUSEPORT on Linux; the acceptor where the
 * binary has it; an explicit acceptor without it refuses to start.
 */
import t from 'tap';
import { planThreads } from '../../../src/http/threads/plan.js';
import { ConfigError } from '../../../src/config.js';

const uws = { kind: 'uws' as const, acceptor: false };
const uwsAcceptor = { kind: 'uws' as const, acceptor: true };

t.test('one thread asked: the main thread alone', async (t) => {
  t.match(planThreads(1, 'auto', uws, 'linux'), { mode: 'single', extra: 0, serving: 1, note: null });
});

t.test('the node:http fallback serves on one thread, and says why', async (t) => {
  const p = planThreads(4, 'auto', { kind: 'node', acceptor: false }, 'linux');
  t.match(p, { mode: 'single', extra: 0, serving: 1 });
  t.match(p.note, /node:http fallback serves on one thread/);
});

t.test('auto: SO_REUSEPORT on Linux, the main thread and N-1 more', async (t) => {
  t.match(planThreads(4, 'auto', uwsAcceptor, 'linux'), { mode: 'reuseport', extra: 3, serving: 4, note: null });
});

t.test('auto elsewhere: the acceptor where the binary has it (the main thread only accepts), else one thread', async (t) => {
  t.match(planThreads(4, 'auto', uwsAcceptor, 'darwin'), { mode: 'acceptor', extra: 4, serving: 4 });
  const none = planThreads(4, 'auto', uws, 'win32');
  t.match(none, { mode: 'single', serving: 1 });
  t.match(none.note, /one front thread/);
});

t.test('an explicit acceptor without one in the binary refuses to start; reuseport off Linux warns', async (t) => {
  let err: unknown;
  try {
    planThreads(2, 'acceptor', uws, 'linux');
  } catch (e) {
    err = e;
  }
  t.ok(err instanceof ConfigError, 'a configuration error (the node does not start)');
  t.match((err as Error).message, /VEXIL_FRONT_ACCEPT=acceptor: this uWebSockets.js binary has no acceptor pattern/);
  const p = planThreads(2, 'reuseport', uws, 'darwin');
  t.match(p, { mode: 'reuseport', extra: 1, serving: 2 });
  t.match(p.note, /may not spread connections/);
});
