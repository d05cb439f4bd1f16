/** Flag evaluation engine: pure, no I/O. See docs/evaluation.md. */
export { murmur3, BUCKETS, ROLLOUT_SEED, ALLOCATION_SEED, rolloutBucket, allocationBucket } from './hash.js';
export { jsonEqual, compileCondition, conditionMatches, type CompiledCondition } from './conditions.js';
export { configKey, compileFlag, compileSegment, buildSnapshot } from './snapshot.js';
export type {
  CompiledAllocation,
  CompiledRule,
  CompiledConfig,
  ConfigReasons,
  StageConfigs,
  CompiledFlag,
  CompiledSegment,
  OrgSnapshot,
  SegmentLookup,
} from './compiled.js';
export { listMaxima, putFlag, raiseMaxima, type ListMaxima } from './snapshot-stats.js';
export { evaluateFlag, selectConfig, MAX_DEPENDENCY_DEPTH } from './engine.js';
