/**
 * What a custom scenario is: anything that is more than one load run against one service
 * (several services, other processes, its own measuring loop) runs itself with the `RunContext`
 * the runner gives it and returns its own rows for the table. The list of them is in registry.ts.
 */
import type { Measurement } from './harness.js';
import type { HarnessOptions } from './scenario-types.js';

/** What a custom scenario gets from the runner. */
export interface RunContext {
  opts: HarnessOptions;
  adminKey: string;
  /** The bare baseline row, when it was measured. */
  base: Measurement | undefined;
  /** Rows measured so far in this run. */
  rows: Measurement[];
  /** Figures one scenario leaves for another (flags-scaling → snapshot: the start-up of the big service). */
  shared: Map<string, unknown>;
}

export interface CustomScenario {
  name: string;
  description: string;
  run(rc: RunContext): Promise<Measurement[]>;
}
