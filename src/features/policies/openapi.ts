/** Environment policies in the OpenAPI document (docs/change-requests.md, "Protecting an environment"). */
import { z } from 'zod';
import { environmentPolicySchema } from '../../domain/validation/policies.js';
import { registerOperations } from '../../openapi/operations.js';
import { registerSchemas } from '../../openapi/schemas.js';

export const EnvironmentPolicySchema = z.object({
  environment: z.string().meta({ description: "The environment's name as the organization spells it" }),
  requiredApprovals: z.number().int().min(0).max(5).meta({ description: 'Above 0 the environment is protected' }),
  allowSelfApproval: z.boolean(),
  allowBypass: z.boolean().meta({ description: 'An Admin key may write directly with `x-vexil-bypass-review: <reason>`' }),
});

const EnvironmentPolicyInputDoc = environmentPolicySchema.extend({
  allowSelfApproval: z.boolean().optional().meta({ description: 'Default false' }),
  allowBypass: z.boolean().optional().meta({ description: 'Default false' }),
});
registerSchemas({ EnvironmentPolicyInput: EnvironmentPolicyInputDoc, EnvironmentPolicy: EnvironmentPolicySchema });

const MGMT = ['managementKey' as const];
const AUTH_ERRORS = [400, 401, 402, 403, 429];

registerOperations({
  'GET /api/environments/:stage/policy': {
    summary: "An environment's review policy",
    description: 'CanRead. An environment without a stored policy answers the default: {requiredApprovals: 0, allowSelfApproval: false, allowBypass: false}.',
    tags: ['Environments'],
    security: MGMT,
    params: { stage: 'Environment name (case-insensitive)' },
    responses: { 200: { description: 'The policy', schema: 'EnvironmentPolicy' } },
    errors: [...AUTH_ERRORS, 404],
  },
  'PUT /api/environments/:stage/policy': {
    summary: "Set an environment's review policy",
    description:
      'Admin on an organization-wide key; audited as `org.policy`. With requiredApprovals above 0 the environment is protected: ' +
      'a direct write that would change what evaluation answers in it is 409 CONFLICT with `reason: "review_required"` (docs/change-requests.md).',
    tags: ['Environments'],
    security: MGMT,
    params: { stage: 'Environment name (case-insensitive)' },
    body: 'EnvironmentPolicyInput',
    bodyRequired: true,
    responses: { 200: { description: 'The policy now stored', schema: 'EnvironmentPolicy' } },
    errors: [...AUTH_ERRORS, 404, 413, 415, 503],
  },
});
