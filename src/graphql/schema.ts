/**
 * The GraphQL schema (docs/graphql.md; its names are part of the API) and its two custom scalars.
 *
 * Fields added to the base schema (docs/graphql.md, "Additions to the contract's schema"):
 * - `FlagConfig.enrollmentCutoff` and `UpsertFlagConfigInput.enrollmentCutoff` (the engine's
 *   enrollment cut-off, docs/evaluation.md "Enrollment cut-off");
 * - `Flag.configs`, the flag's stage configurations (what REST `GET /api/flags/{name}` includes);
 * - `viewer` and `explainEvaluation` (for the admin web UI; README, "Web UI").
 *
 * The audit log's types and `Query.auditLog` (docs/audit.md) are kept together in `auditTypeDefs`,
 * the flag list's paging (`PageInfo`, `FlagConnection`, `Query.flagConnection`, docs/graphql.md) in
 * `flagPagingTypeDefs`, segments (`Segment`, `Rule.segments`, `RuleInput.segments` and their
 * fields, docs/api.md#segments) in `segmentTypeDefs`, scheduled changes (`Schedule`,
 * `Flag.schedules`, `scheduleFlagChange`, `cancelSchedule`, docs/api.md#scheduled-changes) in
 * `scheduleTypeDefs`.
 *
 * Scalars:
 * - `Any` is any JSON value. Inline literals of every kind are accepted (objects, lists, strings,
 *   numbers, booleans, null), and so are variables, both as the whole value (`context: $ctx`) and
 *   nested inside an object or list literal (`context: {country: $c}`). Enum-style bare words are
 *   not JSON and are rejected; so is the object key `__proto__` in a literal.
 * - `DateTime` is an ISO 8601 date-time with a time zone, validated and normalised with
 *   `parseDateTime` (the same function REST uses), both as a literal and as a variable.
 *
 * graphql-jit 0.8.9 coerces scalar literals once, at compile time, by calling
 * `coerceInputLiteral(node)` without variables, and embeds the result in the generated code as
 * JSON. A variable nested in an `Any` literal therefore cannot be resolved there: it becomes a
 * marker object that `materializeAny` replaces with the variable's value when a resolver runs
 * (only for documents that contain such a literal; `trackDeferredAny` reports that at compile time).
 */
import { policyTypeDefs } from '../features/policies/graphql-sdl.js';
import { changeRequestTypeDefs } from '../features/change-requests/graphql-sdl.js';
import { webhookTypeDefs } from '../features/webhooks/graphql-schema.js';
import { randomBytes } from 'node:crypto';
import {
  buildSchema,
  GraphQLError,
  GraphQLScalarType,
  Kind,
  type GraphQLFieldResolver,
  type GraphQLSchema,
  type ValueNode,
} from 'graphql';
import { parseDateTime } from '../domain/validation.js';
import { VexilError } from '../domain/errors.js';
import { insightsTypeDefs } from '../features/insights/graphql.js';

/** Audit log (docs/audit.md): the same rules as REST GET /api/audit. */
const auditTypeDefs = /* GraphQL */ `
type AuditActor { keyId: ID  keyName: String  operator: Boolean! }
type AuditTarget { type: String!  name: String!  stage: String  clientId: String }
type AuditEvent {
  id: ID!
  at: DateTime!
  actor: AuditActor!
  action: String!
  target: AuditTarget!
  application: String
  before: Any
  after: Any
  """The schedule whose change this event records; null for every other write."""
  scheduleId: ID
  """A write that bypassed a protected environment's review (docs/audit.md, "Bypass"); null otherwise."""
  bypass: AuditBypass
  """The change request whose step or apply this is (docs/audit.md, "Change requests"); null otherwise."""
  changeRequestId: ID
}
type AuditBypass { reason: String! }
extend type Query {
  """Newest first. type: flag, key or organization; first: 1-500 (default 100); before: an event id."""
  auditLog(target: String, type: String, first: Int, before: ID): [AuditEvent!]
}
`;

const coreTypeDefs = /* GraphQL */ `
"""Any JSON value: object, list, string, number, boolean or null."""
scalar Any
"""ISO 8601 date-time with a time zone, e.g. 2024-05-01T12:00:00Z; answered in UTC."""
scalar DateTime

enum Permission { CanEvaluate CanRead CanWrite Admin CanApprove }

type Variant { key: String!  value: Any  valueType: String! }
type FlagDependency { flag: String!  variants: [String!] }
type Flag {
  name: String!
  project: String!
  type: String!
  description: String
  tags: [String!]!
  isArchived: Boolean!
  variants: [Variant!]!
  environments: [String!]!
  dependencies: [FlagDependency!]!
  createdAt: DateTime!
  updatedAt: DateTime!
  """The flag's stage configurations (as REST GET /api/flags/{name} includes them)."""
  configs: [FlagConfig!]!
}
type Condition { field: String!  operator: String!  value: Any }
type Allocation { variantKey: String!  percentage: Float! }
type Rule { id: ID!  priority: Int!  conditions: [Condition!]!  allocations: [Allocation!]! }
type FlagConfig {
  stage: String!
  clientId: String
  enabled: Boolean!
  defaultVariantKey: String!
  rolloutPercentage: Float!
  rules: [Rule!]!
  activeFrom: DateTime
  activeUntil: DateTime
  """Enrollment cut-off percentage (0-100) or null: buckets at or above it get enrollment_closed."""
  enrollmentCutoff: Float
}
type EvaluationReason { code: String!  message: String!  ruleId: String }
type Evaluation { key: String  variant: Any  reason: EvaluationReason }
type KillSwitchRule { flag: String  application: String  environment: String }
type ManagementKey {
  id: ID!
  name: String!
  permissions: [Permission!]!
  application: String
  environment: String
  disabled: Boolean!
  createdAt: DateTime!
  rotatedAt: DateTime
}
type CreatedManagementKey { id: ID!  key: String!  managementKey: ManagementKey! }

input VariantInput { key: String!  value: Any  valueType: String! }
input FlagDependencyInput { flag: String!  variants: [String!] }
input CreateFlagInput {
  name: String!
  project: String!
  type: String!
  description: String
  tags: [String!]
  variants: [VariantInput!]!
  environments: [String!]
  dependencies: [FlagDependencyInput!]
}
input UpdateFlagInput {
  type: String
  description: String
  tags: [String!]
  variants: [VariantInput!]
  isArchived: Boolean
  dependencies: [FlagDependencyInput!]
}
input ConditionInput { field: String!  operator: String!  value: Any }
input AllocationInput { variantKey: String!  percentage: Float! }
input RuleInput { id: ID  priority: Int!  conditions: [ConditionInput!]!  allocations: [AllocationInput!]! }
input UpsertFlagConfigInput {
  stage: String!
  clientId: String
  enabled: Boolean!
  defaultVariantKey: String!
  rolloutPercentage: Float!
  rules: [RuleInput!]
  activeFrom: DateTime
  activeUntil: DateTime
  """Enrollment cut-off percentage (0-100) or null (open)."""
  enrollmentCutoff: Float
}
input KillSwitchRuleInput { flag: String  application: String  environment: String }
input CreateManagementKeyInput {
  name: String!
  permissions: [Permission!]!
  application: String
  environment: String
}

type Query {
  """
  The flags the key can read, sorted by name (byte order); the filters and paging of REST GET
  /api/flags (docs/api.md, "Listing and paging"). first: 1-1000, absent: every matching flag; after: a flag name.
  """
  flags(first: Int, after: String, search: String, application: String, type: String, archived: Boolean): [Flag!]
  flag(name: String!): Flag
  flagConfigs(name: String!, stage: String, clientId: String): [FlagConfig!]
  flagEnvironments(name: String!): [String!]
  environments: [String!]
  applications: [String!]
  killSwitch: [KillSwitchRule!]
  evaluate(key: String!, userId: String!, stage: String!, context: Any, clientId: String): Evaluation
  managementKeys: [ManagementKey!]
  """The calling key's own record (never its value); any valid key may ask."""
  viewer: ManagementKey
  """What evaluate would answer, with its reason, for a key that can read the flag (CanRead)."""
  explainEvaluation(key: String!, userId: String!, stage: String!, context: Any, clientId: String): Evaluation
}

type Mutation {
  createFlag(input: CreateFlagInput!): Flag
  updateFlag(name: String!, input: UpdateFlagInput!): Flag
  archiveFlag(name: String!): Flag
  restoreFlag(name: String!): Flag
  deleteFlag(name: String!): Boolean
  upsertFlagConfig(name: String!, input: UpsertFlagConfigInput!): FlagConfig
  setFlagConfigEnabled(name: String!, stage: String!, clientId: String, enabled: Boolean!): FlagConfig
  deleteFlagConfig(name: String!, stage: String!, clientId: String): Boolean
  updateFlagEnvironments(name: String!, environments: [String!]!): Flag
  replaceEnvironments(environments: [String!]!): [String!]
  renameEnvironment(from: String!, to: String!): [String!]
  replaceApplications(applications: [String!]!): [String!]
  renameApplication(from: String!, to: String!): [String!]
  replaceKillSwitch(rules: [KillSwitchRuleInput!]!): [KillSwitchRule!]
  createManagementKey(input: CreateManagementKeyInput!): CreatedManagementKey
  rotateManagementKey(id: ID!): CreatedManagementKey
  disableManagementKey(id: ID!): ManagementKey
  deleteManagementKey(id: ID!): Boolean
}
`;

/** Paging of the flag list (docs/graphql.md): the same filters and order as `flags`. */
const flagPagingTypeDefs = /* GraphQL */ `
type PageInfo {
  """The last node's name (null when the page is empty): pass it as after for the next page."""
  endCursor: String
  hasNextPage: Boolean!
}
type FlagConnection {
  nodes: [Flag!]!
  pageInfo: PageInfo!
  """Flags matching the filters within the key's application scope, on every page."""
  totalCount: Int!
}
extend type Query {
  """One page of flags: first 1-1000; after, search, application, type, archived as for flags."""
  flagConnection(first: Int!, after: String, search: String, application: String, type: String, archived: Boolean, status: String): FlagConnection
}
`;

/**
 * Segments (docs/api.md#segments): the same rules as REST /api/segments; a rule names the
 * segments the context must be in besides its conditions (docs/evaluation.md, "Segments").
 */
const segmentTypeDefs = /* GraphQL */ `
type Segment {
  name: String!
  description: String
  """null: an organization-wide segment."""
  application: String
  conditions: [Condition!]!
  createdAt: DateTime!
  updatedAt: DateTime!
}
input CreateSegmentInput {
  name: String!
  description: String
  """Absent: the key's application (organization-wide for a key without application scope); null: organization-wide."""
  application: String
  conditions: [ConditionInput!]
}
input UpdateSegmentInput { description: String  conditions: [ConditionInput!] }
extend type Rule { segments: [String!]! }
extend input RuleInput { segments: [String!] }
extend type Query {
  """The segments the key can see, sorted by name."""
  segments: [Segment!]
  segment(name: String!): Segment
}
extend type Mutation {
  createSegment(input: CreateSegmentInput!): Segment
  updateSegment(name: String!, input: UpdateSegmentInput!): Segment
  """CONFLICT while a flag's rule uses it (the message names the flags)."""
  deleteSegment(name: String!): Boolean
}
`;

/** Scheduled changes (docs/api.md#scheduled-changes): the same rules as the REST routes. */
const scheduleTypeDefs = /* GraphQL */ `
type ScheduleCreator { keyId: ID!  keyName: String! }
type Schedule {
  id: ID!
  flag: String!
  at: DateTime!
  stage: String!
  clientId: String
  """Set for an enable or disable; null when config is set."""
  enabled: Boolean
  """The configuration to upsert; null when enabled is set."""
  config: FlagConfig
  createdBy: ScheduleCreator!
  """pending, applied, cancelled or failed"""
  status: String!
  appliedAt: DateTime
  error: String
}
"""Exactly one of enabled and config (an UpsertFlagConfigInput for the same stage and clientId)."""
input ScheduleInput {
  at: DateTime!
  stage: String!
  clientId: String
  enabled: Boolean
  config: UpsertFlagConfigInput
}
extend type Flag {
  """The flag's scheduled changes, soonest first."""
  schedules: [Schedule!]!
}
extend type Mutation {
  scheduleFlagChange(name: String!, input: ScheduleInput!): Schedule
  cancelSchedule(name: String!, id: ID!): Boolean
}
`;

export const typeDefs = coreTypeDefs + auditTypeDefs + flagPagingTypeDefs + segmentTypeDefs + scheduleTypeDefs + policyTypeDefs + insightsTypeDefs + changeRequestTypeDefs + webhookTypeDefs;

// ---- Any ------------------------------------------------------------------------------------------

/** Key of the marker object standing for a variable nested in an `Any` literal; unguessable. */
const VAR_MARK = `\u0000vexil-var-${randomBytes(8).toString('hex')}`;
/** A nested variable that was not provided: the object field is left out, a list item is null. */
const OMIT: unique symbol = Symbol('omit');

let tracker: { deferred: boolean } | null = null;

/**
 * Runs `compile` and reports whether it coerced an `Any` literal with a nested variable (whose
 * resolvers must then call `materializeAny`). Compilation is synchronous, so a module-level
 * tracker is safe.
 */
export function trackDeferredAny<T>(compile: () => T): { result: T; deferredAny: boolean } {
  const prev = tracker;
  const t = { deferred: false };
  tracker = t;
  try {
    return { result: compile(), deferredAny: t.deferred };
  } finally {
    tracker = prev;
  }
}

const literalError = (msg: string, node: ValueNode) => new GraphQLError(`Any: ${msg}`, { nodes: node });

/** Sets an own enumerable property, even one named `__proto__`. */
function setOwn(o: Record<string, unknown>, k: string, v: unknown): void {
  Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
}

/** An `Any` literal as a JSON value; `vars` resolves variables (absent: marker objects). */
function anyFromLiteral(node: ValueNode, vars: Record<string, unknown> | undefined): unknown {
  switch (node.kind) {
    case Kind.NULL:
      return null;
    case Kind.STRING:
    case Kind.BOOLEAN:
      return node.value;
    case Kind.INT:
    case Kind.FLOAT: {
      const n = Number(node.value);
      if (!Number.isFinite(n)) throw literalError(`number ${node.value} is out of range`, node);
      return n;
    }
    case Kind.LIST: {
      const out: unknown[] = [];
      for (const item of node.values) {
        const v = anyFromLiteral(item, vars);
        out.push(v === OMIT ? null : v);
      }
      return out;
    }
    case Kind.OBJECT: {
      const out: Record<string, unknown> = {};
      for (const f of node.fields) {
        const k = f.name.value;
        // graphql-jit re-creates literals from JSON source code, where "__proto__" would set the prototype.
        if (k === '__proto__') throw literalError("the object key '__proto__' is not allowed in a literal; pass it in a variable", f.value);
        const v = anyFromLiteral(f.value, vars);
        if (v !== OMIT) out[k] = v;
      }
      return out;
    }
    case Kind.VARIABLE: {
      const name = node.name.value;
      if (vars !== undefined) return Object.prototype.hasOwnProperty.call(vars, name) ? vars[name] : OMIT;
      if (tracker !== null) tracker.deferred = true;
      return { [VAR_MARK]: name };
    }
    case Kind.ENUM:
      throw literalError(`'${node.value}' is not a JSON value (quote strings)`, node);
    default:
      throw literalError(`unsupported literal`, node);
  }
}

/**
 * Replaces the markers of nested `Any` variables in `value` (resolver arguments) with the
 * variables' values. Returns `value` itself when there is nothing to replace.
 */
export function materializeAny(value: unknown, vars: Record<string, unknown>): unknown {
  const out = materialize(value, vars);
  return out === OMIT ? null : out;
}

function materialize(value: unknown, vars: Record<string, unknown>): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) {
    let copy: unknown[] | null = null;
    for (let i = 0; i < value.length; i++) {
      const m = materialize(value[i], vars);
      if (m !== value[i]) {
        copy ??= value.slice();
        copy[i] = m === OMIT ? null : m;
      }
    }
    return copy ?? value;
  }
  const o = value as Record<string, unknown>;
  if (Object.prototype.hasOwnProperty.call(o, VAR_MARK)) {
    const name = o[VAR_MARK] as string;
    return Object.prototype.hasOwnProperty.call(vars, name) ? vars[name] : OMIT;
  }
  let copy: Record<string, unknown> | null = null;
  for (const k of Object.keys(o)) {
    const m = materialize(o[k], vars);
    if (m !== o[k]) {
      if (copy === null) {
        copy = Object.create(Object.getPrototypeOf(o)) as Record<string, unknown>;
        for (const k2 of Object.keys(o)) setOwn(copy, k2, o[k2]);
      }
      if (m === OMIT) delete copy[k];
      else setOwn(copy, k, m);
    }
  }
  return copy ?? o;
}

const anyScalar = {
  serialize: (v: unknown) => v,
  parseValue: (v: unknown) => v,
  coerceInputLiteral: (node: ValueNode) => anyFromLiteral(node, undefined),
  parseLiteral: (node: ValueNode, vars?: Record<string, unknown> | null) => anyFromLiteral(node, vars ?? {}),
};

// ---- DateTime ---------------------------------------------------------------------------------------

function serializeDateTime(v: unknown): string {
  if (typeof v === 'string') return v;
  if (v instanceof Date) return v.toISOString();
  throw new VexilError('INTERNAL', 'DateTime cannot represent a non-date value');
}

function dateTimeFromLiteral(node: ValueNode): string {
  if (node.kind !== Kind.STRING) {
    throw new GraphQLError('DateTime: expected an ISO 8601 date-time string with time zone', { nodes: node });
  }
  return parseDateTime(node.value, 'DateTime');
}

const dateTimeScalar = {
  serialize: serializeDateTime,
  parseValue: (v: unknown) => parseDateTime(v, 'DateTime'),
  coerceInputLiteral: dateTimeFromLiteral,
  parseLiteral: dateTimeFromLiteral,
};

// ---- assembly ---------------------------------------------------------------------------------------

type ScalarImpl = {
  serialize: (v: unknown) => unknown;
  parseValue: (v: unknown) => unknown;
  coerceInputLiteral: (node: ValueNode) => unknown;
  parseLiteral: (node: ValueNode, vars?: Record<string, unknown> | null) => unknown;
};

function installScalar(schema: GraphQLSchema, name: string, impl: ScalarImpl): void {
  const t = schema.getType(name);
  if (!(t instanceof GraphQLScalarType)) throw new Error(`scalar ${name} missing from the schema`);
  // graphql 17 reads coerce*, graphql-jit reads serialize / parseValue / coerceInputLiteral.
  Object.assign(t, {
    serialize: impl.serialize,
    coerceOutputValue: impl.serialize,
    parseValue: impl.parseValue,
    coerceInputValue: impl.parseValue,
    coerceInputLiteral: impl.coerceInputLiteral,
    parseLiteral: impl.parseLiteral,
  });
}

/** Resolvers by type name, then field name. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type ResolverMap = Record<string, Record<string, GraphQLFieldResolver<any, any, any>>>;

/**
 * Builds the executable schema: the SDL, the scalars, and `resolvers` attached to their fields.
 * The SDL is this file's constant, so it is not validated again at every start (the front and the
 * management actor each build the schema; graphql's SDL and schema checks were about 40 % of
 * that): test/unit/graphql/schema-valid.test.ts builds it with every check on.
 */
export function buildVexilSchema(resolvers: ResolverMap): GraphQLSchema {
  const schema = buildSchema(typeDefs, { assumeValidSDL: true, assumeValid: true });
  installScalar(schema, 'Any', anyScalar);
  installScalar(schema, 'DateTime', dateTimeScalar);
  for (const [typeName, fields] of Object.entries(resolvers)) {
    const type = schema.getType(typeName);
    if (type === undefined || !('getFields' in type)) throw new Error(`No object type ${typeName}`);
    const defs = (type as { getFields(): Record<string, { resolve?: unknown }> }).getFields();
    for (const [fieldName, resolve] of Object.entries(fields)) {
      const def = defs[fieldName];
      if (def === undefined) throw new Error(`No field ${typeName}.${fieldName}`);
      def.resolve = resolve;
    }
  }
  return schema;
}

/** An `Any` literal without variables as its JSON value (what graphql-jit embeds; evaluation plans). */
export const anyLiteralValue = (node: ValueNode): unknown => anyFromLiteral(node, {});
