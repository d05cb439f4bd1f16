/** Environment policies (docs/change-requests.md, "Protecting an environment"). */
import { z } from 'zod';
import { parseInput } from './common.js';

export const MAX_REQUIRED_APPROVALS = 5;

export const environmentPolicySchema = z.strictObject({
  requiredApprovals: z.number().int().min(0).max(MAX_REQUIRED_APPROVALS),
  allowSelfApproval: z.boolean().optional(),
  allowBypass: z.boolean().optional(),
});

export interface EnvironmentPolicyInput {
  requiredApprovals: number;
  allowSelfApproval: boolean;
  allowBypass: boolean;
}

/** `PUT /api/environments/{stage}/policy`, GraphQL `setEnvironmentPolicy`: the flags default to false. */
export function parseEnvironmentPolicy(data: unknown): EnvironmentPolicyInput {
  const p = parseInput(environmentPolicySchema, data, 'policy');
  return { requiredApprovals: p.requiredApprovals, allowSelfApproval: p.allowSelfApproval ?? false, allowBypass: p.allowBypass ?? false };
}
