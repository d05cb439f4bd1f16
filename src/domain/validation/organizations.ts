/** Operator API organization bodies and the organization's kill switch rules. */
import { z } from 'zod';
import type { KillSwitchRule } from '../types.js';
import { assertUniqueCI, flagName, name, parseInput } from './common.js';

export interface CreateOrganizationInput {
  name: string;
  environments: string[];
  applications: string[];
  subscriptionActive: boolean;
}

export interface PatchOrganizationInput {
  subscriptionActive: boolean;
}

export const createOrgSchema = z.strictObject({
  name,
  environments: z.array(name).min(1),
  applications: z.array(name).min(1),
  subscriptionActive: z.boolean().optional(),
});

/** Operator API `POST /api/operator/organizations`; subscriptionActive defaults to true. */
export function parseCreateOrganization(data: unknown): CreateOrganizationInput {
  const p = parseInput(createOrgSchema, data, 'organization');
  assertUniqueCI(p.environments, 'environments');
  assertUniqueCI(p.applications, 'applications');
  return {
    name: p.name,
    environments: p.environments,
    applications: p.applications,
    subscriptionActive: p.subscriptionActive ?? true,
  };
}

export const patchOrgSchema = z.strictObject({ subscriptionActive: z.boolean() });

/** Operator API `PATCH /api/operator/organizations/{name}`. */
export function parsePatchOrganization(data: unknown): PatchOrganizationInput {
  const p = parseInput(patchOrgSchema, data, 'organization');
  return { subscriptionActive: p.subscriptionActive };
}

const killSwitchSchema = z.array(
  z.strictObject({
    flag: flagName.nullable().optional(),
    application: name.nullable().optional(),
    environment: name.nullable().optional(),
  }),
);

/**
 * GraphQL `replaceKillSwitch(rules)`: each rule's absent fields become null. A rule whose fields
 * are all null matches every flag (a global kill switch). Duplicate rules are dropped.
 */
export function parseKillSwitchRules(data: unknown): KillSwitchRule[] {
  const p = parseInput(killSwitchSchema, data, 'rules');
  const seen = new Set<string>();
  const out: KillSwitchRule[] = [];
  for (const r of p) {
    const rule = { flag: r.flag ?? null, application: r.application ?? null, environment: r.environment ?? null };
    const k = JSON.stringify([rule.flag, rule.application, rule.environment]);
    if (seen.has(k)) continue;
    seen.add(k);
    out.push(rule);
  }
  return out;
}
