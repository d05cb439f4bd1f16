/**
 * First start (README, "Quick start"): with an empty database, create organization `default` and
 * one org-wide admin key. Returns the key value only when it was generated here, so the caller
 * prints it once; with VEXIL_BOOTSTRAP_ADMIN_KEY the value is the operator's and is never printed.
 */
import type { Database } from '../../storage/database.js';
import { countOrgs } from './store.js';
import { provisionOrganization } from './provision.js';
import { generateKeyValue } from '../../auth/key-material.js';

const BOOTSTRAP_LOCK = 0x7665_7862; // "vexb"

export async function bootstrap(db: Database, configuredKey: string | null): Promise<{ created: boolean; printKey: string | null }> {
  return db.transaction(async (tx) => {
    await tx.query('select pg_advisory_xact_lock($1)', [BOOTSTRAP_LOCK]);
    if ((await countOrgs(tx)) > 0) return { created: false, printKey: null };
    const value = configuredKey ?? generateKeyValue();
    await provisionOrganization(
      tx,
      { name: 'default', environments: ['development', 'production'], applications: ['default'], subscriptionActive: true },
      value,
    );
    return { created: true, printKey: configuredKey === null ? value : null };
  });
}
