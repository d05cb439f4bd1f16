/**
 * The chaos test's machinery (test/long/chaos/chaos.test.ts, docs/chaos.md): node processes that can be
 * killed, frozen and restarted on their own port; writes that retry with an Idempotency-Key until
 * their outcome is known; evaluation loops that record every answer; fault windows.
 */
import { spawnNode, type NodeProcess, type ProcessExit } from '../../helpers/process.js';

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export interface CallResult {
  /** 0: no answer (refused, reset, or timed out). */
  status: number;
  body: any;
  text: string;
  ms: number;
}

/** One HTTP request with a deadline; never throws. */
export async function call(
  base: string,
  method: string,
  path: string,
  opts: { key?: string; body?: unknown; headers?: Record<string, string>; timeoutMs?: number } = {},
): Promise<CallResult> {
  const t0 = performance.now();
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.key !== undefined) headers['x-management-key'] = opts.key;
  let body: string | undefined;
  if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers['content-type'] = 'application/json';
  }
  try {
    const res = await fetch(base + path, { method, headers, body, signal: AbortSignal.timeout(opts.timeoutMs ?? 5000) });
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = text === '' ? undefined : JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    return { status: res.status, body: parsed, text, ms: performance.now() - t0 };
  } catch (err) {
    return { status: 0, body: undefined, text: String((err as Error)?.cause ?? err), ms: performance.now() - t0 };
  }
}

export interface UnexpectedExit {
  node: string;
  exit: ProcessExit;
  at: number;
  stderrTail: string;
}

/** One Vexil node process on a fixed port, restartable there after a SIGKILL. */
export class ChaosNode {
  proc: NodeProcess | null = null;
  /** Set while the test itself is killing the process: its exit is expected. */
  private killing = false;
  restarts = 0;
  readonly url: string;

  constructor(
    readonly name: string,
    readonly port: number,
    private readonly env: Record<string, string>,
    private readonly onUnexpectedExit: (e: UnexpectedExit) => void,
    private readonly teardown: { teardown(fn: () => unknown): void },
  ) {
    this.url = `http://127.0.0.1:${port}`;
  }

  get running(): boolean {
    return this.proc !== null && this.proc.exit === null;
  }

  async start(): Promise<void> {
    let lastErr: unknown;
    // The port was just freed by a SIGKILL: a bind can still fail for a moment; try again.
    for (let attempt = 0; attempt < 10; attempt++) {
      try {
        const proc = await spawnNode(this.teardown, {
          env: { ...this.env, PORT: String(this.port), VEXIL_NODE_ID: this.name },
          stderrKeep: 20_000,
        });
        this.proc = proc;
        void proc.exited.then((exit) => {
          if (this.proc === proc && !this.killing) {
            this.onUnexpectedExit({ node: this.name, exit, at: Date.now(), stderrTail: proc.stderrTail().slice(-4000) });
          }
        });
        return;
      } catch (err) {
        lastErr = err;
        await sleep(300);
      }
    }
    throw lastErr;
  }

  async kill(): Promise<void> {
    if (this.proc === null) return;
    this.killing = true;
    try {
      await this.proc.kill('SIGKILL');
    } finally {
      this.killing = false;
    }
  }

  signal(sig: 'SIGSTOP' | 'SIGCONT'): void {
    this.proc?.child.kill(sig);
  }

  /** Waits until /readyz answers 200 (or `timeoutMs` passes); returns whether it did. */
  async ready(timeoutMs = 30_000): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if ((await call(this.url, 'GET', '/readyz', { timeoutMs: 1000 })).status === 200) return true;
      await sleep(50);
    }
    return false;
  }
}

// ---- writes ------------------------------------------------------------------------------------

export type WriteKind = 'create' | 'update' | 'config' | 'counter';

/** How a write ended, as the client saw it. */
export type Outcome =
  | 'acked' // a 2xx answer (first or replayed)
  | 'committed' // 409: its Idempotency-Key record exists (so it committed) but the answer was lost
  | 'rejected' // a 4xx answer other than those: a definitive refusal
  | 'unknown'; // no definitive answer before the retry budget ran out

export interface Write {
  /** Unique: the Idempotency-Key, and the marker the write leaves in the data (description or rule id). */
  id: string;
  kind: WriteKind;
  flag: string;
  /** Order of the writes to one flag (one owner writes each flag, one write at a time). */
  seq: number;
  outcome?: Outcome;
  statuses: number[];
  attempts: number;
  ms: number;
  /** Date.now() of the first attempt. */
  startedAt?: number;
  lastText?: string;
}

export interface WriteStats {
  byStatus: Map<number, number>;
  retries: number;
  replayed: number;
}

const RETRYABLE = new Set([0, 500, 502, 503, 504]);

/**
 * Sends one write until its outcome is known: 2xx (acked), a definitive 4xx (rejected), or a 409
 * whose record says it committed; on no answer, 5xx, or 409 "did not complete", again with the same
 * Idempotency-Key on the next node, for at most `budgetMs`.
 */
export async function sendWrite(
  w: Write,
  nodes: ChaosNode[],
  startAt: number,
  key: string,
  method: string,
  path: string,
  body: unknown,
  stats: WriteStats,
  budgetMs = 30_000,
): Promise<Write> {
  const began = Date.now();
  w.startedAt = began;
  let committedSeen = false;
  for (let attempt = 0; ; attempt++) {
    const node = nodes[(startAt + attempt) % nodes.length];
    const r = await call(node.url, method, path, { key, body, headers: { 'idempotency-key': w.id }, timeoutMs: 8000 });
    w.attempts++;
    w.statuses.push(r.status);
    w.lastText = r.text.slice(0, 300);
    stats.byStatus.set(r.status, (stats.byStatus.get(r.status) ?? 0) + 1);
    if (attempt > 0) stats.retries++;
    if (r.status >= 200 && r.status < 300) {
      w.outcome = 'acked';
      break;
    }
    let retry = RETRYABLE.has(r.status);
    if (r.status === 409) {
      const detail = String(r.body?.detail ?? '');
      if (/still in progress/.test(detail)) {
        committedSeen = true; // the record is only visible once the write committed
        retry = true;
      } else if (/node stopped before recording the answer/.test(detail)) {
        // Committed once; its node died before recording the answer (src/management/idempotency.ts).
        w.outcome = 'committed';
        break;
      } else if (/did not complete; try again/.test(detail)) {
        retry = true;
      }
    }
    if (!retry) {
      w.outcome = 'rejected';
      break;
    }
    if (Date.now() - began > budgetMs) {
      w.outcome = committedSeen ? 'committed' : 'unknown';
      break;
    }
    await sleep(Math.min(1000, 100 * (attempt + 1)));
  }
  if (w.statuses.length > 1 && w.outcome === 'acked') stats.replayed++;
  w.ms = Date.now() - began;
  return w;
}

// ---- evaluation samples ------------------------------------------------------------------------

/** Every evaluation answer of one node: start/end times (ms since the run began) and success. */
export class Samples {
  readonly t0: number[] = [];
  readonly t1: number[] = [];
  readonly ok: boolean[] = [];
  readonly errors: string[] = [];
  add(t0: number, t1: number, ok: boolean, error?: string) {
    this.t0.push(t0);
    this.t1.push(t1);
    this.ok.push(ok);
    if (!ok && error !== undefined && this.errors.length < 50) this.errors.push(error);
  }
}

export interface Window {
  node: string;
  kind: string;
  start: number;
  end: number;
}

/**
 * Availability of one node: answers whose request overlapped one of the node's own fault windows
 * are counted apart (`faulted`) from the rest (`clear`).
 */
export function availability(samples: Samples, windows: Window[]) {
  const own = windows.filter((w) => w.node !== '').sort((a, b) => a.start - b.start);
  const clear = { total: 0, ok: 0 };
  const faulted = { total: 0, ok: 0 };
  const clearFailures: { t0: number; t1: number }[] = [];
  for (let i = 0; i < samples.t0.length; i++) {
    const a = samples.t0[i];
    const b = samples.t1[i];
    const inFault = own.some((w) => a <= w.end && b >= w.start);
    const bucket = inFault ? faulted : clear;
    bucket.total++;
    if (samples.ok[i]) bucket.ok++;
    else if (!inFault) clearFailures.push({ t0: a, t1: b });
  }
  return { clear, faulted, clearFailures };
}

export const pct = (ok: number, total: number) => (total === 0 ? 100 : (100 * ok) / total);
