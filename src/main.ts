/** `npm start`: one node from the environment's settings (CONTRACT.md 1). */
import { ConfigError, loadConfig } from './config.js';
import { startNode } from './node.js';

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`vexil: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const node = await startNode(config);
  if (node.generatedAdminKey !== null) {
    // Printed once, on first start only (CONTRACT.md 2); never logged.
    process.stdout.write(
      `Bootstrap admin key for organization "default" (shown once; store it now):\n${node.generatedAdminKey}\n`,
    );
  }
  process.stdout.write(`Vexil listening on ${node.url}\n`);
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    process.stderr.write(`vexil: ${signal}, shutting down\n`);
    node.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}

main().catch((err) => {
  process.stderr.write(`vexil: failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
