/** Operator API (docs/api.md#operator-api): organizations and their subscriptions, behind VEXIL_OPERATOR_TOKEN. */
import { conflict, notFound } from '../../domain/errors.js';
import type { Organization } from '../../domain/types.js';
import { parseCreateOrganization, parsePatchOrganization } from '../../domain/validation.js';
import type { ActorRuntime } from '../../runtime.js';
import { getOrgByName, updateOrgSettings } from '../organizations/store.js';
import { provisionOrganization } from '../organizations/provision.js';
import { orgChange } from '../audit/events.js';
import { auditedTransaction, OPERATOR, writeOrg, writeOrgKeys } from '../write.js';
import { randomUUID } from 'node:crypto';
import { generateKeyValue, hashKey } from '../../auth/key-material.js';
import { quotaError } from '../../domain/validation.js';
import { insertKeyWithin } from '../keys/store.js';
import { keyChange } from '../audit/events.js';
import { keyView } from '../keys/service.js';

export interface OrganizationView {
  name: string;
  subscriptionActive: boolean;
  environments: string[];
  applications: string[];
}

const view = (o: Organization): OrganizationView => ({
  name: o.name,
  subscriptionActive: o.subscriptionActive,
  environments: o.environments,
  applications: o.applications,
});

export async function createOrganization(rt: ActorRuntime, raw: unknown): Promise<OrganizationView & { adminKey: string }> {
  const input = parseCreateOrganization(raw);
  // Recorded in the new organization's own log; the event holds the settings, not the admin key.
  return auditedTransaction(rt.db, OPERATOR, async (tx) => {
    if ((await getOrgByName(tx, input.name)) !== null) throw conflict(`Organization '${input.name}' already exists`);
    const { org, adminKey } = await provisionOrganization(tx, input);
    return { orgId: org.id, result: { ...view(org), adminKey }, audit: orgChange('org.create', org.name, null, view(org)) };
  });
}

export async function patchOrganization(rt: ActorRuntime, name: string, raw: unknown): Promise<OrganizationView> {
  const input = parsePatchOrganization(raw);
  const org = await getOrgByName(rt.db, name);
  if (org === null) throw notFound(`Organization '${name}' not found`);
  // Through writeOrg: the subscription lives in the snapshot, which every node updates at once.
  return writeOrg(rt, OPERATOR, org.id, 'settings', async (tx, locked) => {
    const saved = await updateOrgSettings(tx, org.id, { subscriptionActive: input.subscriptionActive });
    return {
      result: view(saved),
      audit: orgChange('org.subscription', saved.name, { subscriptionActive: locked.subscriptionActive }, { subscriptionActive: saved.subscriptionActive }),
    };
  });
}

/**
 * A new organization-wide Admin key for an existing organization (for instance when its Admin key
 * values are lost). Recorded in that organization's log as `key.create` by `{operator: true}` (the
 * key record, never its value). The key counts against VEXIL_MAX_KEYS_PER_ORG like any other.
 */
export async function issueAdminKey(rt: ActorRuntime, name: string): Promise<{ adminKey: string }> {
  const org = await getOrgByName(rt.db, name);
  if (org === null) throw notFound(`Organization '${name}' not found`);
  const limits = rt.config.tenancyLimits;
  const value = generateKeyValue();
  return writeOrgKeys(rt, OPERATOR, org.id, async (tx) => {
    const made = await insertKeyWithin(
      tx,
      { id: randomUUID(), orgId: org.id, name: 'admin', permissions: ['Admin', 'CanRead', 'CanWrite'], application: null, environment: null },
      hashKey(value),
      limits.maxKeysPerOrg,
    );
    if (made === null) throw quotaError(limits, 'maxKeysPerOrg');
    const key = keyView(made);
    return { result: { adminKey: value }, audit: keyChange('key.create', null, key) };
  });
}
