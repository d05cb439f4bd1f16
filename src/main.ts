/** `npm start`: one node from the environment's settings (README, "Configuration"). */
import { ConfigError, loadConfig } from './config.js';
import { startNode } from './node.js';
import { createLogger } from './util/log.js';

/** Lines of the process itself (start-up failures, signals): JSON like every other log line. */
const processLog = (level: Parameters<typeof createLogger>[0]) => createLogger(level).child({ component: 'main' });

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      processLog('info').error(err.message);
      process.exit(2);
    }
    throw err;
  }
  const log = processLog(config.logLevel);
  // The process's V8 and libuv helper threads keep the front's priority: they collect the front's
  // and the evaluation workers' garbage, and the front waits for them at the end of a scavenge. (They
  // were lowered to nice 10 when the management actor was a thread of this process; it is a process
  // of its own, and a nice-10 actor would share a core with them evenly: docs/cluster.md.)
  // The handlers come before the start: the port answers (/readyz included) while the other front
  // threads still start, and a SIGTERM then must not be lost. As PID 1 in a container a signal
  // without a handler is ignored, and the runtime would SIGKILL the node after its grace.
  let node: Awaited<ReturnType<typeof startNode>> | null = null;
  let stopping = false;
  let pending: string | null = null;
  let startDeadline: NodeJS.Timeout | undefined;
  const stop = (signal: string) => {
    if (stopping) return;
    if (node === null) {
      // Still starting: shut down in order as soon as the node is up, or give up after the grace.
      if (pending === null) {
        pending = signal;
        log.info('signal received while starting; shutting down once started', { signal });
        startDeadline = setTimeout(() => process.exit(1), config.shutdownGraceMs).unref();
      }
      return;
    }
    stopping = true;
    clearTimeout(startDeadline);
    log.info('signal received, shutting down', { signal });
    node.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
  node = await startNode(config);
  if (node.generatedAdminKey !== null) {
    // Printed once, on first start only (README, "Quick start"); never logged.
    process.stdout.write(
      `Bootstrap admin key for organization "default" (shown once; store it now):\n${node.generatedAdminKey}\n`,
    );
  }
  process.stdout.write(`Vexil listening on ${node.url}\n`);
  if (pending !== null) stop(pending);
}

main().catch((err) => {
  processLog('info').error('failed to start', { err });
  process.exit(1);
});
