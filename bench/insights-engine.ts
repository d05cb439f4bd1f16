/**
 * The `insights` scenario's in-process rows (docs/insights.md, "Cost on the hot path"): what
 * counting adds to the evaluation work itself, without HTTP, in the runner's one thread, so that
 * its figure does not drown in the ±30 % of single HTTP pairs on a shared VM.
 *
 * One engine snapshot of OFREP_BULK_FLAGS (50) synthetic flags (bench/snapshot-build.ts: boolean,
 * one production rule country == NL → on), built with `buildSnapshot`. Two workloads, each on the
 * server's own functions: `bulk`, OFREP bulk's `bulkAnswers` over every flag of the application
 * (evaluation/bulk.ts: the engine, counting and the OFREP JSON of each flag), and `single`,
 * `runEvaluation` (evaluation/run.ts, what REST, OFREP single and GraphQL `evaluate` run) of one
 * flag after another. Users u0…u999 in turn, context {country: NL}.
 *
 * Each workload runs pairs of two sides, built as the node builds them (node.ts): side A an
 * `EvalCounts` without insights (VEXIL_INSIGHTS=off; the reason counters stay), side B with its
 * `InsightsCounter`; each side's `InsightsForwarder` posts (drains) every
 * `insightsPostMs(VEXIL_INSIGHTS_FLUSH_MS's default)` of that side's own busy time, as the node's
 * timer does per second of wall time. A pair is `sec` seconds of each side taken in alternating
 * SLICE_SEC slices (bench/cpu-pairs.ts, shared with the provider row). Its figure is this process's CPU time (user + system) per
 * evaluation: on a shared 2-core VM the wall time also holds what other processes took from its
 * core (the wall figures are in the notes, as a cross-check). What the forwarder's `send` does on
 * a node (a message to the management actor, once per period) is not measured: here it only adds
 * up what it was handed, which checks that B counted every evaluation exactly and A none.
 */
import { loadConfig } from '../src/config.js';
import type { EvaluationRequest } from '../src/domain/types.js';
import { buildSnapshot, type CompiledFlag, type OrgSnapshot } from '../src/engine/index.js';
import { bulkAnswers, bulkFlags, type BulkRequest } from '../src/evaluation/bulk.js';
import { runEvaluation } from '../src/evaluation/run.js';
import { ROW_STRIDE, insightsPostMs, type InsightsRows } from '../src/insights/counter.js';
import { InsightsForwarder } from '../src/insights/forwarder.js';
import { EvalCounts } from '../src/ops/eval-counts.js';
import { httpCpuUsPerEval, httpShare, ns, pairedCostRow, pct, type CountingCost, type EnginePair, type HttpCost } from './counting-cost.js';
import { pairedRounds, slicedPairs, timedRound, type RoundTime } from './cpu-pairs.js';
import { log, type Measurement } from './harness.js';
import { OFREP_BULK_FLAGS } from './scenarios.js';
import { syntheticInput } from './snapshot-build.js';

const USERS = 1000;

/** The snapshot and the requests the workloads evaluate. */
export interface EngineData {
  snapshot: OrgSnapshot;
  /** The bulk's flags (`bulkFlags` for application default, stage production), sorted by name. */
  flags: CompiledFlag[];
  bulks: BulkRequest[];
  singles: EvaluationRequest[];
}

export function engineData(flagCount = OFREP_BULK_FLAGS): EngineData {
  const input = syntheticInput(flagCount);
  const snapshot = buildSnapshot(input.org, input.flags, input.configs);
  const scope = { application: 'default', stage: 'production' };
  const context = { country: 'NL' };
  const users = Array.from({ length: USERS }, (_, i) => `u${i}`);
  return {
    snapshot,
    flags: bulkFlags(snapshot, scope),
    bulks: users.map((userId) => ({ scope, userId, clientId: null, context })),
    singles: users.map((userId) => ({ userId, stage: scope.stage, clientId: null, context })),
  };
}

/** One workload: `run` evaluates call `i`'s request(s), counted in `counts`, and returns how many evaluations it ran. */
export interface Workload {
  key: 'bulk' | 'single';
  what: string;
  /** Calls between two looks at the clock. */
  batch: number;
  run(counts: EvalCounts, i: number): number;
}

/** What the workloads answered, kept where the optimiser cannot drop it. */
export const sunk = { n: 0 };

export function workloads(d: EngineData): Workload[] {
  const { snapshot, flags, bulks, singles } = d;
  return [
    {
      key: 'bulk',
      what: `OFREP bulk's bulkAnswers over the ${flags.length} flags of the application`,
      batch: 4,
      run(counts, i) {
        sunk.n += bulkAnswers(snapshot, flags, bulks[i % USERS], Date.now(), counts).length;
        return flags.length;
      },
    },
    {
      key: 'single',
      what: `runEvaluation of one flag (each of the ${flags.length} in turn), as REST, OFREP single and GraphQL evaluate run it`,
      batch: 256,
      run(counts, i) {
        const ev = runEvaluation(snapshot, flags[i % flags.length], singles[i % USERS], Date.now(), counts);
        sunk.n += ev.key === null ? 0 : 1;
        return 1;
      },
    },
  ];
}

/** The forwarder's own timer never fires: the rounds call `post` on the side's busy time instead. */
const NO_TIMER_MS = 2 ** 31 - 1;

/** One side of the comparison: a node's counters with or without insights, and its forwarder. */
export class EngineSide {
  readonly counts: EvalCounts;
  private readonly forwarder: InsightsForwarder;
  /** Evaluations run; evaluations counted (the `count` column of the rows the forwarder sent); drains that had rows. */
  evaluations = 0;
  counted = 0;
  posts = 0;
  private busyMs = 0;
  private nextPostMs: number;
  private next = 0;

  constructor(
    readonly insights: boolean,
    private readonly postMs: number,
  ) {
    this.counts = new EvalCounts(undefined, insights);
    this.forwarder = new InsightsForwarder(this.counts, (rows) => this.sent(rows), NO_TIMER_MS);
    this.nextPostMs = postMs;
  }

  /**
   * Runs `w` for `sec` seconds of wall time (at least one batch): the evaluations, this process's
   * CPU time over the round (user + system: the runner does nothing else meanwhile, and time other
   * processes take from this core is not in it) and the wall time.
   */
  round(w: Workload, sec: number): RoundTime {
    let i = this.next;
    const r = timedRound(
      sec,
      () => {
        let n = 0;
        for (let k = 0; k < w.batch; k++) n += w.run(this.counts, i++);
        return n;
      },
      (elapsedMs) => {
        if (this.busyMs + elapsedMs < this.nextPostMs) return false;
        // Timed with the round; as an interval timer, the next post comes one period after this one.
        this.forwarder.post();
        this.nextPostMs = this.busyMs + elapsedMs + this.postMs;
        return true;
      },
    );
    this.busyMs += r.wallNs / 1e6;
    this.evaluations += r.evaluations;
    this.next = i;
    return r;
  }

  /** Posts what is left (a node's graceful stop). */
  close(): void {
    this.forwarder.close();
  }

  private sent(rows: InsightsRows): void {
    this.posts++;
    for (let j = 5; j < rows.length; j += ROW_STRIDE) this.counted += rows[j] as number;
  }
}

/** The workload's HTTP rows: its share of a request is read from the first of `names` this run measured. */
interface HttpRoute {
  label: string;
  names: string[];
  evalsPerRequest: number;
}

const routes = (key: Workload['key'], batch: number): HttpRoute[] =>
  key === 'bulk'
    ? [{ label: 'OFREP bulk', names: ['insights-ofrep-bulk', 'ofrep-bulk'], evalsPerRequest: OFREP_BULK_FLAGS }]
    : [
        { label: 'REST', names: ['insights-rest', 'rest-front'], evalsPerRequest: 1 },
        { label: `${batch}-alias GraphQL`, names: ['insights-graphql-batch', 'graphql-batch-front'], evalsPerRequest: batch },
      ];

export interface EngineOptions {
  /** Pairs of rounds per workload. */
  pairs: number;
  /** Seconds per round. */
  sec: number;
  /** The GraphQL batch's aliases (--batch). */
  batch: number;
  /** Rows of this run so far (the HTTP rows' CPU per evaluation). */
  earlier: readonly Measurement[];
  /** Workloads to run (default both). */
  only?: readonly Workload['key'][];
}

/** The in-process rows: `insights-engine-bulk` and `insights-engine-single`. */
export async function engineRows(o: EngineOptions): Promise<Measurement[]> {
  const postMs = insightsPostMs(loadConfig({}).insightsFlushMs);
  const data = engineData();
  const rows: Measurement[] = [];
  for (const w of workloads(data)) {
    if (o.only !== undefined && !o.only.includes(w.key)) continue;
    const name = `insights-engine-${w.key}`;
    log(`${name}: ${w.what}, counting on against off, ${slicedPairs(o.pairs, o.sec)}`);
    const sides: [EngineSide, EngineSide] = [new EngineSide(false, postMs), new EngineSide(true, postMs)];
    const { cpu, wall } = await pairedRounds([(sec) => sides[0].round(w, sec), (sec) => sides[1].round(w, sec)], o.pairs, o.sec);
    for (const s of sides) s.close();
    rows.push(engineRow(name, w, o, postMs, cpu, wall, sides));
  }
  return rows;
}

function engineRow(name: string, w: Workload, o: EngineOptions, postMs: number, pairs: EnginePair[], wall: EnginePair[], [off, on]: [EngineSide, EngineSide]): Measurement {
  const { cost: c, notes, versus, extra } = pairedCostRow(`${w.key} engine (counting off)`, 'evaluation', 'the engine-only evaluation', pairs, wall);
  const http = routes(w.key, o.batch).map((r) => ({ route: r, cost: httpCpuUsPerEval(o.earlier, r.names) }));
  const row: Measurement = {
    name,
    description:
      `${w.what}, in the runner's thread, by CPU time: counting on (EvalCounts with its InsightsCounter, an InsightsForwarder draining every ${postMs} ms of busy time) ÷ ` +
      `off (VEXIL_INSIGHTS=off's EvalCounts), ${slicedPairs(pairs.length, o.sec)}`,
    status: 'ok',
    versus,
    notes: [
      notes.cpu,
      `${notes.cost}: the upper bound of its share of a request`,
      ...http.map(({ route, cost }) => httpNote(route, cost, c)),
      notes.wall,
      `counted ${on.counted} of ${on.evaluations} evaluations in ${on.posts} drains (counting off: ${off.counted})`,
    ],
    extra: {
      ...extra,
      http: http.map(({ route, cost }) => ({ route: route.label, ...cost, share: cost === undefined ? undefined : httpShare(c.costNs.median, cost) })),
      targets: http
        .filter(({ cost }) => cost !== undefined)
        .map(({ route, cost }) => ({
          target: `insights: counting ≤ 3 % of a ${route.label} request's server CPU (${name} ÷ ${cost!.row})`,
          figure: `${pct(httpShare(c.costNs.median, cost!), 2)} (${ns(c.costNs.median * route.evalsPerRequest)} ns of ${(cost!.cpuUsPerEval * route.evalsPerRequest).toFixed(1)} µs)`,
          met: httpShare(c.costNs.median, cost!) <= 0.03,
        })),
    },
  };
  if (on.counted !== on.evaluations || off.counted !== 0) {
    row.status = 'failed';
    row.error = `counting on counted ${on.counted} of ${on.evaluations} evaluations, counting off ${off.counted} (want all, and none)`;
  }
  return row;
}

function httpNote(r: HttpRoute, cost: HttpCost | undefined, c: CountingCost): string {
  if (cost === undefined) return `${r.label}: no HTTP row in this run (${r.names.join(' or ')}), so no share of a request`;
  const perRequestUs = cost.cpuUsPerEval * r.evalsPerRequest;
  return (
    `${r.label} (${cost.row}, counting off): ${perRequestUs.toFixed(1)} µs server CPU per request of ${r.evalsPerRequest} evaluation${r.evalsPerRequest === 1 ? '' : 's'}; ` +
    `counting adds ${ns(c.costNs.median * r.evalsPerRequest)} ns to it, ${pct(httpShare(c.costNs.median, cost), 2)}`
  );
}
