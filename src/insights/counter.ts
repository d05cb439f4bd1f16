/**
 * Per-thread evaluation counters for flag insights (CONTRACT 18, docs/insights.md): the hot path.
 *
 * Every thread that runs the engine (a front thread, the main thread, an evaluation worker, the
 * management actor) holds one `InsightsCounter` (inside its `EvalCounts`, ops/eval-counts.ts). An
 * evaluation adds one to a cell found without allocating and without hashing a composite key: the
 * cells hang off the compiled flag object itself (`CompiledFlag.insights`), by stage (the last
 * stage used is remembered, so a bulk request's flags find theirs with one comparison) and by
 * variant (a short array compared by identity first: the variant keys are the snapshot's own
 * strings). A cell that goes from 0 to 1 joins the `dirty` list; `drain` (off the hot path, every
 * `VEXIL_INSIGHTS_FLUSH_MS / 4` at most one second) takes the dirty cells' counts as rows and
 * zeroes them. Memory: one cell per (flag, stage, variant) served on this thread, held as long as
 * the compiled flag object is; between two drains the dirty list holds at most every cell once.
 *
 * The application counted is the key's: an evaluating key may evaluate only flags of its own
 * application (evaluation/check.ts), so it is the flag's project, in the organization's spelling.
 */
import type { Evaluation } from '../domain/types.js';
import type { CompiledFlag, OrgSnapshot } from '../engine/index.js';

/**
 * Counts crossing threads and processes, flat (structured clone and V8 serialisation copy one
 * array): ROW_STRIDE entries per row, [orgId, flag, stage, application, variant, count, firstSec, lastSec].
 * `firstSec`/`lastSec` (epoch seconds) bound when those evaluations happened; the hour and day
 * buckets are `lastSec`'s.
 */
export type InsightsRows = (string | number)[];
export const ROW_STRIDE = 8;

class Cell {
  n = 0;
  constructor(
    readonly stage: StageCells,
    readonly variant: string,
  ) {}
}

class StageCells {
  readonly variants: string[] = [];
  readonly cells: Cell[] = [];
  constructor(
    readonly flag: FlagCells,
    readonly stage: string,
  ) {}
}

/** The cells of one compiled flag on one thread (`CompiledFlag.insights`). */
export class FlagCells {
  last: StageCells | null = null;
  readonly stages: StageCells[] = [];
  constructor(
    readonly owner: InsightsCounter,
    readonly orgId: string,
    readonly flag: string,
    readonly application: string,
  ) {}
}

export class InsightsCounter {
  private dirty: Cell[] = [];

  /** One evaluation of `flag` in `stage` (the organization's spelling) that served `ev`. */
  count(snapshot: OrgSnapshot, flag: CompiledFlag, stage: string, ev: Evaluation): void {
    let fc = flag.insights as FlagCells | undefined;
    if (fc === undefined || fc.owner !== this) fc = this.attach(snapshot, flag);
    let sc = fc.last;
    if (sc === null || sc.stage !== stage) sc = this.stageOf(fc, stage);
    const v = ev.key ?? '';
    const vs = sc.variants;
    let i = 0;
    while (i < vs.length && vs[i] !== v) i++;
    const cell = i < vs.length ? sc.cells[i] : this.cellOf(sc, v);
    if (cell.n++ === 0) this.dirty.push(cell);
  }

  /** Whether any count waits for `drain`. */
  get pending(): boolean {
    return this.dirty.length > 0;
  }

  /** The counts since the last drain, as rows stamped `nowSec`, appended to `into`; the cells start again at 0. */
  drain(into: InsightsRows, nowSec: number): InsightsRows {
    const cells = this.dirty;
    if (cells.length === 0) return into;
    this.dirty = [];
    for (let i = 0; i < cells.length; i++) {
      const c = cells[i];
      const f = c.stage.flag;
      into.push(f.orgId, f.flag, c.stage.stage, f.application, c.variant, c.n, nowSec, nowSec);
      c.n = 0;
    }
    return into;
  }

  private attach(snapshot: OrgSnapshot, flag: CompiledFlag): FlagCells {
    const fc = new FlagCells(this, snapshot.org.id, flag.flag.name, flag.flag.project);
    flag.insights = fc;
    return fc;
  }

  private stageOf(fc: FlagCells, stage: string): StageCells {
    let sc = fc.stages.find((s) => s.stage === stage);
    if (sc === undefined) {
      sc = new StageCells(fc, stage);
      fc.stages.push(sc);
    }
    fc.last = sc;
    return sc;
  }

  private cellOf(sc: StageCells, variant: string): Cell {
    // Equal but not identical strings (a variant key read from elsewhere) still find their cell.
    const i = sc.variants.indexOf(variant);
    if (i >= 0) return sc.cells[i];
    const cell = new Cell(sc, variant);
    sc.variants.push(variant);
    sc.cells.push(cell);
    return cell;
  }
}

/**
 * How often a thread posts its counts towards the management actor: a quarter of
 * VEXIL_INSIGHTS_FLUSH_MS, at most 1 s, so that counts wait at most that long outside the actor's
 * batch (what a killed node loses beyond its last interval).
 */
export const insightsPostMs = (flushMs: number): number => Math.max(20, Math.min(1000, Math.floor(flushMs / 4)));
