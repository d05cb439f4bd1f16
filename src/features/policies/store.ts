// TEMPORARY stub of cr-policy's store (removed before merging cr-policy): every environment unprotected.
import type { Queryable } from '../../storage/database.js';
export interface EnvironmentPolicy { requiredApprovals: number; allowSelfApproval: boolean; allowBypass: boolean }
export async function readPolicy(_q: Queryable, _orgId: string, _stage: string): Promise<EnvironmentPolicy> {
  return { requiredApprovals: 0, allowSelfApproval: false, allowBypass: false };
}
export async function readPolicies(_q: Queryable, _orgId: string): Promise<Map<string, EnvironmentPolicy>> {
  return new Map();
}
