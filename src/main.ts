/** `npm start`: one node from the environment's settings (README, "Configuration"). */
import { ConfigError, loadConfig } from './config.js';
import { startNode } from './node.js';
import { createLogger } from './util/log.js';
import { yieldHelperThreads } from './util/thread-priority.js';

/** V8's and libuv's helper threads yield to the front thread and the evaluation workers (util/thread-priority.ts). */
const HELPER_THREADS_NICE = 10;

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
  // Before any worker starts: only the process's own helper threads exist yet.
  const yielded = yieldHelperThreads(HELPER_THREADS_NICE);
  log.debug('helper threads yield to the front', { threads: yielded, nice: HELPER_THREADS_NICE });
  const node = await startNode(config);
  if (node.generatedAdminKey !== null) {
    // Printed once, on first start only (README, "Quick start"); never logged.
    process.stdout.write(
      `Bootstrap admin key for organization "default" (shown once; store it now):\n${node.generatedAdminKey}\n`,
    );
  }
  process.stdout.write(`Vexil listening on ${node.url}\n`);
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info('signal received, shutting down', { signal });
    node.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}

main().catch((err) => {
  processLog('info').error('failed to start', { err });
  process.exit(1);
});
