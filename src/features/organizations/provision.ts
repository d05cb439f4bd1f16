/**
 * Creating an organization with its first admin key: used by the operator API and by the first
 * start's bootstrap (docs/api.md#operator-api; README, "Quick start").
 */
import { randomUUID } from 'node:crypto';
import type { ManagementKey, Organization } from '../../domain/types.js';
import { generateKeyValue, hashKey } from '../../auth/key-material.js';
import type { Queryable } from '../../storage/database.js';
import { insertKey } from '../keys/store.js';
import { insertOrg } from './store.js';

export interface NewOrganization {
  name: string;
  environments: string[];
  applications: string[];
  subscriptionActive: boolean;
}

export async function provisionOrganization(
  tx: Queryable,
  input: NewOrganization,
  adminKeyValue: string = generateKeyValue(),
): Promise<{ org: Organization; adminKey: string; key: ManagementKey }> {
  const org = await insertOrg(tx, { id: randomUUID(), killSwitch: [], ...input });
  const key = await insertKey(
    tx,
    { id: randomUUID(), orgId: org.id, name: 'admin', permissions: ['Admin', 'CanRead', 'CanWrite'], application: null, environment: null },
    hashKey(adminKeyValue),
  );
  return { org, adminKey: adminKeyValue, key };
}
