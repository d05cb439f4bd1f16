/**
 * The main thread's side of the counting pipeline (docs/insights.md): every `insightsPostMs` it
 * takes its own counters' rows and those the other front threads, the evaluation pool's batches
 * and `POST /sdk/v1/metrics` handed it since, and posts them to the management actor in one
 * `insights` message. The sampled contexts (VEXIL_CONTEXT_SAMPLE, samples/sampler.ts) travel the
 * same way, in the same message. `close` posts the last ones (the node's graceful stop, before the
 * actor's `close`). Between two posts it holds at most what arrived in one interval.
 */
import type { EvalCounts } from '../ops/eval-counts.js';
import type { SampleRows } from '../samples/sampler.js';
import type { InsightsRows } from './counter.js';

export class InsightsForwarder {
  private rows: InsightsRows = [];
  private samples: SampleRows = [];
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly counts: EvalCounts,
    private readonly send: (rows: InsightsRows, samples?: SampleRows) => void,
    everyMs: number,
  ) {
    this.timer = setInterval(() => this.post(), everyMs);
    this.timer.unref();
  }

  /** Rows counted elsewhere (another thread, a worker, a provider's report), and samples kept there. */
  add(rows: InsightsRows, samples?: SampleRows): void {
    if (this.rows.length === 0) this.rows = rows;
    else for (let i = 0; i < rows.length; i++) this.rows.push(rows[i]);
    if (samples !== undefined) for (let i = 0; i < samples.length; i++) this.samples.push(samples[i]);
  }

  /** Posts what is held now. */
  post(): void {
    this.counts.insights?.drain(this.rows, Math.floor(Date.now() / 1000));
    this.counts.samples?.drain(this.samples);
    if (this.rows.length === 0 && this.samples.length === 0) return;
    const rows = this.rows;
    const samples = this.samples;
    this.rows = [];
    this.samples = [];
    if (samples.length === 0) this.send(rows);
    else this.send(rows, samples);
  }

  close(): void {
    clearInterval(this.timer);
    this.post();
  }
}
