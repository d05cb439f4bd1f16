/**
 * The front thread's side of the evaluation pool: the workers read the node's flag data from shared
 * memory (src/snapshots/publisher.ts writes it once) and this hands them evaluations in batches. A Piscina
 * task per request costs far more than an evaluation, so requests that arrive in the same
 * event-loop turn travel together (up to `maxBatch`), encoded in one transferred buffer
 * (protocol.ts).
 *
 * Isolation (docs/cluster.md, "Worker pool"): an item that cannot be encoded fails its own request
 * with 400 and never reaches a worker; a worker answers each item on its own (an error in one is
 * that item's answer); a batch whose worker died is retried item by item, each in a task of its
 * own, so a poison item fails only itself. Evaluations handed to the pool and not yet answered are
 * counted (`queued`); past `queueMax` a request is refused with 503 and `Retry-After: 1` instead of
 * queued.
 */
import { performance } from 'node:perf_hooks';
import { Piscina } from 'piscina';
import { badRequest, VexilError } from '../../domain/errors.js';
import type { EvaluationAnswer } from '../../domain/types.js';
import type { SnapshotPublisher } from '../../snapshots/publisher.js';
import type { SharedStoreWriter } from '../../snapshots/shared-store.js';
import type { InsightsRows } from '../../insights/counter.js';
import type { SampleRows } from '../../samples/sampler.js';
import { projectPath } from '../../util/paths.js';
import type { Logger } from '../../util/log.js';
import { HandOffPolicy, type HandOffMode, type Transport } from './handoff.js';
import {
  decodeLines,
  decodeOutcome,
  encodeItem,
  encodeLines,
  INSIGHTS_LINE,
  SAMPLES_LINE,
  type EvalItem,
  type EvalOutcome,
  type BulkItem,
  type EvalTask,
  type GraphQLItem,
  type PoolItem,
  type WorkerData,
} from './protocol.js';

/** How long an item may wait for a worker to receive the snapshot version it needs. */
const STALE_WAIT_MS = 2000;

interface Pending {
  line: string;
  transport: Transport;
  /** Evaluations this item stands for (a GraphQL document: its `evaluate` fields). */
  weight: number;
  /** Front-thread µs spent on this item so far (encoding, its share of the task). */
  spentUs: number;
  resolve: (outcome: EvalOutcome) => void;
  reject: (err: unknown) => void;
  crashes: number;
  /** Until when a worker may answer "retry" (0: it has not yet). */
  deadline: number;
}

export interface PoolOptions {
  threads: number;
  channel: string;
  graphqlMaxDepth: number;
  graphqlMaxEvaluations: number;
  /** VEXIL_MAX_ANSWER_BYTES (default 256 MiB). */
  maxAnswerBytes?: number;
  /** Per-reason evaluation counters the workers add to (ops/eval-counts.ts). */
  evalCounts: SharedArrayBuffer;
  /** VEXIL_INSIGHTS. */
  insights: boolean;
  /** VEXIL_CONTEXT_SAMPLE (0: off). */
  contextSample?: number;
  /** The insights counts a batch's workers made (insights/counter.ts rows) and their sampled contexts, as each batch is answered. */
  onInsights?: (rows: InsightsRows, samples?: SampleRows) => void;
  /** VEXIL_EVAL_QUEUE_MAX: evaluations handed to the pool and not yet answered. */
  queueMax: number;
  /** VEXIL_EVAL_HANDOFF. */
  handoff: HandOffMode;
  /** VEXIL_WORKER_FLAG_CACHE: compiled flags per worker. */
  flagCache: number;
  /** The node's shared flag data (snapshots/publisher.ts), which the workers read. */
  publisher: SnapshotPublisher;
}

export class EvalPool {
  private readonly pool: Piscina;
  private pending: Pending[] = [];
  private scheduled = false;
  private readonly queueMax: number;
  /** Decides per request between the front thread and the pool. */
  readonly policy: HandOffPolicy;
  /** Inline REST evaluations so far (`inlineStart` times every 32nd). */
  private inlineCalls = 0;
  /** Evaluations handed to the pool and not yet answered (bounded by VEXIL_EVAL_QUEUE_MAX). */
  queued = 0;
  /** Requests handed to the workers so far (tests and diagnostics; a retried one counts once). */
  itemsSent = 0;
  /** Requests refused because the queue was full. */
  refused = 0;
  /** The workers' flag data, written once per change (its `stats` count what was written and posted). */
  readonly store: SharedStoreWriter;
  private readonly onInsights: (rows: InsightsRows, samples?: SampleRows) => void;

  constructor(
    opts: PoolOptions,
    private readonly log: Logger,
    private readonly maxBatch = 64,
  ) {
    this.queueMax = opts.queueMax;
    this.onInsights = opts.onInsights ?? (() => {});
    this.policy = new HandOffPolicy({ mode: opts.handoff, threads: opts.threads });
    this.store = opts.publisher.store;
    this.pool = new Piscina({
      filename: projectPath('dist', 'workers', 'evaluator.js'),
      minThreads: opts.threads,
      maxThreads: opts.threads,
      idleTimeout: 2 ** 31 - 1,
      // Between tasks a worker must keep its event loop turning to receive new generations of the
      // shared store from the BroadcastChannel; Atomics.wait ('sync', Piscina's default) would block it.
      atomics: 'disabled',
      workerData: {
        channel: opts.channel,
        graphqlMaxDepth: opts.graphqlMaxDepth,
        graphqlMaxEvaluations: opts.graphqlMaxEvaluations,
        ...(opts.maxAnswerBytes !== undefined ? { maxAnswerBytes: opts.maxAnswerBytes } : {}),
        evalCounts: opts.evalCounts,
        insights: opts.insights,
        contextSample: opts.contextSample ?? 0,
        flagCache: opts.flagCache,
      } satisfies WorkerData,
    });
    this.pool.on('error', (err: unknown) => this.log.error('evaluation worker error', { err: err as Error }));
  }

  get threads(): number {
    return this.pool.threads.length;
  }

  /** Whether a request with `evaluations` evaluations should go to the workers (handoff.ts). */
  wants(transport: Transport, evaluations: number): boolean {
    // OFREP bulk was always answered on the front thread: it goes to the workers only when it fits
    // in the queue, so that placing it never answers 503 where the front thread answered.
    if (transport === 'bulk' && this.queued + evaluations > this.queueMax) return false;
    return this.policy.handOff(transport, evaluations, this.queued);
  }

  /**
   * Timing of work done on this thread for a request the pool declined (`wants` said no), so that
   * the hand-off policy follows this machine's costs: `inlineStart` before the work, `inlineEnd`
   * after it with what it returned. The pool decides what it times: every 32nd REST evaluation (one
   * is a few µs; timing each would cost about as much), every GraphQL document (each is larger).
   * Plain calls rather than a wrapper, so that the REST path allocates nothing for it.
   */
  inlineStart(transport: Transport): number {
    if (transport === 'rest' && (++this.inlineCalls & 31) !== 0) return -1;
    return performance.now();
  }

  inlineEnd(transport: Transport, started: number, evaluations: number): void {
    if (started >= 0) this.policy.recordInline(transport, (performance.now() - started) * 1000, evaluations);
  }

  evaluate(item: Omit<EvalItem, 'kind'>): Promise<EvaluationAnswer> {
    return this.submit({ kind: 'eval', ...item }, 'rest', 1) as Promise<EvaluationAnswer>;
  }

  /**
   * Executes an evaluation-only GraphQL document with `evaluations` evaluate fields in a worker;
   * resolves with the serialised response.
   */
  async graphql(item: Omit<GraphQLItem, 'kind'>, evaluations: number): Promise<string> {
    return ((await this.submit({ kind: 'graphql', ...item }, 'graphql', evaluations)) as { graphql: string }).graphql;
  }

  /** OFREP bulk over `evaluations` flags in a worker; resolves with the answers joined with commas. */
  async bulk(item: Omit<BulkItem, 'kind'>, evaluations: number): Promise<string> {
    return ((await this.submit({ kind: 'bulk', ...item }, 'bulk', evaluations)) as { bulk: string }).bulk;
  }

  private submit(item: PoolItem, transport: Transport, weight: number): Promise<EvalOutcome> {
    if (this.queued + weight > this.queueMax) {
      this.refused++;
      return Promise.reject(new VexilError('UNAVAILABLE', 'The evaluation queue of this node is full; try again', { retryAfter: 1 }));
    }
    const started = performance.now();
    let line: string;
    try {
      line = encodeItem(item);
    } catch (err) {
      if (err instanceof RangeError) {
        return Promise.reject(badRequest(item.kind === 'graphql' ? 'variables are nested too deeply' : 'context is nested too deeply'));
      }
      throw err;
    }
    this.queued += weight;
    this.itemsSent++;
    return new Promise((resolve, reject) => {
      const settle = <T>(fn: (v: T) => void) => (v: T) => {
        this.queued -= weight;
        fn(v);
      };
      this.enqueue({
        line,
        transport,
        weight,
        spentUs: (performance.now() - started) * 1000,
        resolve: settle(resolve),
        reject: settle(reject),
        crashes: 0,
        deadline: 0,
      });
    });
  }

  private enqueue(p: Pending): void {
    this.pending.push(p);
    if (this.pending.length >= this.maxBatch) this.flush();
    else if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.flush());
    }
  }

  private flush(): void {
    this.scheduled = false;
    if (this.pending.length === 0) return;
    const batch = this.pending;
    this.pending = [];
    this.run(batch);
  }

  private run(batch: Pending[]): void {
    const started = performance.now();
    const items = encodeLines(batch.map((p) => p.line));
    const task: EvalTask = { nowMs: Date.now(), items };
    const share = ((performance.now() - started) * 1000) / batch.length;
    this.pool.run(task, { transferList: [items.buffer as ArrayBuffer] }).then(
      (answer: Uint8Array) => this.complete(batch, answer, share),
      (err: unknown) => this.crashed(batch, err),
    );
  }

  private complete(batch: Pending[], answer: Uint8Array, share: number): void {
    const started = performance.now();
    const lines = decodeLines(answer);
    // After the answers: the batch's insights counts, then the worker's samples, each when it has any.
    // A batch without them (sampling off, nothing counted) allocates nothing here.
    if (lines.length > batch.length) {
      let rows: InsightsRows = [];
      let samples: SampleRows | undefined;
      for (let i = batch.length; i < lines.length; i++) {
        if (lines[i].startsWith(INSIGHTS_LINE)) rows = JSON.parse(lines[i].slice(INSIGHTS_LINE.length)) as InsightsRows;
        else if (lines[i].startsWith(SAMPLES_LINE)) samples = JSON.parse(lines[i].slice(SAMPLES_LINE.length)) as SampleRows;
      }
      this.onInsights(rows, samples);
    }
    const decodeShare = ((performance.now() - started) * 1000) / batch.length;
    for (let i = 0; i < batch.length; i++) {
      const p = batch[i];
      const t0 = performance.now();
      const o = i < lines.length ? decodeOutcome(lines[i]) : ({ error: 'INTERNAL', message: 'Missing answer' } as const);
      if ('retry' in o) {
        // The worker has not received the snapshot version yet: hand the item out again shortly.
        // The wait counts from the first such answer (not from submission: a worker may still be starting).
        if (p.deadline === 0) p.deadline = Date.now() + STALE_WAIT_MS;
        if (Date.now() >= p.deadline) p.reject(new VexilError('UNAVAILABLE', 'Evaluation worker has not received the current snapshot'));
        else setTimeout(() => this.enqueue(p), 2);
        continue;
      }
      if ('error' in o) p.reject(new VexilError(o.error === 'NOT_FOUND' ? 'NOT_FOUND' : 'INTERNAL', o.message));
      else p.resolve(o);
      this.policy.recordHandOff(p.transport, p.spentUs + share + decodeShare + (performance.now() - t0) * 1000);
    }
  }

  /**
   * The task failed as a whole: a worker died mid-task (Piscina replaces it). Each item is handed
   * out again in a task of its own, so an item that kills its worker fails only its own request;
   * an item whose own task failed twice is answered 503.
   */
  private crashed(batch: Pending[], err: unknown): void {
    this.log.warn('evaluation batch failed', { err: err as Error, size: batch.length });
    for (const p of batch) {
      p.crashes++;
      if (p.crashes > 2 || (p.crashes === 2 && batch.length === 1)) {
        p.reject(new VexilError('UNAVAILABLE', 'Evaluation worker failed; try again', { cause: err }));
      } else this.run([p]);
    }
  }

  async close(): Promise<void> {
    this.policy.close();
    await this.pool.destroy();
  }
}
