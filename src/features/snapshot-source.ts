/**
 * Where a snapshot registry (src/snapshots/registry.ts) reads the source of truth from: the
 * organization, flag and segment stores over one `Queryable`. Only the management actor's registry
 * reads (the front's follows it), so this runs against the actor's own connection.
 *
 * `counted` hears each statement it runs, by kind (`vexil_snapshot_reads_total`): `changes`, the one
 * statement of a catch-up (changes-since.ts); `organization`, each of the four of a whole load.
 */
import type { SnapshotReadKind, SnapshotSource } from '../snapshots/registry.js';
import type { Queryable } from '../storage/database.js';
import { orgChangesSince } from './changes-since.js';
import { listFlags, listOrgConfigs } from './flags/store.js';
import { getOrg } from './organizations/store.js';
import { listSegments } from './segments/store.js';

export const snapshotSource = (db: Queryable, counted: (kind: SnapshotReadKind) => void = () => {}): SnapshotSource => {
  const read = <A extends unknown[], T>(kind: SnapshotReadKind, fn: (...args: A) => Promise<T>) => (...args: A): Promise<T> => {
    counted(kind);
    return fn(...args);
  };
  return {
    org: read('organization', (orgId: string) => getOrg(db, orgId)),
    flags: read('organization', (orgId: string) => listFlags(db, orgId)),
    orgConfigs: read('organization', (orgId: string) => listOrgConfigs(db, orgId)),
    segments: read('organization', (orgId: string) => listSegments(db, orgId)),
    changesSince: read('changes', (orgId: string, held: number, maxChanges: number) => orgChangesSince(db, orgId, held, maxChanges)),
  };
};
