/**
 * The write side of Idempotency-Key (docs/api.md#idempotency-key): the management actor's wrapper
 * (src/management/idempotency.ts) runs a write handler inside `idempotencyContext`, and the write's
 * transaction (src/features/write.ts) claims the key first thing, so the write and its record
 * commit together. A fresh record by another request (a concurrent duplicate that committed first,
 * on this node or another) makes the claim fail with `IdempotencyRace`: the transaction rolls back
 * and the wrapper answers from that record instead.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Queryable } from '../storage/database.js';

export interface IdempotencyClaim {
  scope: string;
  key: string;
  fingerprint: string;
  /** Claimed in the transaction now running. */
  inTransaction: boolean;
  /** Claimed in a transaction that committed. */
  committed: boolean;
}

export const idempotencyContext = new AsyncLocalStorage<IdempotencyClaim>();

/** Another request holds this key (fresh record). */
export class IdempotencyRace extends Error {
  constructor() {
    super('Idempotency-Key already recorded by another request');
  }
}

/** How long a record counts. */
export const IDEMPOTENCY_TTL = "interval '24 hours'";

/** Inserts the running request's record in `tx` (once per request); an expired record is replaced. */
export async function claimIdempotencyKey(tx: Queryable): Promise<void> {
  const c = idempotencyContext.getStore();
  if (c === undefined || c.committed || c.inTransaction) return;
  const rows = await tx.query(
    `insert into idempotency_keys (scope, idem_key, fingerprint) values ($1, $2, $3)
     on conflict (scope, idem_key) do update
       set fingerprint = excluded.fingerprint, status = null, headers = null, body = null, key_id = null, created_at = now()
       where idempotency_keys.created_at < now() - ${IDEMPOTENCY_TTL}
     returning 1 as claimed`,
    [c.scope, c.key, c.fingerprint],
  );
  if (rows.length === 0) throw new IdempotencyRace();
  c.inTransaction = true;
}
