/**
 * The actor's answers to the front's asks (mailbox.ts `FrontAsks`): the SQL behind each is the
 * stores', run here on the actor's connection, so the front imports no store and sends no SQL.
 */
import { liveNodes, removeNode, touchNode } from '../features/membership/store.js';
import { findKeyByHash, findKeyWithHash } from '../features/keys/store.js';
import { orgVersions } from '../features/organizations/store.js';
import type { Queryable } from '../storage/database.js';
import type { FrontAsks } from './mailbox.js';

export function frontAsks(db: Queryable, webhookStats: FrontAsks['webhookStats']): FrontAsks {
  return {
    keyByHash: (hash) => findKeyByHash(db, hash),
    keyById: (id) => findKeyWithHash(db, id),
    orgVersions: () => orgVersions(db),
    registerNode: (nodeId) => touchNode(db, nodeId),
    liveNodes: () => liveNodes(db),
    removeNode: (nodeId) => removeNode(db, nodeId),
    webhookStats,
    ping: async () => {
      await db.query('select 1 as ok');
    },
  };
}
