/**
 * Process helpers for the benchmark harness: free ports, CPU pinning,
 * child processes with captured output, and /proc sampling.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';

/** Ports the harness must never use (other services on this machine / CI). */
export const FORBIDDEN_PORTS = new Set([4222, 5432, 6379, 5672, 1883, 3306, 8222]);

/** A free TCP port on 127.0.0.1, found by binding port 0. */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const port = await new Promise<number>((resolve, reject) => {
      const srv = net.createServer();
      srv.unref();
      srv.once('error', reject);
      srv.listen(0, '127.0.0.1', () => {
        const addr = srv.address();
        const p = typeof addr === 'object' && addr !== null ? addr.port : 0;
        srv.close(() => resolve(p));
      });
    });
    if (port > 0 && !FORBIDDEN_PORTS.has(port)) return port;
  }
  throw new Error('could not find a free port');
}

let tasksetChecked: boolean | undefined;

/** True when `taskset` runs and the machine has at least two CPUs to split. */
export function canPin(): boolean {
  if (tasksetChecked === undefined) {
    const r = spawnSync('taskset', ['-c', '0', 'true'], { stdio: 'ignore' });
    tasksetChecked = r.status === 0 && os.availableParallelism() >= 2;
  }
  return tasksetChecked;
}

/** Command + args, prefixed with `taskset -c <cpus>` when pinning is on. */
export function pinned(cpus: string | undefined, cmd: string, args: string[]): [string, string[]] {
  if (cpus === undefined || !canPin()) return [cmd, args];
  // taskset execs the command, so the child's pid is the command's pid.
  return ['taskset', ['-c', cpus, cmd, ...args]];
}

/**
 * `cmd args` in SCHED_IDLE (`chrt --idle 0`, where chrt exists): a helper of the load generator's
 * core that must never delay the generator itself (the isolation scenario's admin client, which
 * decompresses 37 MB lists). Without chrt the command runs as it is.
 */
export function idlePolicy(cmd: string, args: string[]): [string, string[]] {
  if (process.platform !== 'linux' || !existsSync('/usr/bin/chrt')) return [cmd, args];
  return ['/usr/bin/chrt', ['--idle', '0', cmd, ...args]];
}

/** A child process whose recent output is kept for error messages. */
export interface Child {
  proc: ChildProcess;
  pid: number;
  /** Last lines of stdout+stderr. */
  tail(): string;
  /** Resolves with the first stdout line matching `re` (rejects on exit/timeout). */
  waitForLine(re: RegExp, timeoutMs: number): Promise<RegExpMatchArray>;
  /** Calls `fn` with every complete line of stdout and stderr from now on. */
  onLine(fn: (line: string, stream: 'stdout' | 'stderr') => void): void;
  exited: Promise<number | null>;
  exitCode(): number | null | undefined;
  stop(): Promise<void>;
}

export function startChild(
  label: string,
  cmd: string,
  args: string[],
  opts: { env?: NodeJS.ProcessEnv; cpus?: string; cwd?: string; echo?: boolean } = {},
): Child {
  const [c, a] = pinned(opts.cpus, cmd, args);
  const proc = spawn(c, a, {
    env: opts.env ?? process.env,
    cwd: opts.cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  const push = (s: string): void => {
    for (const line of s.split('\n')) {
      if (line === '') continue;
      lines.push(line);
      if (opts.echo) process.stderr.write(`[${label}] ${line}\n`);
    }
    if (lines.length > 60) lines.splice(0, lines.length - 60);
  };
  const waiters: Array<{ re: RegExp; resolve: (m: RegExpMatchArray) => void }> = [];
  let stdoutBuf = '';
  proc.stdout!.setEncoding('utf8');
  proc.stdout!.on('data', (d: string) => {
    push(d);
    stdoutBuf += d;
    let nl: number;
    while ((nl = stdoutBuf.indexOf('\n')) >= 0) {
      const line = stdoutBuf.slice(0, nl);
      stdoutBuf = stdoutBuf.slice(nl + 1);
      for (const fn of lineListeners) fn(line, 'stdout');
      for (let i = waiters.length - 1; i >= 0; i--) {
        const m = line.match(waiters[i].re);
        if (m) {
          waiters[i].resolve(m);
          waiters.splice(i, 1);
        }
      }
    }
  });
  const lineListeners: Array<(line: string, stream: 'stdout' | 'stderr') => void> = [];
  let stderrBuf = '';
  proc.stderr!.setEncoding('utf8');
  proc.stderr!.on('data', (d: string) => {
    push(d);
    if (lineListeners.length === 0) return;
    stderrBuf += d;
    let nl: number;
    while ((nl = stderrBuf.indexOf('\n')) >= 0) {
      const line = stderrBuf.slice(0, nl);
      stderrBuf = stderrBuf.slice(nl + 1);
      for (const fn of lineListeners) fn(line, 'stderr');
    }
  });
  let code: number | null | undefined;
  const exited = new Promise<number | null>((resolve) => {
    proc.once('exit', (c2) => {
      code = c2; // null when killed by a signal
      resolve(c2);
    });
    proc.once('error', (err) => {
      push(`spawn error: ${err.message}`);
      code = -1;
      resolve(-1);
    });
  });
  track(proc);
  return {
    proc,
    pid: proc.pid ?? -1,
    tail: () => lines.join('\n'),
    exited,
    exitCode: () => code,
    onLine: (fn) => {
      lineListeners.push(fn);
    },
    waitForLine(re, timeoutMs) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          reject(new Error(`${label}: no line matching ${re} within ${timeoutMs} ms\n${lines.join('\n')}`));
        }, timeoutMs);
        waiters.push({
          re,
          resolve: (m) => {
            clearTimeout(timer);
            resolve(m);
          },
        });
        void exited.then((c2) => {
          clearTimeout(timer);
          reject(new Error(`${label} exited (code ${String(c2)}) before printing ${re}\n${lines.join('\n')}`));
        });
      });
    },
    async stop() {
      if (code !== undefined) return;
      proc.kill('SIGTERM');
      const t = setTimeout(() => proc.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(t);
    },
  };
}

const children = new Set<ChildProcess>();

/** Remember a child so killAllChildren() ends it on SIGINT or a fatal error. */
export function track(proc: ChildProcess): void {
  children.add(proc);
  proc.once('exit', () => children.delete(proc));
}

/** Kill every child this process started (used on SIGINT / fatal errors). */
export function killAllChildren(): void {
  for (const c of children) {
    if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  }
}

let clkTck: number | undefined;
export function clockTicks(): number {
  if (clkTck === undefined) {
    const r = spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' });
    const n = Number(r.stdout?.trim());
    clkTck = Number.isFinite(n) && n > 0 ? n : 100;
  }
  return clkTck;
}

/**
 * A /proc/<pid>/stat or /proc/<pid>/task/<tid>/stat file (man 5 proc): `comm` (field 2) and
 * `field(n)`, field n as a number by its manual number (3 is state, 14 utime, 19 nice…). comm may
 * contain spaces and parentheses: the fields after it are counted from the last ')'. Throws when
 * the file cannot be read (the process has gone).
 */
export function procStat(path: string): { comm: string; field(n: number): number } {
  const stat = readFileSync(path, 'utf8');
  const close = stat.lastIndexOf(')');
  const rest = stat.slice(close + 2).split(' ');
  return { comm: stat.slice(stat.indexOf('(') + 1, close), field: (n) => Number(rest[n - 3]) };
}

/** utime+stime of a process (all its threads) in seconds, from /proc/<pid>/stat. */
export function cpuSeconds(pid: number): number {
  try {
    const st = procStat(`/proc/${pid}/stat`);
    return (st.field(14) + st.field(15)) / clockTicks();
  } catch {
    return NaN;
  }
}

/** A kB field of /proc/<pid>/status (VmRSS, VmHWM…) in MiB; NaN when unreadable. */
export function statusMiB(pid: number, field: string): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const m = status.match(new RegExp(`^${field}:\\s+(\\d+)\\s+kB`, 'm'));
    return m ? Number(m[1]) / 1024 : NaN;
  } catch {
    return NaN;
  }
}

/** Peak resident set size (VmHWM) in MiB, from /proc/<pid>/status. */
export function peakRssMiB(pid: number): number {
  return statusMiB(pid, 'VmHWM');
}

/** Machine facts recorded beside every result. */
export function machineInfo(): Record<string, unknown> {
  const cpus = os.cpus();
  return {
    hostname: os.hostname(),
    platform: `${os.platform()} ${os.release()}`,
    cpuModel: cpus[0]?.model ?? 'unknown',
    cpus: cpus.length,
    availableParallelism: os.availableParallelism(),
    totalMemMiB: Math.round(os.totalmem() / 1048576),
    node: process.version,
    loadavg: os.loadavg(),
  };
}

/** Machine-wide CPU counters from /proc/stat, in seconds (summed over CPUs). */
export interface SystemCpu {
  busySec: number;
  softirqSec: number;
}

export function systemCpu(): SystemCpu {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0];
    // cpu user nice system idle iowait irq softirq steal guest guest_nice
    const f = line.trim().split(/\s+/).slice(1).map(Number);
    const t = clockTicks();
    const busy = f[0] + f[1] + f[2] + f[5] + f[6] + (f[7] ?? 0);
    return { busySec: busy / t, softirqSec: (f[5] + f[6]) / t };
  } catch {
    return { busySec: NaN, softirqSec: NaN };
  }
}

/**
 * What the rest of the machine was doing, for telling a stall of the node from a neighbour's
 * (docs/benchmarks.md, "Finding a stall"): the processes started since boot (/proc/stat
 * `processes`, forks of any kind) and, per process outside `ours`, its CPU with what it has
 * reaped of its children (fields 14-17 of /proc/<pid>/stat), so a short-lived process that came
 * and went between two samples still counts, under its parent's name.
 */
export interface OutsideSample {
  forks: number;
  /** pid → [comm, CPU seconds]. */
  cpu: Map<number, [string, number]>;
}

export function outsideSample(ours: ReadonlySet<number>): OutsideSample {
  let forks = NaN;
  try {
    const m = readFileSync('/proc/stat', 'utf8').match(/^processes (\d+)$/m);
    if (m) forks = Number(m[1]);
  } catch {
    // Not Linux: no figure.
  }
  const cpu = new Map<number, [string, number]>();
  let pids: string[] = [];
  try {
    pids = readdirSync('/proc').filter((d) => /^\d+$/.test(d));
  } catch {
    return { forks, cpu };
  }
  const ticks = clockTicks();
  for (const d of pids) {
    const pid = Number(d);
    if (ours.has(pid)) continue;
    try {
      const st = procStat(`/proc/${pid}/stat`);
      // utime, stime, cutime, cstime: fields 14-17.
      cpu.set(pid, [st.comm, (st.field(14) + st.field(15) + st.field(16) + st.field(17)) / ticks]);
    } catch {
      // Gone meanwhile.
    }
  }
  return { forks, cpu };
}

/** Between two samples: processes started, CPU in all, and the busiest names (ms), busiest first. */
export function outsideDelta(before: OutsideSample, after: OutsideSample): { forks: number; cpuMs: number; top: Array<[string, number]> } {
  const byName = new Map<string, number>();
  let total = 0;
  for (const [pid, [comm, sec]] of after.cpu) {
    // A process new since `before` (started meanwhile) counts whole.
    const ms = (sec - (before.cpu.get(pid)?.[1] ?? 0)) * 1000;
    if (ms <= 0) continue;
    total += ms;
    byName.set(comm, (byName.get(comm) ?? 0) + ms);
  }
  return { forks: after.forks - before.forks, cpuMs: total, top: [...byName.entries()].sort((x, y) => y[1] - x[1]) };
}

/** `pid` and all its descendant processes (from /proc/<pid>/task/<tid>/children). */
export function processTree(pid: number): number[] {
  const out: number[] = [];
  const visit = (p: number): void => {
    out.push(p);
    let tids: string[];
    try {
      tids = readdirSync(`/proc/${p}/task`);
    } catch {
      return;
    }
    for (const tid of tids) {
      let kids = '';
      try {
        kids = readFileSync(`/proc/${p}/task/${tid}/children`, 'utf8');
      } catch {
        continue;
      }
      for (const k of kids.trim().split(/\s+/)) if (k !== '') visit(Number(k));
    }
  };
  visit(pid);
  return out;
}
