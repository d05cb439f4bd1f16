/**
 * Evaluation counts by reason code, shared between the front thread and the evaluation workers,
 * and this thread's per-flag counters for flag insights (`insights`, insights/counter.ts).
 *
 * One SharedArrayBuffer per node holds a 32-bit cell per reason code. Whichever thread runs the
 * engine for an evaluation request adds one to its reason's cell (`Atomics.add`: one increment, no
 * message, no allocation). The front thread owns the buffer and hands it to every worker it starts
 * (workerData), so a worker that dies and is replaced keeps counting into the same cells and no
 * count is lost. The front thread drains the cells into the Prometheus counter on every scrape
 * (and every few seconds, so a cell never nears 2^31), which makes worker counts visible at once.
 *
 * The insights counters are per thread (not shared): each thread drains its own and posts the rows
 * towards the management actor (docs/insights.md, "The counting pipeline").
 */
import { REASON_CODES, type Evaluation, type EvaluationRequest, type ReasonCode } from '../domain/types.js';
import type { CompiledFlag, OrgSnapshot } from '../engine/index.js';
import { InsightsCounter } from '../insights/counter.js';
import { ContextSampler } from '../samples/sampler.js';

const INDEX: Record<ReasonCode, number> = Object.fromEntries(REASON_CODES.map((c, i) => [c, i])) as Record<ReasonCode, number>;

/** Where an evaluation is counted: the node's counters (`EvalCounts`), or a GraphQL plan's until it commits (`DeferredCounts`). */
export interface EvaluationCounter {
  evaluated(snapshot: OrgSnapshot, flag: CompiledFlag, req: EvaluationRequest, ev: Evaluation): void;
}

export class EvalCounts implements EvaluationCounter {
  readonly buffer: SharedArrayBuffer;
  private readonly cells: Int32Array;
  /** This thread's per-flag counters; null when VEXIL_INSIGHTS=off. */
  readonly insights: InsightsCounter | null;
  /** This thread's sampled contexts (samples/sampler.ts); null when VEXIL_CONTEXT_SAMPLE is 0 (the default). */
  samples: ContextSampler | null;

  /** `sample`: VEXIL_CONTEXT_SAMPLE, contexts kept per flag and stage (0: none, no sampler). */
  constructor(buffer: SharedArrayBuffer = new SharedArrayBuffer(4 * REASON_CODES.length), insights = true, sample = 0) {
    this.buffer = buffer;
    this.cells = new Int32Array(buffer);
    this.insights = insights ? new InsightsCounter() : null;
    this.samples = sample > 0 ? new ContextSampler(sample) : null;
  }

  /**
   * Counts one evaluation of `flag` for `req` (its stage in the organization's spelling): its
   * reason, and its flag, stage and variant; and keeps `req` as a sample when sampling is on.
   */
  evaluated(snapshot: OrgSnapshot, flag: CompiledFlag, req: EvaluationRequest, ev: Evaluation): void {
    Atomics.add(this.cells, INDEX[ev.reason.code], 1);
    if (this.insights !== null) this.insights.count(snapshot, flag, req.stage, ev);
    if (this.samples !== null) this.samples.keep(snapshot, flag, req);
  }

  /** Counts one evaluation that ended with `reason` (reason only). */
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

/**
 * A GraphQL plan's evaluations, counted only once every field has answered (graphql/plan.ts: a plan
 * that gives up is run again by graphql-jit, which counts its own).
 */
export class DeferredCounts implements EvaluationCounter {
  private readonly items: unknown[] = [];

  evaluated(snapshot: OrgSnapshot, flag: CompiledFlag, req: EvaluationRequest, ev: Evaluation): void {
    this.items.push(snapshot, flag, req, ev);
  }

  commit(to: EvaluationCounter): void {
    const it = this.items;
    for (let i = 0; i < it.length; i += 4) to.evaluated(it[i] as OrgSnapshot, it[i + 1] as CompiledFlag, it[i + 2] as EvaluationRequest, it[i + 3] as Evaluation);
  }
}
