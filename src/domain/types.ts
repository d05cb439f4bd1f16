/**
 * Domain records shared by every layer: storage reads and writes them, the evaluation engine
 * reads them from snapshots, REST and GraphQL serialise them. Plain data, no behaviour.
 */

export const PERMISSIONS = ['CanEvaluate', 'CanRead', 'CanWrite', 'Admin', 'CanApprove'] as const;
export type Permission = (typeof PERMISSIONS)[number];

export const VALUE_TYPES = ['boolean', 'string', 'number', 'json'] as const;
export type ValueType = (typeof VALUE_TYPES)[number];

export interface Variant {
  key: string;
  value: unknown;
  valueType: ValueType;
}

export interface FlagDependency {
  /** Name of the parent flag (same organization). */
  flag: string;
  /** Variant keys of the parent that satisfy the dependency; null means any variant. */
  variants: string[] | null;
}

export interface Flag {
  name: string;
  project: string;
  type: ValueType;
  description: string | null;
  tags: string[];
  isArchived: boolean;
  variants: Variant[];
  environments: string[];
  dependencies: FlagDependency[];
  /**
   * What the flag is for: sets its expected lifetime (docs/insights.md, "Lifecycle"). The stores
   * and APIs always fill it (default `release`); flags decoded from a feed (which leaves it out,
   * evaluation does not need it) and built in code lack it.
   */
  purpose?: FlagPurpose;
  createdAt: string; // ISO 8601
  updatedAt: string; // ISO 8601
}

export interface Condition {
  field: string;
  operator: string;
  value: unknown;
}

export interface Allocation {
  variantKey: string;
  percentage: number;
}

export interface Rule {
  id: string;
  priority: number;
  conditions: Condition[];
  /**
   * Names of segments the context must be in, besides matching `conditions` (docs/evaluation.md,
   * "Segments"). Every rule the stores and APIs answer has it (`[]` when none, rules stored before
   * segments existed included); optional for rules built in code (tests, benchmarks).
   */
  segments?: string[];
  allocations: Allocation[];
}

/**
 * A named audience that rules reuse (docs/api.md#segments): a context is in it when every one of
 * its conditions matches (no conditions: everyone). `application: null` is organization-wide.
 */
export interface Segment {
  name: string;
  description: string | null;
  application: string | null;
  conditions: Condition[];
  createdAt: string; // ISO 8601
  updatedAt: string; // ISO 8601
}

export interface FlagConfig {
  stage: string;
  clientId: string | null;
  enabled: boolean;
  defaultVariantKey: string;
  rolloutPercentage: number;
  rules: Rule[];
  activeFrom: string | null; // ISO 8601
  activeUntil: string | null; // ISO 8601
  /**
   * Enrollment cut-off, a percentage in [0, 100] or null (open). Users whose rollout bucket is
   * inside `rolloutPercentage` but at or above the cut-off get `enrollment_closed`: buckets that
   * were enrolled before the cut-off keep the flag, new ones are refused.
   */
  enrollmentCutoff: number | null;
}

export interface KillSwitchRule {
  flag: string | null;
  application: string | null;
  environment: string | null;
}

export interface Organization {
  id: string;
  name: string;
  subscriptionActive: boolean;
  environments: string[];
  applications: string[];
  killSwitch: KillSwitchRule[];
  /** Monotonic version, bumped by every write that touches the organization's data. */
  version: number;
}

export interface ManagementKey {
  id: string;
  orgId: string;
  name: string;
  permissions: Permission[];
  application: string | null;
  environment: string | null;
  disabled: boolean;
  createdAt: string;
  rotatedAt: string | null;
}

/** What clients see of a key (the keys API, its audit events): never its value or hash. */
export type KeyView = Omit<ManagementKey, 'orgId'>;

export const REASON_CODES = [
  'rule_matched',
  'default',
  'killswitch',
  'archived',
  'not_yet_active',
  'expired',
  'project_or_env_mismatch',
  'disabled_dependency',
  'config_disabled',
  'config_missing',
  'rollout_excluded',
  'enrollment_closed',
  'no_variants',
] as const;
export type ReasonCode = (typeof REASON_CODES)[number];

export interface EvaluationReason {
  code: ReasonCode;
  message: string;
  ruleId?: string;
}

/** What an evaluation answers: the fields every transport writes (REST, OFREP, GraphQL, the pool's wire). */
export interface EvaluationAnswer {
  key: string | null;
  variant: unknown;
  reason: EvaluationReason;
}

/**
 * The engine's result: the answer plus `index`, the served variant's position in the compiled
 * flag's variants (`CompiledFlag.variants`, in insertion order), or `NO_VARIANT_INDEX` (-1) when
 * `key` is null. It is for the counters on the thread that ran the engine (insights/counter.ts,
 * the OpenFeature provider) and is never serialised: transports write the answer's fields by name,
 * and the worker pool's wire carries the answer only (evaluation/pool/protocol.ts).
 */
export interface Evaluation extends EvaluationAnswer {
  index: number;
}

/** `Evaluation.index` when no variant is served (`key` null). */
export const NO_VARIANT_INDEX = -1;

/** What a caller asks the engine; `stage` is already resolved to the organization's spelling. */
export interface EvaluationRequest {
  userId: string;
  stage: string;
  clientId: string | null;
  context: Record<string, unknown> | null;
}

// ---- audit log (docs/audit.md) ----------------------------------------------------------------------

export const AUDIT_ACTIONS = [
  'flag.create',
  'flag.update',
  'flag.archive',
  'flag.restore',
  'flag.delete',
  'flag.environments',
  'config.upsert',
  'config.enable',
  'config.disable',
  'config.delete',
  'org.environments',
  'org.applications',
  'org.killswitch',
  'key.create',
  'key.rotate',
  'key.disable',
  'key.delete',
  'org.create',
  'org.subscription',
  'segment.create',
  'segment.update',
  'segment.delete',
  'schedule.create',
  'schedule.cancel',
  'org.policy',
  'flag.stale',
  'org.insights',
  'change.create',
  'change.revise',
  'change.review',
  'change.apply',
  'change.schedule',
  'change.close',
  'change.fail',
  'webhook.create',
  'webhook.update',
  'webhook.delete',
  'webhook.rotate',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

export const AUDIT_TARGET_TYPES = ['flag', 'key', 'organization', 'segment', 'changeRequest', 'webhook'] as const;
export type AuditTargetType = (typeof AUDIT_TARGET_TYPES)[number];

/** Who made a change: a Management Key (its id and name, never its value) or the operator API. */
export type AuditActor = { keyId: string; keyName: string } | { operator: true } | { system: true };

/** A key's `name` is its id; a configuration's target is its flag with `stage` and `clientId`. */
export interface AuditTarget {
  type: AuditTargetType;
  name: string;
  stage?: string;
  clientId?: string | null;
}

/** What a write records besides who made it and when. */
export interface AuditChange {
  action: AuditAction;
  target: AuditTarget;
  /** The flag's application for flag and configuration events, the segment's for segment events, else null. */
  application: string | null;
  /** The target's JSON before and after the change; null where it did not exist. */
  before: unknown;
  after: unknown;
  /** The schedule whose change this is (docs/audit.md); absent for every other write. */
  scheduleId?: string;
  /** A write that bypassed a protected environment's review, with its reason (docs/audit.md, "Bypass"). */
  bypass?: { reason: string };
  /** The change request whose step or apply this is (docs/change-requests.md); absent for every other write. */
  changeRequestId?: string;
}

export interface AuditEvent extends AuditChange {
  id: string;
  at: string; // ISO 8601
  actor: AuditActor;
}

// ---- scheduled changes (docs/api.md#scheduled-changes) ---------------------------------------------

export const SCHEDULE_STATUSES = ['pending', 'applied', 'cancelled', 'failed'] as const;
export type ScheduleStatus = (typeof SCHEDULE_STATUSES)[number];

/** A configuration change applied once at `at`: exactly one of `enabled` and `config` is set. */
export interface Schedule {
  id: string;
  flag: string;
  at: string; // ISO 8601
  stage: string;
  clientId: string | null;
  enabled: boolean | null;
  config: FlagConfig | null;
  createdBy: { keyId: string; keyName: string };
  status: ScheduleStatus;
  appliedAt: string | null;
  error: string | null;
}

// ---- flag insights: lifecycle (docs/insights.md, "Lifecycle") ---------------------------------------

export const FLAG_PURPOSES = ['release', 'experiment', 'operational', 'killSwitch', 'permission'] as const;
export type FlagPurpose = (typeof FLAG_PURPOSES)[number];

export const FLAG_STATUSES = ['new', 'unused', 'stale', 'active'] as const;
export type FlagStatus = (typeof FLAG_STATUSES)[number];

export const STATUS_REASONS = ['age', 'unused', 'singleVariant'] as const;
export type StatusReason = (typeof STATUS_REASONS)[number];
// ---- webhooks (CONTRACT.md 19, docs/webhooks.md) ------------------------------------------------

/** A webhook endpoint as clients see it: never its secret. */
export interface WebhookEndpoint {
  id: string;
  url: string;
  events: string[];
  description: string;
  enabled: boolean;
  /** Why delivery disabled it (a 410), or null. */
  disabledReason: string | null;
  createdAt: string;
  updatedAt: string;
}

/** One delivery attempt (the deliveries log). */
export interface WebhookDelivery {
  id: string;
  /** The message's `webhook-id`. */
  messageId: string;
  type: string;
  attempt: number;
  at: string;
  /** The HTTP status, or null (timeout, network error, refused address). */
  status: number | null;
  durationMs: number;
  error: string | null;
}
