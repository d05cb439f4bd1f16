/**
 * The shapes the runner, the harness and every scenario share: the run's options
 * (`HarnessOptions`), a running system under test (`Target`), and what a load scenario is
 * (`Scenario`, the `ScenarioContext` it gets, the `LoadRequest` it names, `Background` work during
 * its measured run, and `NotAvailable` when what it measures is not in this build). The load
 * scenarios themselves are in scenarios.ts; custom scenarios' shapes in custom-scenario.ts.
 */
import type { Engine } from './load.js';

export interface HarnessOptions {
  durationSec: number;
  connections: number;
  pipelining: number;
  flags: number;
  warmupSec: number;
  /** Path of the service entry point (dist/src/main.js). */
  servicePath: string;
  startupTimeoutSec: number;
  /** Value for VEXIL_EVAL_WORKERS, when given. */
  evalWorkers: string | undefined;
  pin: boolean;
  verbose: boolean;
  keepData: boolean;
  engine: Engine;
  /** Wait up to this long for the machine to be idle before each measurement. */
  quietWaitSec: number;
  /** VEXIL_EVAL_WORKERS of the rest-pool scenario. */
  poolWorkers: number;
  /** Aliased `evaluate` fields per graphql-batch request. */
  batch: number;
  /** Config upserts per second of the mixed scenario's writer. */
  writeRate: number;
  /** Service nodes of the propagation scenario (the writer's node included). */
  nodes: number;
  /** Config changes timed by the propagation scenario. */
  changes: number;
  /** Paced re-run of the REST scenarios at this fraction of their measured req/s; 0 = none. */
  pacedFraction: number;
  /** Flag counts of the flags-scaling scenario. */
  scaleFlags: number[];
  /** Round-robin measurement rounds of the flags-scaling scenario (each row keeps its quietest). */
  rounds: number;
  /** VEXIL_EVAL_WORKERS of the flags-scaling (and snapshot start-up) services; undefined = --eval-workers / service default. */
  scalingWorkers: string | undefined;
  /** Flags of the snapshot scenario. */
  snapshotFlags: number;
  /**
   * Interleaved A/B pairs (rounds) of the paired scenarios (insights, paired, rest-vs-bare,
   * front-threads): `--pairs N`, else VEXIL_BENCH_PAIRS; undefined: each scenario's own default.
   */
  pairs: number | undefined;
}

/** A running system under test. */
export interface Target {
  baseUrl: string;
  /** Processes whose CPU time and peak RSS are recorded (summed / listed). */
  pids: number[];
  stop(): Promise<void>;
  /** Recent output of the processes, for error messages. */
  tail(): string;
}

export interface ScenarioContext {
  opts: HarnessOptions;
  target: Target;
  baseUrl: string;
  /** The org-wide Admin/CanRead/CanWrite key the service was bootstrapped with. */
  adminKey: string;
  /**
   * JSON call against the target. Throws with method, path, status and body
   * when the status is not `expect` (default: any 2xx).
   */
  api<T = unknown>(method: string, path: string, body?: unknown, opts?: { key?: string; expect?: number }): Promise<T>;
  /** Free-form state shared between setup() and request(). */
  state: Record<string, unknown>;
}

export interface LoadRequest {
  method: string;
  /** Path and query, e.g. /flags/bench-flag-0 */
  path: string;
  headers: Record<string, string>;
  body?: string;
  /** Checked once before the load: expected status and a check of the body. */
  expectStatus: number;
  checkBody?: (text: string) => string | undefined;
}

export interface Scenario {
  name: string;
  description: string;
  /** Start the system under test; default: one `node dist/src/main.js` on PGlite. */
  start?: (opts: HarnessOptions, adminKey: string) => Promise<Target>;
  /** Extra environment for the default single-node start. */
  env?: Record<string, string> | ((opts: HarnessOptions) => Record<string, string>);
  /** May throw NotAvailable: the row then says "not available" instead of failing the run. */
  setup(ctx: ScenarioContext): Promise<void>;
  request(ctx: ScenarioContext): LoadRequest;
  /** Evaluations one request performs (GraphQL batches): evaluations/s = req/s × this. */
  evaluationsPerRequest?: (opts: HarnessOptions) => number;
  /** Also measure at a fixed rate of --paced-fraction × the measured req/s (latency at partial load). */
  paced?: boolean;
  /** Runs in the runner during the measured window (the mixed scenario's admin writer). */
  background?: (ctx: ScenarioContext) => Background;
  /** Runs on the node:http fallback front on purpose (the front comparison); every other scenario refuses it. */
  fallbackFront?: boolean;
}

/** Thrown by a scenario's setup when what it measures does not exist in this build. */
export class NotAvailable extends Error {}

export function scenarioEnv(s: Scenario, opts: HarnessOptions): Record<string, string> {
  return typeof s.env === 'function' ? s.env(opts) : (s.env ?? {});
}

/** Work that runs in the runner during a measured load run (the mixed scenario's writer). */
export interface Background {
  /** Stops it and returns its figures. */
  stop(): Promise<{ notes: string[]; extra: Record<string, unknown> }>;
}
