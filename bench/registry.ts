/**
 * Every scenario the runner can run by name, in the order `--help` lists them: the load scenarios
 * (scenarios.ts, scenarios-segments.ts) and then the custom ones (suites.ts and the files of their own).
 */
import { abuse } from './abuse.js';
import type { CustomScenario } from './custom-scenario.js';
import { frontThreadsScenario } from './front-threads.js';
import { insights } from './insights.js';
import { contextSample } from './context-sample.js';
import { isolation } from './isolation.js';
import { wakeLatency } from './wake-latency.js';
import { largeOrg } from './large-org.js';
import { paired } from './paired.js';
import { previewScenario } from './preview.js';
import { provider } from './provider.js';
import { restVsBare } from './rest-vs-bare.js';
import { saturation } from './saturation.js';
import type { Scenario } from './scenario-types.js';
import { SCENARIOS } from './scenarios.js';
import { SEGMENT_SCENARIOS } from './scenarios-segments.js';
import { snapshotMemory } from './snapshot-memory.js';
import { flagsScaling, propagation, snapshotBuild } from './suites.js';
import { webhookBurst } from './webhooks.js';

export type AnyScenario = Scenario | CustomScenario;

export const isCustom = (s: AnyScenario): s is CustomScenario => 'run' in s;

export const CUSTOM_SCENARIOS: CustomScenario[] = [flagsScaling, snapshotBuild, propagation, abuse, snapshotMemory, paired, isolation, largeOrg, provider, frontThreadsScenario, restVsBare, saturation, wakeLatency, insights, contextSample, previewScenario, webhookBurst];

export const ALL_SCENARIOS: AnyScenario[] = [...SCENARIOS, ...SEGMENT_SCENARIOS, ...CUSTOM_SCENARIOS];
