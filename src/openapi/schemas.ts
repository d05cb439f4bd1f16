/**
 * Schemas of the OpenAPI document. Request bodies are the very zod schemas the handlers validate
 * with (domain/validation); responses are described here in zod, and test/node/ops/openapi.test.ts
 * checks real responses against them.
 */
import { z } from 'zod';
import { KEY_RE } from '../domain/input-formats.js';
import { AUDIT_ACTIONS, AUDIT_TARGET_TYPES, PERMISSIONS, REASON_CODES, VALUE_TYPES } from '../domain/types.js';
import {
  auditQuerySchema,
  flagListQuerySchema,
  createFlagSchema,
  createKeySchema,
  createOrgSchema,
  evaluationBodySchema,
  patchOrgSchema,
  updateFlagSchema,
  upsertConfigSchema,
} from '../domain/validation.js';

const dateTime = z.iso.datetime({ offset: true });

export const VariantSchema = z.object({ key: z.string(), value: z.unknown(), valueType: z.enum(VALUE_TYPES) });
export const FlagSchema = z.object({
  name: z.string(),
  project: z.string(),
  type: z.enum(VALUE_TYPES),
  description: z.string().nullable(),
  tags: z.array(z.string()),
  isArchived: z.boolean(),
  variants: z.array(VariantSchema),
  environments: z.array(z.string()),
  dependencies: z.array(z.object({ flag: z.string(), variants: z.array(z.string()).nullable() })),
  createdAt: dateTime,
  updatedAt: dateTime,
});
export const FlagConfigSchema = z.object({
  stage: z.string(),
  clientId: z.string().nullable(),
  enabled: z.boolean(),
  defaultVariantKey: z.string(),
  rolloutPercentage: z.number(),
  rules: z.array(
    z.object({
      id: z.string(),
      priority: z.number().int(),
      conditions: z.array(z.object({ field: z.string(), operator: z.string(), value: z.unknown() })),
      segments: z.array(z.string()).meta({ description: 'Segments the context must be in besides the conditions (docs/evaluation.md)' }),
      allocations: z.array(z.object({ variantKey: z.string(), percentage: z.number() })),
    }),
  ),
  activeFrom: dateTime.nullable(),
  activeUntil: dateTime.nullable(),
  enrollmentCutoff: z.number().nullable(),
});
export const FlagWithConfigsSchema = FlagSchema.extend({ configs: z.array(FlagConfigSchema) });

const keyFields = {
  id: z.string(),
  name: z.string(),
  permissions: z.array(z.enum(PERMISSIONS)),
  application: z.string().nullable(),
  environment: z.string().nullable(),
  disabled: z.boolean(),
  createdAt: dateTime,
};
export const KeyRecordSchema = z.object({ ...keyFields, rotatedAt: dateTime.nullable() });
const keyValue = z.string().regex(KEY_RE).meta({ description: 'The key value: shown once, never stored in plain text' });
export const CreatedKeySchema = z.object({ ...keyFields, key: keyValue });
export const RotatedKeySchema = z.object({ id: z.string(), key: keyValue });

export const OrganizationSchema = z.object({
  name: z.string(),
  subscriptionActive: z.boolean(),
  environments: z.array(z.string()),
  applications: z.array(z.string()),
});
export const CreatedOrganizationSchema = OrganizationSchema.extend({ adminKey: keyValue });
export const IssuedAdminKeySchema = z.object({ adminKey: keyValue });

export const EvaluationSchema = z.object({
  variant: z.unknown().meta({ description: "The variant's value; null when the outcome has no variant" }),
  key: z.string().nullable().meta({ description: 'The variant key; null when the outcome has no variant' }),
  reason: z
    .object({ code: z.enum(REASON_CODES), message: z.string(), ruleId: z.string().optional() })
    .optional()
    .meta({ description: 'Present with ?explain=true' }),
});

export const ProblemSchema = z
  .object({
    type: z.string(),
    title: z.string(),
    status: z.number().int(),
    detail: z.string(),
    code: z.string().meta({
      description:
        'BAD_REQUEST, UNAUTHENTICATED, PAYMENT_REQUIRED, FORBIDDEN, NOT_FOUND, METHOD_NOT_ALLOWED, CONFLICT, ' +
        'QUOTA_EXCEEDED (409: a count limit of docs/limits.md, "Tenancy limits", named in `detail`), PAYLOAD_TOO_LARGE, ' +
        'UNSUPPORTED_MEDIA_TYPE, RATE_LIMITED, INTERNAL, UNAVAILABLE',
    }),
  })
  .meta({ description: 'RFC 9457 problem details; `code` is the GraphQL extensions.code for the same failure' });

export const GraphQLRequestSchema = z.object({
  query: z.string().max(100 * 1024),
  variables: z.record(z.string(), z.unknown()).nullable().optional(),
  operationName: z.string().nullable().optional(),
  extensions: z.record(z.string(), z.unknown()).nullable().optional(),
});
export const GraphQLResponseSchema = z.object({
  data: z.record(z.string(), z.unknown()).nullable().optional(),
  errors: z
    .array(
      z.object({
        message: z.string(),
        path: z.array(z.union([z.string(), z.number()])).optional(),
        extensions: z.object({ code: z.string(), status: z.number().int().optional() }).optional(),
      }),
    )
    .optional(),
});

export const AuditEventSchema = z.object({
  id: z.string(),
  at: dateTime,
  actor: z.union([z.strictObject({ keyId: z.string(), keyName: z.string() }), z.strictObject({ operator: z.literal(true) })]),
  action: z.enum(AUDIT_ACTIONS),
  target: z.object({ type: z.enum(AUDIT_TARGET_TYPES), name: z.string(), stage: z.string().nullable().optional(), clientId: z.string().nullable().optional() }),
  application: z.string().nullable(),
  before: z.unknown(),
  after: z.unknown(),
  scheduleId: z.string().optional().meta({ description: 'The schedule whose change this is (docs/audit.md)' }),
  bypass: z.strictObject({ reason: z.string() }).optional().meta({ description: "A write that bypassed a protected environment's review, with its reason (docs/audit.md, \"Bypass\")" }),
});

export const LiveSchema = z.object({ status: z.literal('live') });
/** Front threads serving the node's port (CONTRACT 20, docs/threads.md). */
const frontThreads = z.number().int().min(1);
export const ReadySchema = z.object({ status: z.literal('ready'), node: z.string(), database: z.literal('up'), bus: z.enum(['up', 'down', 'local']), http: z.string(), frontThreads });
export const HealthSchema = z.object({ status: z.literal('ok'), node: z.string(), nodes: z.number().int(), bus: z.enum(['up', 'down', 'local']), http: z.string(), frontThreads });

/** Query-string schemas: each property is one query parameter (document.ts). */
export const QUERY_SCHEMAS: Record<string, z.ZodType> = { AuditQuery: auditQuerySchema, FlagListQuery: flagListQuerySchema };

/** Every named schema of `components.schemas`. */
export const NAMED_SCHEMAS: Record<string, z.ZodType> = {
  CreateFlagInput: createFlagSchema,
  UpdateFlagInput: updateFlagSchema,
  UpsertFlagConfigInput: upsertConfigSchema,
  CreateManagementKeyInput: createKeySchema,
  CreateOrganizationInput: createOrgSchema,
  PatchOrganizationInput: patchOrgSchema,
  EvaluationRequest: evaluationBodySchema,
  GraphQLRequest: GraphQLRequestSchema,
  GraphQLResponse: GraphQLResponseSchema,
  Flag: FlagSchema,
  FlagWithConfigs: FlagWithConfigsSchema,
  FlagConfig: FlagConfigSchema,
  ManagementKey: KeyRecordSchema,
  CreatedManagementKey: CreatedKeySchema,
  RotatedManagementKey: RotatedKeySchema,
  Organization: OrganizationSchema,
  CreatedOrganization: CreatedOrganizationSchema,
  IssuedAdminKey: IssuedAdminKeySchema,
  Evaluation: EvaluationSchema,
  Problem: ProblemSchema,
  AuditEvent: AuditEventSchema,
  Live: LiveSchema,
  Ready: ReadySchema,
  Health: HealthSchema,
};

/** Adds schemas of a feature with routes of its own (OFREP) to `components.schemas`. */
export function registerSchemas(schemas: Record<string, z.ZodType>): void {
  Object.assign(NAMED_SCHEMAS, schemas);
}
