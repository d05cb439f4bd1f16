/**
 * Whether a poll of the database must read (docs/cluster.md, "Management never starves").
 *
 * Two pollers read what may have changed since their last look: the flag status tracker (usage and
 * settings, every second; features/insights/tracker.ts) and the webhook dispatcher ("is anything
 * pending?", every second; features/webhooks/dispatcher.ts). On PostgreSQL other nodes write, so
 * every poll reads. The embedded PGlite database is opened by this process alone, so what such a
 * poll reads can change only through this process:
 *
 * - its own commits, which the poller is told of (`touch`): the insights flush, a settings write,
 *   a flag write, a queued webhook message;
 * - SQL run from outside the services (`VexilNode.db`, the actor's `query` message): `outsideWrite`
 *   touches every gate of the database.
 *
 * Between those a poll reads nothing. An idle embedded node ran three statements a second for
 * these polls: about 3.4 ms of the actor's CPU a second, a third of what the actor gets of a core
 * that evaluation saturates beside another busy process at nice 15, and every admin request
 * waited behind them.
 */
import type { Database } from './database.js';

export class PollGate {
  private stale = true;

  /** `everyPoll`: other processes may write (PostgreSQL), so every poll reads. */
  constructor(readonly everyPoll: boolean) {}

  /** What the poll reads may have changed: the next poll reads. */
  touch(): void {
    this.stale = true;
  }

  /**
   * Whether this poll reads. Answering true makes the gate fresh: a touch during the read (a commit
   * the read may not have seen) makes the next poll read again.
   */
  shouldRead(): boolean {
    if (this.everyPoll) return true;
    const stale = this.stale;
    this.stale = false;
    return stale;
  }
}

const gates = new WeakMap<Database, Set<PollGate>>();

/** A gate for a poll of `db`: every poll reads unless `db` is the embedded PGlite. */
export function pollGate(db: Database): PollGate {
  const gate = new PollGate(db.kind !== 'pglite');
  let set = gates.get(db);
  if (set === undefined) gates.set(db, (set = new Set()));
  set.add(gate);
  return gate;
}

/** `db` was written by SQL from outside the services: every poll of it reads at its next turn. */
export function outsideWrite(db: Database): void {
  for (const gate of gates.get(db) ?? []) gate.touch();
}
