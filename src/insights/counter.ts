/**
 * Per-thread evaluation counters for flag insights (CONTRACT 18, docs/insights.md): the hot path.
 *
 * Every thread that runs the engine (a front thread, the main thread, an evaluation worker, the
 * management actor) holds one `InsightsCounter` (inside its `EvalCounts`, ops/eval-counts.ts). An
 * evaluation adds one to a cell found without allocating and without hashing a composite key: the
 * cells hang off the compiled flag object itself (`CompiledFlag.insights`), by stage (the last
 * stage used is remembered, so a bulk request's flags find theirs with one comparison) and by
 * variant: the engine says which variant it served as an index into the compiled flag's variants
 * (`Evaluation.index`, -1 for none), and each stage holds an array of the flag's variant count + 1
 * slots, so the cell is `cells[index + 1]`: one indexed read, no comparison of keys (a scan of the
 * keys mispredicts with a 50/50 split; docs/insights.md, "Cost on the hot path"). A cell is made on
 * the first evaluation that serves its variant. A cell that goes from 0 to 1 joins the `dirty`
 * list; `drain` (off the hot path, every `VEXIL_INSIGHTS_FLUSH_MS / 4` at most one second) takes
 * the dirty cells' counts as rows and zeroes them. Memory: per (flag, stage) served on this thread
 * an array of the flag's variant count + 1 slots, and one cell per (flag, stage, variant) served,
 * held as long as the compiled flag object is; between two drains the dirty list holds at most
 * every cell once.
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
  /** By `Evaluation.index + 1` (slot 0: no variant served); null until that variant is first counted. */
  readonly cells: (Cell | null)[];
  constructor(
    readonly flag: FlagCells,
    readonly stage: string,
    variantCount: number,
  ) {
    // Array.from: packed elements (`new Array(n).fill(null)` would be holey: a hole check per read).
    this.cells = Array.from({ length: variantCount + 1 }, () => null);
  }
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
    /** The compiled flag's variant count (`CompiledFlag.variants.size`): `Evaluation.index` is below it. */
    readonly variantCount: number,
  ) {}
}

export class InsightsCounter {
  private dirty: Cell[] = [];

  /** One evaluation of `flag` in `stage` (the organization's spelling) that served `ev` (the engine's result for `flag`). */
  count(snapshot: OrgSnapshot, flag: CompiledFlag, stage: string, ev: Evaluation): void {
    let fc = flag.insights as FlagCells | undefined;
    if (fc === undefined || fc.owner !== this) fc = this.attach(snapshot, flag);
    let sc = fc.last;
    if (sc === null || sc.stage !== stage) sc = this.stageOf(fc, stage);
    const cell = sc.cells[ev.index + 1] ?? this.cellOf(sc, ev);
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
    const fc = new FlagCells(this, snapshot.org.id, flag.flag.name, flag.flag.project, flag.variants.size);
    flag.insights = fc;
    return fc;
  }

  private stageOf(fc: FlagCells, stage: string): StageCells {
    let sc = fc.stages.find((s) => s.stage === stage);
    if (sc === undefined) {
      sc = new StageCells(fc, stage, fc.variantCount);
      fc.stages.push(sc);
    }
    fc.last = sc;
    return sc;
  }

  /** The first evaluation of `sc`'s stage that served `ev`'s variant: its cell, named by the served key. */
  private cellOf(sc: StageCells, ev: Evaluation): Cell {
    const slot = ev.index + 1;
    // The engine's index is within the flag's variants (engine.ts); anything else is a bug, which
    // must not grow the array past its slots.
    if (!(slot >= 0 && slot < sc.cells.length)) throw new RangeError(`Evaluation.index ${ev.index} outside the flag's ${sc.cells.length - 1} variants`);
    const cell = new Cell(sc, ev.key ?? '');
    sc.cells[slot] = cell;
    return cell;
  }
}

/**
 * How often a thread posts its counts towards the management actor: a quarter of
 * VEXIL_INSIGHTS_FLUSH_MS, at most 1 s, so that counts wait at most that long outside the actor's
 * batch (what a killed node loses beyond its last interval).
 */
export const insightsPostMs = (flushMs: number): number => Math.max(20, Math.min(1000, Math.floor(flushMs / 4)));
