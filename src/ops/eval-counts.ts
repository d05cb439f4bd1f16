/**
 * Evaluation counts by reason code, shared between the front thread and the evaluation workers.
 *
 * One SharedArrayBuffer per node holds a 32-bit cell per reason code. Whichever thread runs the
 * engine for an evaluation request adds one to its reason's cell (`Atomics.add`: one increment, no
 * message, no allocation). The front thread owns the buffer and hands it to every worker it starts
 * (workerData), so a worker that dies and is replaced keeps counting into the same cells and no
 * count is lost. The front thread drains the cells into the Prometheus counter on every scrape
 * (and every few seconds, so a cell never nears 2^31), which makes worker counts visible at once.
 */
import { REASON_CODES, type ReasonCode } from '../domain/types.js';

const INDEX: Record<ReasonCode, number> = Object.fromEntries(REASON_CODES.map((c, i) => [c, i])) as Record<ReasonCode, number>;

export class EvalCounts {
  readonly buffer: SharedArrayBuffer;
  private readonly cells: Int32Array;

  constructor(buffer: SharedArrayBuffer = new SharedArrayBuffer(4 * REASON_CODES.length)) {
    this.buffer = buffer;
    this.cells = new Int32Array(buffer);
  }

  /** Counts one evaluation that ended with `reason`. */
  count(reason: ReasonCode): void {
    Atomics.add(this.cells, INDEX[reason], 1);
  }

  /** Counts `n` evaluations that ended with `reason` (counted elsewhere: the management actor's process). */
  add(reason: ReasonCode, n: number): void {
    Atomics.add(this.cells, INDEX[reason], n);
  }

  /** Takes the counts accumulated since the last drain (front thread only), by reason. */
  drain(into: (reason: ReasonCode, n: number) => void): void {
    for (let i = 0; i < REASON_CODES.length; i++) {
      const n = Atomics.exchange(this.cells, i, 0);
      if (n !== 0) into(REASON_CODES[i], n >>> 0);
    }
  }
}
