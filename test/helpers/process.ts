/**
 * A Vexil node as a real process (`node dist/src/main.js`): a crash is an exit, SIGKILL and
 * SIGSTOP reach it as they would in production. Used by the fault tests (test/cluster/failures,
 * test/cluster/storage/db-cuts, test/long/chaos).
 *
 *   const p = await spawnNode(t, { env: { DATABASE_URL: url } });
 *   p.url; p.exit;            // the URL it printed; null while it runs, else {code, signal}
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { projectPath } from '../../src/util/paths.js';
import { requireFreshDist } from './dist.js';

export interface ProcessExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface NodeProcess {
  child: ChildProcess;
  /** `http://host:port` from the "Vexil listening on" line. */
  url: string;
  /** null while the process runs. */
  readonly exit: ProcessExit | null;
  /** Resolves when the process exits. */
  exited: Promise<ProcessExit>;
  /** The last `stderrKeep` characters of its stderr (when stderr is piped). */
  stderrTail(): string;
  /** Sends `signal` (SIGKILL unless given) and resolves once the process has exited. */
  kill(signal?: NodeJS.Signals): Promise<ProcessExit>;
}

export interface SpawnNodeOptions {
  /** Settings for the node; merged over HOST=127.0.0.1, PORT=0, VEXIL_EVAL_WORKERS=0, VEXIL_LOG_LEVEL=warn. */
  env?: Record<string, string>;
  /** Another build's main.js (default: this worktree's dist/src/main.js). */
  main?: string;
  cwd?: string;
  /** 'pipe' (default) keeps a tail for stderrTail() and calls onStderr; 'inherit' shows it. */
  stderr?: 'pipe' | 'inherit';
  onStderr?: (text: string) => void;
  stderrKeep?: number;
  /** CPUs to pin the node to (`taskset -c`), its children included. */
  taskset?: string;
  /** A command that execs the node (`setpriv …` dropping a capability), after taskset. */
  wrap?: string[];
  /** How long to wait for the listening line (default 60 s). */
  startTimeoutMs?: number;
}

/**
 * The environment a child node gets: this process's, without the settings that would change
 * what the node does (VEXIL_*, DATABASE_URL, NATS_URL, PORT, HOST; VEXIL_HTTP_FRONT is kept so
 * `VEXIL_HTTP_FRONT=node npm test` still reaches it), then `env`.
 */
export function childEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if ((k.startsWith('VEXIL_') && k !== 'VEXIL_HTTP_FRONT') || ['DATABASE_URL', 'NATS_URL', 'PORT', 'HOST'].includes(k)) continue;
    out[k] = v;
  }
  return { ...out, HOST: '127.0.0.1', PORT: '0', VEXIL_EVAL_WORKERS: '0', VEXIL_LOG_LEVEL: 'warn', ...env };
}

/**
 * Starts a node process and waits for its "Vexil listening on" line. With `t`, the process is
 * SIGKILLed at teardown. Rejects if it exits (or stays silent) before listening.
 */
export async function spawnNode(t: { teardown(fn: () => unknown): void } | null, opts: SpawnNodeOptions = {}): Promise<NodeProcess> {
  if (opts.main === undefined) requireFreshDist();
  const main = opts.main ?? projectPath('dist', 'src', 'main.js');
  // taskset execs the node, so the child's pid is the node's.
  const [cmd, ...args] = [...(opts.taskset === undefined ? [] : ['taskset', '-c', opts.taskset]), ...(opts.wrap ?? []), process.execPath, main];
  const child = spawn(cmd, args, {
    cwd: opts.cwd ?? projectPath(),
    env: childEnv(opts.env ?? {}),
    stdio: ['ignore', 'pipe', opts.stderr === 'inherit' ? 'inherit' : 'pipe'],
  });
  t?.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  const keep = opts.stderrKeep ?? 8000;
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => {
    const text = d.toString();
    stderr = (stderr + text).slice(-keep);
    opts.onStderr?.(text);
  });
  let exit: ProcessExit | null = null;
  const exited = new Promise<ProcessExit>((resolve) =>
    child.once('exit', (code, signal) => {
      exit = { code, signal };
      resolve(exit);
    }),
  );
  let out = '';
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`no listening line within ${opts.startTimeoutMs ?? 60_000} ms; stdout: ${out}; stderr: ${stderr.slice(-2000)}`)),
      opts.startTimeoutMs ?? 60_000,
    );
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /Vexil listening on (\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    void exited.then((e) => {
      clearTimeout(timer);
      reject(new Error(`node exited (${e.code ?? e.signal}) before listening: ${out}${stderr.slice(-2000)}`));
    });
  });
  return {
    child,
    url,
    get exit() {
      return exit;
    },
    exited,
    stderrTail: () => stderr,
    kill: (signal: NodeJS.Signals = 'SIGKILL') => {
      if (exit === null) child.kill(signal);
      return exited;
    },
  };
}
