/**
 * Input validation: pure functions that turn untrusted request data (REST bodies, GraphQL
 * inputs) into normalised domain inputs, or throw VexilError('BAD_REQUEST') with a message that
 * names the offending path ("variants[1].valueType: expected one of boolean, string, number,
 * json", "unknown field 'colour'"). No I/O: checks that need stored state (does the application
 * exist, does the stage belong to the flag) live with the callers.
 *
 * Conventions
 * - Objects are strict: unknown fields are 400.
 * - Optional fields that have no "null" meaning in the domain (tags, variants, isArchived, ...)
 *   treat an explicit null as absent, so GraphQL clients passing null variables behave like REST
 *   clients omitting the field. Nullable fields (description, clientId, activeFrom, ...) keep null.
 * - Numbers must be finite; date-times are ISO 8601 with a time zone and are returned normalised
 *   to `Date#toISOString()` form.
 *
 * This module is the public entry point; the code lives in ./validation/, one concern per file.
 */
export {
  DESCRIPTION_MAX,
  FLAG_NAME_RE,
  ID_MAX,
  KEY_NAME_MAX,
  KEY_RE,
  NAME_RE,
  TAGS_MAX,
  TAG_MAX,
  USER_ID_MAX,
  VARIANT_KEY_MAX,
  describeType,
  formatPath,
  isJsonValue,
  parseInput,
} from './validation/common.js';
export { parseDateTime } from './validation/datetime.js';
export { parseFlagEnvironments, parseFlagName, parseName, parseNameList } from './validation/name-inputs.js';
export {
  createFlagSchema,
  updateFlagSchema,
  parseCreateFlag,
  parseUpdateFlag,
  validateVariants,
  type CreateFlagInput,
  type FlagDependencyInput,
  type UpdateFlagInput,
  type VariantInput,
} from './validation/flags.js';
export {
  createSegmentSchema,
  updateSegmentSchema,
  parseCreateSegment,
  parseUpdateSegment,
  type CreateSegmentInput,
  type UpdateSegmentInput,
} from './validation/segments.js';
export {
  upsertConfigSchema,
  parseUpsertFlagConfig,
  validateConfigAgainstFlag,
  type AllocationInput,
  type ConditionInput,
  type RuleInput,
  type UpsertFlagConfigInput,
} from './validation/configs.js';
export { parseSchedule, scheduleSchema, SCHEDULE_FINISHED_KEPT, SCHEDULE_HORIZON_MS, type ScheduleInput } from './validation/schedules.js';
export { evaluationBodySchema, parseEvaluationBody, type EvaluationBody } from './validation/evaluation.js';
export { createKeySchema, parseCreateKey, type CreateKeyInput } from './validation/keys.js';
export {
  checkContextLimits,
  contextLimitError,
  contextTooDeepError,
  DEFAULT_CONTEXT_LIMITS,
  measureContext,
  type ContextLimits,
  type ContextSize,
} from './validation/context-limits.js';
export { JsonDepthScanner, jsonDeeperThan } from './validation/json-depth.js';
export {
  createOrgSchema,
  patchOrgSchema,
  parseCreateOrganization,
  parseKillSwitchRules,
  parsePatchOrganization,
  type CreateOrganizationInput,
  type PatchOrganizationInput,
} from './validation/organizations.js';
export { feedQuerySchema, parseFeedQuery, type FeedQuery } from './validation/feed.js';
export { AUDIT_LIMIT_DEFAULT, AUDIT_LIMIT_MAX, auditQuerySchema, parseAuditQuery, type AuditQuery } from './validation/audit.js';
export {
  FLAG_PAGE_MAX,
  FLAG_SEARCH_MAX,
  flagListQuerySchema,
  parseFlagListArgs,
  parseFlagListQuery,
  type FlagListQuery,
} from './validation/flag-list.js';
export {
  checkConfigLimits,
  checkSegmentLimits,
  checkVariantLimits,
  DEFAULT_TENANCY_LIMITS,
  describeLimit,
  jsonBytes,
  LIMIT_SETTING,
  quotaError,
  type TenancyLimits,
} from './validation/tenancy-limits.js';
