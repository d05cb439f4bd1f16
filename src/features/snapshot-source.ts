/**
 * Where a snapshot registry (src/snapshots/registry.ts) reads the source of truth from: the
 * organization, flag and segment stores over one `Queryable`. The front thread passes the management
 * actor's mailbox database, the actor its own connection.
 */
import type { SnapshotSource } from '../snapshots/registry.js';
import type { Queryable } from '../storage/database.js';
import { orgChangesSince } from './changes-since.js';
import { listFlags, listOrgConfigs } from './flags/store.js';
import { getOrg } from './organizations/store.js';
import { listSegments } from './segments/store.js';

export const snapshotSource = (db: Queryable): SnapshotSource => ({
  org: (orgId) => getOrg(db, orgId),
  flags: (orgId) => listFlags(db, orgId),
  orgConfigs: (orgId) => listOrgConfigs(db, orgId),
  segments: (orgId) => listSegments(db, orgId),
  changesSince: (orgId, held, maxChanges) => orgChangesSince(db, orgId, held, maxChanges),
});
