/** Operator API (CONTRACT.md 3): organizations and their subscriptions, behind VEXIL_OPERATOR_TOKEN. */
import { conflict, notFound } from '../../domain/errors.js';
import type { Organization } from '../../domain/types.js';
import { parseCreateOrganization, parsePatchOrganization } from '../../domain/validation.js';
import type { Runtime } from '../../runtime.js';
import { getOrgByName, updateOrgSettings } from '../organizations/store.js';
import { provisionOrganization } from '../organizations/provision.js';
import { writeOrg } from '../write.js';

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

export async function createOrganization(rt: Runtime, raw: unknown): Promise<OrganizationView & { adminKey: string }> {
  const input = parseCreateOrganization(raw);
  const { org, adminKey } = await rt.db.transaction(async (tx) => {
    if ((await getOrgByName(tx, input.name)) !== null) throw conflict(`Organization '${input.name}' already exists`);
    return provisionOrganization(tx, input);
  });
  return { ...view(org), adminKey };
}

export async function patchOrganization(rt: Runtime, name: string, raw: unknown): Promise<OrganizationView> {
  const input = parsePatchOrganization(raw);
  const org = await getOrgByName(rt.db, name);
  if (org === null) throw notFound(`Organization '${name}' not found`);
  // Through writeOrg: the subscription lives in the snapshot, which every node updates at once.
  const saved = await writeOrg(rt, org.id, 'settings', (tx) => updateOrgSettings(tx, org.id, { subscriptionActive: input.subscriptionActive }));
  return view(saved);
}
