/**
 * Context sampling for change-request previews (CONTRACT 17, `VEXIL_CONTEXT_SAMPLE`;
 * docs/change-requests.md, "Sampled contexts"): the hot path on each thread that runs the engine.
 *
 * With VEXIL_CONTEXT_SAMPLE = N > 0, every thread that evaluates (front threads, the main thread,
 * evaluation workers, the management actor) keeps, per (flag, stage), a ring of the last N
 * evaluation requests it served since its last drain: one array store of a reference the request
 * already made, no copy, no serialisation, no allocation once the ring exists. The rings hang off
 * the compiled flag object (`CompiledFlag.samples`), like the insights cells. `drain` (off the hot
 * path, with the insights counts, every `insightsPostMs` ≤ 1 s) serialises each ring's requests,
 * oldest first, as flat rows for the management actor's `SampleStore` (store.ts), and drops the
 * references. With N = 0 the thread has no sampler (`EvalCounts.samples === null`): evaluation
 * pays one predictable branch.
 *
 * Memory on a thread: at most N references per (flag, stage) it evaluated since its last drain.
 * Samples are never logged and never written anywhere but the actor's memory.
 */
import type { EvaluationRequest } from '../domain/types.js';
import type { CompiledFlag, OrgSnapshot } from '../engine/index.js';

/**
 * Samples crossing threads and processes, flat: SAMPLE_STRIDE entries per sample,
 * [orgId, flag, stage, userId, clientId ('' for none), context JSON ('' for none)].
 */
export type SampleRows = string[];
export const SAMPLE_STRIDE = 6;

/** A context whose JSON is longer than this is not kept (docs/limits.md, "Sampled contexts"). */
export const MAX_SAMPLE_CONTEXT_CHARS = 8192;

class StageRing {
  readonly reqs: (EvaluationRequest | undefined)[];
  next = 0;
  size = 0;
  dirty = false;
  constructor(
    readonly flag: FlagRings,
    readonly stage: string,
    n: number,
  ) {
    this.reqs = new Array(n);
  }
}

class FlagRings {
  last: StageRing | null = null;
  readonly stages: StageRing[] = [];
  constructor(
    readonly owner: ContextSampler,
    readonly orgId: string,
    readonly flag: string,
  ) {}
}

export class ContextSampler {
  private dirty: StageRing[] = [];

  /** `perStage`: VEXIL_CONTEXT_SAMPLE (> 0). */
  constructor(readonly perStage: number) {}

  /** One evaluation of `flag` for `req` (its stage in the organization's spelling). */
  keep(snapshot: OrgSnapshot, flag: CompiledFlag, req: EvaluationRequest): void {
    let fr = flag.samples as FlagRings | undefined;
    if (fr === undefined || fr.owner !== this) {
      fr = new FlagRings(this, snapshot.org.id, flag.flag.name);
      flag.samples = fr;
    }
    let sr = fr.last;
    if (sr === null || sr.stage !== req.stage) sr = this.stageOf(fr, req.stage);
    sr.reqs[sr.next] = req;
    sr.next = sr.next + 1 === this.perStage ? 0 : sr.next + 1;
    if (sr.size < this.perStage) sr.size++;
    if (!sr.dirty) {
      sr.dirty = true;
      this.dirty.push(sr);
    }
  }

  /** Whether any sample waits for `drain`. */
  get pending(): boolean {
    return this.dirty.length > 0;
  }

  /** The samples kept since the last drain, oldest first per (flag, stage), appended to `into`; the rings start empty again. */
  drain(into: SampleRows = []): SampleRows {
    const rings = this.dirty;
    if (rings.length === 0) return into;
    this.dirty = [];
    const n = this.perStage;
    for (const r of rings) {
      const start = r.size < n ? 0 : r.next;
      for (let i = 0; i < r.size; i++) {
        const j = (start + i) % n;
        const req = r.reqs[j]!;
        r.reqs[j] = undefined;
        const ctx = req.context === null || req.context === undefined ? '' : JSON.stringify(req.context);
        if (ctx.length > MAX_SAMPLE_CONTEXT_CHARS) continue;
        into.push(r.flag.orgId, r.flag.flag, r.stage, req.userId, req.clientId ?? '', ctx);
      }
      r.next = 0;
      r.size = 0;
      r.dirty = false;
    }
    return into;
  }

  private stageOf(fr: FlagRings, stage: string): StageRing {
    let sr = fr.stages.find((s) => s.stage === stage);
    if (sr === undefined) {
      sr = new StageRing(fr, stage, this.perStage);
      fr.stages.push(sr);
    }
    fr.last = sr;
    return sr;
  }
}
