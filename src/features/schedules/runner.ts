/**
 * The schedule runner (docs/cluster.md, "Scheduled changes"): applies each due schedule once, on
 * one node of the cluster. It runs in the management actor (src/management/actor.ts), never on
 * the front thread that answers evaluations.
 *
 * Timing: a timer is armed for the soonest pending `at` (read through the partial index on pending
 * schedules, by the database's clock), re-armed whenever this node's data changes (its own writes,
 * bus hints and version polls of other nodes' writes, creating or cancelling a schedule among them;
 * a burst of changes causes one look, CHANGE_COALESCE_MS after the first),
 * and a safety poll reads it again every `SAFETY_POLL_MS` (and at start, so a schedule whose time
 * passed while every node was down is applied then).
 *
 * Exactly once: the change is made by the configuration write path (flags/service.ts
 * `upsertConfigAs`, `setConfigEnabledAs`), whose transaction first locks the organization, then
 * claims the schedule (`claimApplied`: `FOR UPDATE SKIP LOCKED`, marked applied); a node that finds
 * it taken rolls its transaction back, so no second change, version or audit event is written.
 * A change refused when due (the key disabled or deleted, its scopes, the configuration no longer
 * valid) marks the schedule failed with the reason and changes nothing else.
 */
import { principalOf } from '../../auth/permissions.js';
import { isVexilError, VexilError } from '../../domain/errors.js';
import type { ActorRuntime } from '../../runtime.js';
import * as flags from '../flags/service.js';
import * as store from './store.js';
import { bypassContext } from '../policies/bypass.js';
import { findKeyWithHash } from '../keys/store.js';
import { applyDueRequests, msToNextRequest } from '../change-requests/scheduled.js';
import { Rounds } from '../../util/rounds.js';

/** The safety poll: at most this long between two looks at the soonest pending schedule. */
export const SAFETY_POLL_MS = 30_000;
/** Due schedules taken per round. */
const BATCH = 100;
/** A change that failed for a passing reason (the database unavailable) is tried again after this long. */
const RETRY_MS = 1000;
/** Changes arriving together (a burst of writes) cause one look, this long after the first. */
const CHANGE_COALESCE_MS = 50;
/** A refusal that makes a schedule fail; anything else (UNAVAILABLE, a lost connection) is tried again. */
const FINAL = new Set(['BAD_REQUEST', 'UNAUTHENTICATED', 'PAYMENT_REQUIRED', 'FORBIDDEN', 'NOT_FOUND', 'CONFLICT', 'QUOTA_EXCEEDED']);

const minOf = (a: number | null, b: number | null): number | null => (a === null ? b : b === null ? a : Math.min(a, b));

/** Thrown inside the write's transaction when another node holds or has applied the schedule. */
class Taken extends Error {}

export class ScheduleRunner {
  private poke: NodeJS.Timeout | null = null;
  /** One round at a time, the timer and the safety poll (util/rounds.ts). */
  private readonly rounds: Rounds;

  constructor(private readonly rt: ActorRuntime) {
    this.rounds = new Rounds({
      round: () => this.round(),
      pollMs: SAFETY_POLL_MS,
      onError: (err, first) => {
        // The database unreachable: one warning per outage, not one per retry.
        if (first) this.rt.log.warn('schedule runner round failed; trying again every second', { err: err as Error });
        this.rounds.arm(RETRY_MS);
      },
    });
  }

  /** Applies what is due now and arms the timer (the start, the safety poll). */
  start(): void {
    this.rounds.request();
  }

  /** Something changed (this node's write, another node's): look at the soonest pending schedule again. */
  changed(): void {
    if (this.poke !== null || this.rounds.isStopped) return;
    this.poke = setTimeout(() => {
      this.poke = null;
      this.rounds.request();
    }, CHANGE_COALESCE_MS);
    this.poke.unref();
  }

  stop(): void {
    this.rounds.stop();
    if (this.poke !== null) clearTimeout(this.poke);
  }

  private async round(): Promise<void> {
    let retry = false;
    for (;;) {
      const due = await store.dueSchedules(this.rt.db, BATCH);
      for (const s of due) if (!(await this.apply(s))) retry = true;
      if (due.length < BATCH || this.rounds.isStopped) break;
    }
    // Scheduled change requests (docs/change-requests.md) share the timer.
    if (!(await applyDueRequests(this.rt))) retry = true;
    const ms = minOf(await store.msToNextPending(this.rt.db), await msToNextRequest(this.rt));
    if (ms === null) this.rounds.arm(retry ? RETRY_MS : null);
    else this.rounds.arm(Math.min(Math.max(ms, 0) + 2, retry ? RETRY_MS : SAFETY_POLL_MS));
  }

  /** Applies one due schedule; false when it should be tried again (a passing failure). */
  private async apply(s: store.StoredSchedule): Promise<boolean> {
    // Never under a request's review bypass (a timer armed during a request inherits its context).
    return bypassContext.exit(() => this.applyOne(s));
  }

  private async applyOne(s: store.StoredSchedule): Promise<boolean> {
    try {
      const found = await findKeyWithHash(this.rt.db, s.keyId);
      if (found === null || found.key.orgId !== s.orgId) throw new VexilError('UNAUTHENTICATED', `The scheduling key ${s.keyId} no longer exists`);
      if (found.key.disabled) throw new VexilError('UNAUTHENTICATED', `The scheduling key ${s.keyId} is disabled`);
      const p = principalOf(found.key);
      const by: flags.ScheduledWrite = {
        scheduleId: s.id,
        claim: async (tx, org) => {
          if (!(await store.claimApplied(tx, s.id))) throw new Taken();
          // As admission would (src/auth/authenticate.ts), read under the organization's lock.
          if (!org.subscriptionActive) throw new VexilError('PAYMENT_REQUIRED', 'The organization requires an active subscription');
        },
      };
      if (s.config !== null) await flags.upsertConfigAs(this.rt, p, s.flag, s.config, by);
      else await flags.setConfigEnabledAs(this.rt, p, s.flag, s.stage, s.clientId, s.enabled!, by);
      this.rt.log.info('schedule applied', { scheduleId: s.id, orgId: s.orgId, flag: s.flag });
      return true;
    } catch (err) {
      if (err instanceof Taken) {
        this.rt.log.debug('schedule taken by another node', { scheduleId: s.id });
        return true;
      }
      if (isVexilError(err) && FINAL.has(err.code)) {
        // A protected environment's refusal names its reason first: "review_required: ..." (docs/change-requests.md).
        const why = typeof err.details?.reason === 'string' ? `${err.details.reason}: ${err.message}` : err.message;
        if (await store.markFailed(this.rt.db, s.id, why)) {
          this.rt.log.info('schedule failed', { scheduleId: s.id, orgId: s.orgId, flag: s.flag, reason: why });
        }
        return true;
      }
      this.rt.log.warn('applying a schedule failed; trying again', { scheduleId: s.id, err: err as Error });
      return false;
    }
  }
}
