/**
 * Load generator for the Vexil benchmarks: a module and a CLI.
 *
 * Two engines behind one function, `runLoad(options)`:
 *  - `lean` (default): raw `net` sockets, HTTP/1.1 keep-alive, one prebuilt
 *    request Buffer, responses framed by Content-Length (chunked understood),
 *    optional pipelining, latency in microseconds via perf_hooks histograms.
 *    It costs far less CPU per request than autocannon, so on a 2-core machine
 *    the server rather than the generator is the bottleneck (docs/benchmarks.md).
 *  - `autocannon`: autocannon 9's programmatic API, kept for comparison.
 *
 * CLI:
 *   node dist/bench/load.js --url http://127.0.0.1:8080/flags/x -X POST \
 *     -H 'content-type: application/json' -H 'x-management-key: …' \
 *     --body '{"userId":"u1","stage":"production"}' -c 50 -d 10 [-p 1] \
 *     [--engine lean|autocannon] [--warmup 0] [--rate REQ_PER_SEC] [--json]
 *   node dist/bench/load.js --json --spec '<LoadOptions as JSON>'
 * With --json only the LoadResult JSON is printed on stdout (for run.ts,
 * which runs this file pinned to its own core with runLoadInChild()).
 */
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { writeFileSync } from 'node:fs';
import net from 'node:net';
import { createHistogram, monitorEventLoopDelay, performance, type RecordableHistogram } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { pinned, track } from './proc.js';

export type Engine = 'lean' | 'autocannon';

export interface LoadOptions {
  url: string;
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  connections: number;
  durationSec: number;
  /** Requests in flight per connection; 1 = no pipelining. */
  pipelining?: number;
  engine?: Engine;
  /** Unmeasured load before the measured run, in seconds (same engine, fresh connections). */
  warmupSec?: number;
  /** A connection with requests in flight and no response for this long is reset (counted in timeouts). */
  timeoutSec?: number;
  /**
   * Fixed-rate (paced) mode, lean engine only: total requests per second over all connections
   * instead of a closed loop. Requests are due at evenly spaced times; a due request goes out on
   * an idle connection or, when every connection is busy, waits for the next free one. Latency is
   * measured from the timer tick that issued the request, so queueing behind a slow response
   * counts (no coordinated omission). Pipelining is 1 in this mode. 0 or absent: closed loop.
   */
  rate?: number;
  /**
   * Phase mode (the runner's isolation scenario): this process reads lines from its stdin while the
   * measured run lasts. `phase NAME` starts a phase: every request issued from then on (its
   * scheduled time, not its answer) counts in NAME, and also in the part of NAME before a `#`
   * (`admin#3` counts in `admin#3` and `admin`); transport errors count in the phase current when
   * they happen. `drained?` asks to be told (DRAINED_MARKER on stderr) as soon as no due request
   * waits for a free connection (paced mode), at once if none does. `end` ends the run before
   * durationSec (which is then a cap). The result carries `phases`. The warm-up is never phased.
   */
  phases?: boolean;
}

/** One phase of a phased run (LoadOptions.phases). */
export interface PhaseResult {
  /** Wall time the phase was current, summed over its occurrences. */
  wallSec: number;
  requests: number;
  latencyMs: LoadResult['latencyMs'];
  non2xx: number;
  errors: number;
  timeouts: number;
  statusCodes: Record<string, number>;
  /** The generator's own event-loop delay (ms): the worst p99 of the phase's occurrences, and the max. */
  generatorLoopDelayMs: { p99: number; max: number };
}

export interface LoadResult {
  engine: Engine;
  url: string;
  method: string;
  connections: number;
  pipelining: number;
  /** Measured wall time of the run, seconds. */
  durationSec: number;
  /** Completed responses (any status) within the measured window. */
  requests: number;
  /** requests / durationSec */
  rps: number;
  latencyMs: { p50: number; p90: number; p99: number; p999: number; mean: number; max: number };
  /** Responses with a status outside 200-299. */
  non2xx: number;
  /**
   * Lean engine: the generator's own event-loop delay over the measured run (ms). A stall here
   * (GC, or the generator's CPU taken by another process) delays reading responses and shows up as
   * server latency; compare it with p99/max before blaming the server.
   */
  generatorLoopDelayMs?: { p99: number; max: number };
  /** Paced mode: the requested rate (req/s) and the most requests that were due but waiting for a free connection at once. */
  paced?: { rate: number; maxBacklog: number; lateStarts: number };
  /** Transport errors: connection failures, resets, unparsable responses (timeouts included). */
  errors: number;
  timeouts: number;
  statusCodes: Record<string, number>;
  /** Phase mode: figures per phase name (LoadOptions.phases). */
  phases?: Record<string, PhaseResult>;
  /**
   * CPU time of the generator process over the measured run; `processTotalSec`
   * is its whole life so far (start-up and warm-up included).
   */
  generatorCpu: { userSec: number; systemSec: number; utilization: number; processTotalSec: number };
}

/** Run load against `url` with the chosen engine; resolves after durationSec (+ warmup). */
/**
 * Run load against `url` with the chosen engine; resolves after durationSec (+ warmup). The
 * warm-up runs in this process (its JIT is warm for the measured run) on its own connections;
 * `onMeasureStart` is called when the measured run starts, its connections open.
 */
export async function runLoad(options: LoadOptions, onMeasureStart?: () => void): Promise<LoadResult> {
  const o = normalize(options);
  const run = o.engine === 'autocannon' ? runAutocannon : runLean;
  if (o.warmupSec > 0) await run({ ...o, durationSec: o.warmupSec, phases: false });
  return run(o, onMeasureStart);
}

/** Printed alone on stderr by `load.js --json` when the measured run starts (after the warm-up). */
export const MEASURE_START_MARKER = '@@vexil-bench-measuring';
/** Printed alone on stderr in phase mode when asked `drained?` and no due request waits (LoadOptions.phases). */
export const DRAINED_MARKER = '@@vexil-bench-drained';

type Normalized = Required<Omit<LoadOptions, 'body'>> & { body: string | undefined };

function normalize(o: LoadOptions): Normalized {
  const n: Normalized = {
    url: o.url,
    method: (o.method ?? 'GET').toUpperCase(),
    headers: o.headers ?? {},
    body: o.body,
    connections: Math.max(1, Math.floor(o.connections)),
    durationSec: o.durationSec,
    pipelining: Math.max(1, Math.floor(o.pipelining ?? 1)),
    engine: o.engine ?? 'lean',
    warmupSec: o.warmupSec ?? 0,
    timeoutSec: o.timeoutSec ?? 10,
    rate: o.rate !== undefined && o.rate > 0 ? o.rate : 0,
    phases: o.phases === true,
  };
  if (n.phases && n.engine !== 'lean') throw new Error('phase mode needs the lean engine');
  if (n.rate > 0) {
    if (n.engine !== 'lean') throw new Error('paced mode (rate) needs the lean engine');
    n.pipelining = 1;
  }
  if (!(n.durationSec > 0)) throw new Error('durationSec must be > 0');
  if (n.engine !== 'lean' && n.engine !== 'autocannon') throw new Error(`unknown engine ${String(n.engine)}`);
  return n;
}

function cpuDelta(start: NodeJS.CpuUsage, wallSec: number): LoadResult['generatorCpu'] {
  const d = process.cpuUsage(start);
  const userSec = d.user / 1e6;
  const systemSec = d.system / 1e6;
  const total = process.cpuUsage();
  return {
    userSec,
    systemSec,
    utilization: wallSec > 0 ? (userSec + systemSec) / wallSec : 0,
    processTotalSec: (total.user + total.system) / 1e6,
  };
}

// ---------------------------------------------------------------- lean engine

const CRLFCRLF = Buffer.from('\r\n\r\n', 'latin1');
const CL_EXACT = Buffer.from('Content-Length:', 'latin1');
const CL_LOWER = Buffer.from('content-length:', 'latin1');
const CONN_CLOSE = Buffer.from(': close\r\n', 'latin1');

function buildRequest(o: Normalized): { buf: Buffer; host: string; port: number } {
  const u = new URL(o.url);
  if (u.protocol !== 'http:') throw new Error(`lean engine supports http:// only, got ${u.protocol}`);
  const port = u.port === '' ? 80 : Number(u.port);
  const host = u.hostname.replace(/^\[|\]$/g, '');
  const body = o.body === undefined ? undefined : Buffer.from(o.body, 'utf8');
  let head = `${o.method} ${u.pathname}${u.search} HTTP/1.1\r\nHost: ${u.host}\r\n`;
  const lower = new Set<string>();
  for (const [k, v] of Object.entries(o.headers)) {
    lower.add(k.toLowerCase());
    head += `${k}: ${v}\r\n`;
  }
  if (!lower.has('connection')) head += 'Connection: keep-alive\r\n';
  if (body !== undefined && !lower.has('content-length')) head += `Content-Length: ${body.length}\r\n`;
  head += '\r\n';
  const headBuf = Buffer.from(head, 'latin1');
  return { buf: body === undefined ? headBuf : Buffer.concat([headBuf, body]), host, port };
}

/** Content-Length of the header block buf[start, end), or -1 when absent. */
function contentLength(buf: Buffer, start: number, end: number): number {
  let i = buf.indexOf(CL_EXACT, start);
  if (i < 0 || i >= end) i = buf.indexOf(CL_LOWER, start);
  if (i < 0 || i >= end) {
    const m = buf.toString('latin1', start, end).match(/\r\ncontent-length:[ \t]*(\d+)/i);
    return m ? Number(m[1]) : -1;
  }
  i += CL_EXACT.length;
  while (buf[i] === 0x20 || buf[i] === 0x09) i++;
  let n = 0;
  let digits = 0;
  for (let c = buf[i]; c >= 0x30 && c <= 0x39; c = buf[++i]) {
    n = n * 10 + (c - 0x30);
    digits++;
  }
  return digits > 0 ? n : -1;
}

function isChunked(buf: Buffer, start: number, end: number): boolean {
  return /\r\ntransfer-encoding:[^\r]*chunked/i.test(buf.toString('latin1', start, end));
}

/** End offset of a chunked body starting at `pos`, or -1 when incomplete. */
function chunkedEnd(buf: Buffer, pos: number): number {
  for (;;) {
    const lineEnd = buf.indexOf('\r\n', pos, 'latin1');
    if (lineEnd < 0) return -1;
    const size = parseInt(buf.toString('latin1', pos, lineEnd), 16);
    if (!Number.isFinite(size)) throw new Error('bad chunk size');
    if (size === 0) {
      // Trailers (usually none) end with an empty line.
      if (lineEnd + 4 > buf.length) return -1;
      if (buf[lineEnd + 2] === 0x0d && buf[lineEnd + 3] === 0x0a) return lineEnd + 4;
      const end = buf.indexOf(CRLFCRLF, lineEnd);
      return end < 0 ? -1 : end + 4;
    }
    pos = lineEnd + 2 + size + 2;
    if (pos > buf.length) return -1;
  }
}

interface LeanStats {
  hist: RecordableHistogram;
  status: Uint32Array;
  requests: number;
  errors: number;
  timeouts: number;
  /** Phase mode only. */
  phases?: Phases;
}

const newStats = (): LeanStats => ({
  hist: createHistogram({ lowest: 1, highest: 60_000_000, figures: 3 }),
  status: new Uint32Array(600),
  requests: 0,
  errors: 0,
  timeouts: 0,
});

/** Latency percentiles (ms), status counts and non-2xx of one histogram + status table. */
function summarize(st: LeanStats): Pick<LoadResult, 'latencyMs' | 'statusCodes' | 'non2xx'> {
  const h = st.hist;
  const has = st.requests > 0;
  const ms = (us: number): number => (has && Number.isFinite(us) ? us / 1000 : 0);
  const statusCodes: Record<string, number> = {};
  let non2xx = 0;
  st.status.forEach((count, code) => {
    if (count === 0) return;
    statusCodes[String(code)] = count;
    if (code < 200 || code > 299) non2xx += count;
  });
  return {
    latencyMs: { p50: ms(h.percentile(50)), p90: ms(h.percentile(90)), p99: ms(h.percentile(99)), p999: ms(h.percentile(99.9)), mean: ms(h.mean), max: ms(h.max) },
    statusCodes,
    non2xx,
  };
}

/**
 * Phase mode's book-keeping: the phase switches in time order, and each name's own stats. A
 * response counts in the phase that was current when its request was issued (its send time `t0`).
 */
class Phases {
  private readonly switches: Array<{ at: number; name: string; into: LeanStats[] }> = [];
  private readonly byName = new Map<string, LeanStats & { wallMs: number; loop: { p99: number; max: number } }>();
  /** The generator's event-loop delay within the current phase (reset at each switch). */
  private readonly loopDelay = monitorEventLoopDelay({ resolution: LOOP_DELAY_RESOLUTION_MS });
  private current: { names: string[]; at: number } | undefined;
  private errorsAt = 0;
  private timeoutsAt = 0;

  /**
   * VEXIL_BENCH_SLOW_LOG (a file): each request slower than VEXIL_BENCH_SLOW_MS (10) with its
   * scheduled send as epoch ms and its phase, written when the run ends, to put the slow ones on
   * one clock with the server's logs (docs/benchmarks.md, "Finding a stall").
   */
  private readonly slow: Array<{ at: number; ms: number; phase: string }> | undefined = process.env.VEXIL_BENCH_SLOW_LOG ? [] : undefined;
  private readonly slowUs = Number(process.env.VEXIL_BENCH_SLOW_MS ?? '10') * 1000;

  constructor(private readonly total: LeanStats) {}

  private stats(name: string): LeanStats & { wallMs: number; loop: { p99: number; max: number } } {
    let st = this.byName.get(name);
    if (st === undefined) this.byName.set(name, (st = { ...newStats(), wallMs: 0, loop: { p99: 0, max: 0 } }));
    return st;
  }

  /** Closes the current phase at `now` (its wall time and the transport errors since it began). */
  private close(now: number): void {
    if (this.current === undefined) {
      this.loopDelay.enable();
      return;
    }
    // The histogram holds the timer's whole interval: keep the lateness (as runLean does).
    const late = (ns: number): number => (Number.isFinite(ns) ? Math.max(0, ns / 1e6 - LOOP_DELAY_RESOLUTION_MS) : 0);
    for (const n of this.current.names) {
      const st = this.stats(n);
      st.wallMs += now - this.current.at;
      st.errors += this.total.errors - this.errorsAt;
      st.timeouts += this.total.timeouts - this.timeoutsAt;
      st.loop.p99 = Math.max(st.loop.p99, late(this.loopDelay.percentile(99)));
      st.loop.max = Math.max(st.loop.max, late(this.loopDelay.max));
    }
    this.loopDelay.reset();
    this.errorsAt = this.total.errors;
    this.timeoutsAt = this.total.timeouts;
  }

  enter(name: string, now: number): void {
    this.close(now);
    const names = name.includes('#') ? [name, name.slice(0, name.indexOf('#'))] : [name];
    this.current = { names, at: now };
    this.switches.push({ at: now, name, into: names.map((n) => this.stats(n)) });
  }

  record(t0: number, status: number, us: number): void {
    let i = this.switches.length - 1;
    while (i >= 0 && this.switches[i].at > t0) i--;
    if (i < 0) return; // issued before the first phase
    if (this.slow !== undefined && us > this.slowUs) {
      this.slow.push({ at: Math.round(performance.timeOrigin + t0), ms: us / 1000, phase: this.switches[i].name });
    }
    for (const st of this.switches[i].into) {
      st.requests++;
      st.status[status]++;
      st.hist.record(us);
    }
  }

  result(now: number): Record<string, PhaseResult> {
    this.close(now);
    if (this.slow !== undefined) writeFileSync(String(process.env.VEXIL_BENCH_SLOW_LOG), this.slow.map((r) => JSON.stringify(r)).join('\n') + '\n');
    this.current = undefined;
    this.loopDelay.disable();
    const out: Record<string, PhaseResult> = {};
    for (const [name, st] of this.byName) {
      out[name] = { wallSec: st.wallMs / 1000, requests: st.requests, errors: st.errors, timeouts: st.timeouts, ...summarize(st), generatorLoopDelayMs: st.loop };
    }
    return out;
  }
}

class LeanConnection {
  private sock: net.Socket | undefined;
  private pending: Buffer | undefined;
  /** Send times (performance.now()) of in-flight requests, oldest first. */
  private sent: number[] = [];
  private lastProgress = 0;
  private closed = false;
  /** The server announced `Connection: close`: send nothing more on this socket. */
  private draining = false;

  constructor(
    private readonly host: string,
    private readonly port: number,
    /** `depth` copies of the request, back to back. */
    private readonly reqs: Buffer,
    private readonly reqLen: number,
    private readonly depth: number,
    private readonly noBody: boolean,
    private readonly stats: LeanStats,
    private readonly isRunning: () => boolean,
    /** Called when the connection can take more requests: fill() in a closed loop, the pacer otherwise. */
    private readonly onReady: (c: LeanConnection) => void = (c) => c.fill(),
  ) {}

  /** Idle: connected, not draining, nothing in flight. */
  get idle(): boolean {
    return this.sock !== undefined && !this.draining && this.sent.length === 0;
  }

  /** Paced mode: send one request whose latency is timed from `startAt` (performance.now() time). */
  sendOne(startAt: number): boolean {
    const sock = this.sock;
    if (sock === undefined || this.draining || !this.isRunning()) return false;
    this.sent.push(startAt);
    if (this.sent.length === 1) this.lastProgress = performance.now();
    sock.write(this.reqs.subarray(0, this.reqLen));
    return true;
  }

  connect(): Promise<void> {
    return new Promise((resolve) => {
      const sock = net.connect({ host: this.host, port: this.port, noDelay: true });
      this.sock = sock;
      this.pending = undefined;
      this.sent = [];
      this.draining = false;
      let connected = false;
      sock.once('connect', () => {
        connected = true;
        resolve();
      });
      sock.on('data', (chunk: Buffer) => this.onData(sock, chunk));
      sock.on('error', () => {
        /* counted on close */
      });
      sock.once('close', (hadError) => {
        if (!connected) resolve();
        if (this.sock !== sock) return;
        this.sock = undefined;
        if (this.closed || !this.isRunning()) return;
        // A close the server announced (Connection: close) is not an error.
        if (hadError || (this.sent.length > 0 && !this.draining)) this.stats.errors++;
        // Keep the offered load constant: reconnect and go on.
        setTimeout(() => {
          if (!this.closed && this.isRunning()) void this.connect().then(() => this.onReady(this));
        }, 10);
      });
    });
  }

  /** Bring the number of in-flight requests up to the pipelining depth. */
  fill(): void {
    const sock = this.sock;
    if (sock === undefined || this.draining || !this.isRunning()) return;
    const missing = this.depth - this.sent.length;
    if (missing <= 0) return;
    const now = performance.now();
    for (let i = 0; i < missing; i++) this.sent.push(now);
    if (this.sent.length === missing) this.lastProgress = now;
    sock.write(missing === this.depth ? this.reqs : this.reqs.subarray(0, missing * this.reqLen));
  }

  /** Reset a connection whose oldest request has waited longer than timeoutMs. */
  checkTimeout(now: number, timeoutMs: number): void {
    if (this.sock !== undefined && this.sent.length > 0 && now - this.lastProgress > timeoutMs) {
      this.stats.timeouts++;
      this.stats.errors++;
      const s = this.sock;
      this.sock = undefined;
      this.sent = [];
      s.destroy();
      void this.connect().then(() => this.onReady(this));
    }
  }

  close(): void {
    this.closed = true;
    this.sock?.destroy();
    this.sock = undefined;
  }

  private onData(sock: net.Socket, chunk: Buffer): void {
    if (sock !== this.sock) return;
    const running = this.isRunning();
    let buf = chunk;
    if (this.pending !== undefined) {
      buf = Buffer.concat([this.pending, chunk]);
      this.pending = undefined;
    }
    const len = buf.length;
    const now = performance.now();
    let off = 0;
    let done = 0;
    const stats = this.stats;
    try {
      while (off < len) {
        const hStart = off;
        const hEnd = buf.indexOf(CRLFCRLF, off);
        if (hEnd < 0) break;
        if (buf[off] !== 0x48 /* H */ || buf[off + 8] !== 0x20) throw new Error('not an HTTP response');
        const status = (buf[off + 9] - 48) * 100 + (buf[off + 10] - 48) * 10 + (buf[off + 11] - 48);
        const bodyStart = hEnd + 4;
        let msgEnd: number;
        if (this.noBody || status === 204 || status === 304 || (status >= 100 && status < 200)) {
          msgEnd = bodyStart;
        } else {
          const cl = contentLength(buf, off, hEnd);
          if (cl >= 0) {
            msgEnd = bodyStart + cl;
            if (msgEnd > len) break;
          } else if (isChunked(buf, off, hEnd)) {
            msgEnd = chunkedEnd(buf, bodyStart);
            if (msgEnd < 0) break;
          } else {
            throw new Error('response without Content-Length');
          }
        }
        off = msgEnd;
        if (status >= 100 && status < 200) continue; // interim response
        const ci = buf.indexOf(CONN_CLOSE, hStart);
        if (ci >= 0 && ci < hEnd) this.draining = true;
        const t0 = this.sent.shift();
        done++;
        if (running && t0 !== undefined && status >= 100 && status < 600) {
          stats.requests++;
          stats.status[status]++;
          const us = Math.max(1, Math.round((now - t0) * 1000));
          stats.hist.record(us);
          stats.phases?.record(t0, status, us);
        }
      }
    } catch {
      stats.errors++;
      this.sock = undefined;
      this.sent = [];
      sock.destroy();
      if (running && !this.closed) void this.connect().then(() => this.onReady(this));
      return;
    }
    if (off < len) this.pending = buf.subarray(off);
    if (done > 0) {
      this.lastProgress = now;
      if (running) this.onReady(this);
    }
  }
}

/** Sampling interval of the generator's event-loop delay monitor, ms. */
const LOOP_DELAY_RESOLUTION_MS = 10;

async function runLean(o: Normalized, onStart?: () => void): Promise<LoadResult> {
  const { buf, host, port } = buildRequest(o);
  const reqs = Buffer.concat(Array.from({ length: o.pipelining }, () => buf));
  const stats = newStats();
  if (o.phases) stats.phases = new Phases(stats);
  let running = true;
  const pacer = o.rate > 0 ? new Pacer(o.rate) : undefined;
  const conns = Array.from(
    { length: o.connections },
    () =>
      new LeanConnection(host, port, reqs, buf.length, o.pipelining, o.method === 'HEAD', stats, () => running,
        pacer === undefined ? undefined : (c) => pacer.onReady(c)),
  );
  await Promise.all(conns.map((c) => c.connect()));
  // Connection failures during setup count as errors too.
  onStart?.();
  const loopDelay = monitorEventLoopDelay({ resolution: LOOP_DELAY_RESOLUTION_MS });
  loopDelay.enable();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let pacing: NodeJS.Timeout | undefined;
  if (pacer === undefined) {
    for (const c of conns) c.fill();
  } else {
    pacer.start(t0, conns);
    // Timers fire at best every ~1 ms: requests due in between go out together at the next tick.
    pacing = setInterval(() => pacer.tick(performance.now()), 1);
  }
  const timeoutMs = o.timeoutSec * 1000;
  const watchdog = setInterval(() => {
    const now = performance.now();
    for (const c of conns) c.checkTimeout(now, timeoutMs);
  }, Math.min(1000, timeoutMs));
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, o.durationSec * 1000);
    if (stats.phases !== undefined) readPhases(stats.phases, () => pacer?.waiting ?? 0, () => {
      clearTimeout(timer);
      resolve();
    });
  });
  running = false;
  loopDelay.disable();
  if (pacing !== undefined) clearInterval(pacing);
  const wallSec = (performance.now() - t0) / 1000;
  const generatorCpu = cpuDelta(cpu0, wallSec);
  clearInterval(watchdog);
  for (const c of conns) c.close();

  return {
    engine: 'lean',
    url: o.url,
    method: o.method,
    connections: o.connections,
    pipelining: o.pipelining,
    durationSec: wallSec,
    requests: stats.requests,
    rps: stats.requests / wallSec,
    ...summarize(stats),
    // The histogram holds the timer's whole interval (10 ms + lateness): keep the lateness.
    generatorLoopDelayMs: {
      p99: Math.max(0, loopDelay.percentile(99) / 1e6 - LOOP_DELAY_RESOLUTION_MS),
      max: Math.max(0, loopDelay.max / 1e6 - LOOP_DELAY_RESOLUTION_MS),
    },
    ...(pacer === undefined ? {} : { paced: { rate: o.rate, maxBacklog: pacer.maxBacklog, lateStarts: pacer.lateStarts } }),
    errors: stats.errors,
    timeouts: stats.timeouts,
    ...(stats.phases === undefined ? {} : { phases: stats.phases.result(performance.now()) }),
    generatorCpu,
  };
}

/** Phase mode: `phase NAME` and `end` lines on this process's stdin (LoadOptions.phases). */
function readPhases(phases: Phases, waiting: () => number, end: () => void): void {
  let buf = '';
  const whenDrained = (): void => {
    if (waiting() === 0) process.stderr.write(`${DRAINED_MARKER}\n`);
    else setTimeout(whenDrained, 5);
  };
  const done = (): void => {
    process.stdin.removeAllListeners('data');
    process.stdin.pause();
    end();
  };
  process.stdin.setEncoding('utf8');
  process.stdin.on('data', (d: string) => {
    buf += d;
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl).trim();
      buf = buf.slice(nl + 1);
      if (line.startsWith('phase ')) phases.enter(line.slice(6).trim(), performance.now());
      else if (line === 'drained?') whenDrained();
      else if (line === 'end') return done();
    }
  });
  process.stdin.once('end', done);
}

/**
 * Fixed-rate scheduling for the lean engine: request n is due at t0 + n / rate, issued by a 1 ms
 * timer (so requests due within the same millisecond leave together). A due request goes out on
 * an idle connection; with none idle it waits in the backlog and leaves on the next connection that
 * frees up, still timed from when it was issued (no coordinated omission).
 */
class Pacer {
  private t0 = 0;
  private issued = 0;
  private readonly idle = new Set<LeanConnection>();
  private backlog: number[] = [];
  private head = 0;
  maxBacklog = 0;
  lateStarts = 0;

  /** Due requests waiting for a free connection now. */
  get waiting(): number {
    return this.backlog.length - this.head;
  }

  constructor(private readonly rate: number) {}

  start(t0: number, conns: LeanConnection[]): void {
    this.t0 = t0;
    for (const c of conns) if (c.idle) this.idle.add(c);
    this.tick(t0);
  }

  /**
   * Issues every request due by `now`. Their clock starts at `now`, the tick that issues them, not at
   * their exact due time: the ~1 ms timer granularity is the generator's lateness, not the server's.
   * A request that finds no idle connection keeps that start time while it waits for one.
   */
  tick(now: number): void {
    const due = Math.floor(((now - this.t0) * this.rate) / 1000);
    while (this.issued < due) {
      this.issued++;
      this.dispatch(now);
    }
  }

  private dispatch(startAt: number): void {
    for (const c of this.idle) {
      this.idle.delete(c);
      if (c.idle && c.sendOne(startAt)) return;
    }
    this.backlog.push(startAt);
    const waiting = this.backlog.length - this.head;
    if (waiting > this.maxBacklog) this.maxBacklog = waiting;
  }

  onReady(c: LeanConnection): void {
    if (!c.idle) return;
    if (this.head < this.backlog.length) {
      if (c.sendOne(this.backlog[this.head])) {
        this.head++;
        this.lateStarts++;
        if (this.head > 4096 && this.head * 2 > this.backlog.length) {
          this.backlog = this.backlog.slice(this.head);
          this.head = 0;
        }
      }
      return;
    }
    this.idle.add(c);
  }
}

// ---------------------------------------------------------- autocannon engine

interface AcHist {
  p50: number;
  p90: number;
  p99: number;
  p99_9: number;
  average: number;
  max: number;
  total: number;
}
interface AcResult {
  duration: number;
  latency: AcHist;
  requests: AcHist;
  non2xx: number;
  errors: number;
  timeouts: number;
  statusCodeStats?: Record<string, { count: number }>;
}
type Autocannon = (opts: Record<string, unknown>) => Promise<AcResult>;

async function runAutocannon(o: Normalized, onStart?: () => void): Promise<LoadResult> {
  const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;
  onStart?.();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const r = await autocannon({
    url: o.url,
    method: o.method,
    headers: o.headers,
    body: o.body,
    connections: o.connections,
    pipelining: o.pipelining,
    duration: o.durationSec,
    timeout: o.timeoutSec,
  });
  const wallSec = (performance.now() - t0) / 1000;
  const generatorCpu = cpuDelta(cpu0, wallSec);
  const statusCodes: Record<string, number> = {};
  for (const [code, s] of Object.entries(r.statusCodeStats ?? {})) statusCodes[code] = Number(s.count);
  const durationSec = r.duration > 0 ? r.duration : wallSec;
  return {
    engine: 'autocannon',
    url: o.url,
    method: o.method,
    connections: o.connections,
    pipelining: o.pipelining,
    durationSec,
    requests: r.requests.total,
    rps: r.requests.total / durationSec,
    latencyMs: {
      p50: r.latency.p50,
      p90: r.latency.p90,
      p99: r.latency.p99,
      p999: r.latency.p99_9,
      mean: r.latency.average,
      max: r.latency.max,
    },
    non2xx: r.non2xx,
    errors: r.errors,
    timeouts: r.timeouts,
    statusCodes,
    generatorCpu,
  };
}

// ------------------------------------------------------------ child process

const THIS_FILE = fileURLToPath(import.meta.url);

/**
 * Run the load in a separate `node load.js --json` process, pinned to `cpus`
 * (e.g. "1") with taskset when available, so the generator never shares a
 * core with the server under test. `onMeasureStart` is called when the child
 * reports that its measured run (after its in-process warm-up) starts; in phase mode
 * (options.phases) it gets the handle that switches phases and waits for the backlog to drain.
 */
/** Phase mode's handle on the generator child (LoadOptions.phases). */
export interface PhaseControl {
  /** Every request issued from now on counts in `name` (and its part before a `#`). */
  phase(name: string): void;
  /** Resolves once no due request waits for a free connection. */
  drained(): Promise<void>;
  /** Ends the measured run. */
  end(): void;
}

export async function runLoadInChild(options: LoadOptions, cpus?: string, onMeasureStart?: (control: PhaseControl) => void): Promise<LoadResult> {
  const [cmd, args] = pinned(cpus, process.execPath, [THIS_FILE, '--json', '--spec', JSON.stringify(options)]);
  // Phase mode: `send('phase NAME')` / `send('end')` reach the child's stdin.
  const child = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'pipe'] });
  child.stdin.on('error', () => {}); // a line sent after the child ended
  const send = (line: string): void => {
    if (child.exitCode === null) child.stdin.write(`${line}\n`);
  };
  const drainWaiters: Array<() => void> = [];
  const control: PhaseControl = {
    phase: (name) => send(`phase ${name}`),
    drained: () => new Promise<void>((resolve) => {
      drainWaiters.push(resolve);
      send('drained?');
    }),
    end: () => send('end'),
  };
  track(child);
  let out = '';
  let err = '';
  let started = false;
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => {
    err += d;
    if (!started && err.includes(MEASURE_START_MARKER)) {
      started = true;
      err = err.replace(`${MEASURE_START_MARKER}\n`, '');
      onMeasureStart?.(control);
    }
    while (err.includes(`${DRAINED_MARKER}\n`)) {
      err = err.replace(`${DRAINED_MARKER}\n`, '');
      drainWaiters.shift()?.();
    }
  });
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', resolve);
  });
  if (code !== 0) throw new Error(`load generator exited with ${String(code)}: ${err.trim()}`);
  try {
    return JSON.parse(out.trim().split('\n').pop() ?? '') as LoadResult;
  } catch {
    throw new Error(`load generator printed no result: ${out}\n${err}`);
  }
}

// ---------------------------------------------------------------------- CLI

function parseCli(argv: string[]): { options: LoadOptions; json: boolean } {
  let json = false;
  let spec: LoadOptions | undefined;
  const o: Partial<LoadOptions> & { headers: Record<string, string> } = { headers: {} };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = (): string => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${a} needs a value`);
      return v;
    };
    switch (a) {
      case '--json':
        json = true;
        break;
      case '--spec':
        spec = JSON.parse(next()) as LoadOptions;
        break;
      case '--url':
        o.url = next();
        break;
      case '-X':
      case '--method':
        o.method = next();
        break;
      case '-H':
      case '--header': {
        const h = next();
        const c = h.indexOf(':');
        if (c <= 0) throw new Error(`bad header ${h}`);
        o.headers[h.slice(0, c).trim()] = h.slice(c + 1).trim();
        break;
      }
      case '-b':
      case '--body':
        o.body = next();
        break;
      case '-c':
      case '--connections':
        o.connections = Number(next());
        break;
      case '-d':
      case '--duration':
        o.durationSec = Number(next());
        break;
      case '-p':
      case '--pipelining':
        o.pipelining = Number(next());
        break;
      case '--engine':
        o.engine = next() as Engine;
        break;
      case '--warmup':
        o.warmupSec = Number(next());
        break;
      case '--timeout':
        o.timeoutSec = Number(next());
        break;
      case '--rate':
        o.rate = Number(next());
        break;
      case '-h':
      case '--help':
        process.stdout.write(
          'usage: node dist/bench/load.js --url URL [-X METHOD] [-H "k: v"]... [--body STR]\n' +
            '       [-c CONNECTIONS=50] [-d SECONDS=10] [-p PIPELINING=1] [--engine lean|autocannon]\n' +
            '       [--warmup SECONDS=0] [--timeout SECONDS=10] [--rate REQ_PER_SEC] [--json] | --json --spec JSON\n',
        );
        process.exit(0);
        break;
      default:
        if (o.url === undefined && /^https?:\/\//.test(a)) o.url = a;
        else throw new Error(`unknown argument ${a}`);
    }
  }
  if (spec !== undefined) return { options: spec, json };
  if (o.url === undefined) throw new Error('--url is required');
  return {
    options: {
      ...o,
      url: o.url,
      connections: o.connections ?? 50,
      durationSec: o.durationSec ?? 10,
    },
    json,
  };
}

function summary(r: LoadResult): string {
  const f = (n: number): string => n.toFixed(3);
  return [
    `${r.engine}: ${r.method} ${r.url}  c=${r.connections} p=${r.pipelining} ${r.durationSec.toFixed(2)} s`,
    `  req/s ${r.rps.toFixed(0)}  (${r.requests} responses)`,
    `  latency ms  p50 ${f(r.latencyMs.p50)}  p90 ${f(r.latencyMs.p90)}  p99 ${f(r.latencyMs.p99)}  ` +
      `p99.9 ${f(r.latencyMs.p999)}  max ${f(r.latencyMs.max)}`,
    ...(r.paced ? [`  paced at ${r.paced.rate.toFixed(0)} req/s: ${r.paced.lateStarts} requests waited for a free connection (at most ${r.paced.maxBacklog} at once)`] : []),
    `  non-2xx ${r.non2xx}  errors ${r.errors} (timeouts ${r.timeouts})  statuses ${JSON.stringify(r.statusCodes)}`,
    `  generator CPU ${(r.generatorCpu.utilization * 100).toFixed(0)}% of one core` +
      (r.generatorLoopDelayMs ? `, event-loop delay p99 ${r.generatorLoopDelayMs.p99.toFixed(2)} ms, max ${r.generatorLoopDelayMs.max.toFixed(2)} ms` : ''),
  ].join('\n');
}

async function cli(): Promise<void> {
  const { options, json } = parseCli(process.argv.slice(2));
  const result = await runLoad(options, json ? () => process.stderr.write(`${MEASURE_START_MARKER}\n`) : undefined);
  process.stdout.write(json ? `${JSON.stringify(result)}\n` : `${summary(result)}\n`);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  cli().then(
    () => process.exit(0),
    (err: unknown) => {
      process.stderr.write(`load: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    },
  );
}
