/**
 * Flag evaluation engine: pure, no I/O (docs/evaluation.md). src/engine/ is the server's portable
 * folder: the engine and the pure pieces an in-process consumer needs besides it (feed-decode.ts,
 * ofrep-answer.ts, openfeature-context.ts), which the OpenFeature provider bundles. Nothing here
 * imports I/O or server code outside it, except the pure, import-free domain modules it shares
 * with the server (name matching, condition syntax, types): test/unit/architecture/imports.test.ts.
 */
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
export { nameKey, sameName } from '../domain/name-matching.js';
