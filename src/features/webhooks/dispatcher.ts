/**
 * The webhook dispatcher (docs/webhooks.md, "Delivery"): sends the outbox's messages. It runs in
 * the management actor (src/management/actor.ts), never on a front thread.
 *
 * - Claims: due messages are claimed in the database (store.ts `claimDue`: `FOR UPDATE SKIP
 *   LOCKED` and a lease longer than an attempt can last), so exactly one node makes each attempt;
 *   only an endpoint's oldest pending message is ever due, so an endpoint gets its messages in
 *   commit order, the next once the earlier one is delivered or given up.
 * - Concurrency: each claimed attempt runs on its own (one per endpoint, at most
 *   VEXIL_WEBHOOK_CONCURRENCY on the node): a slow or failing endpoint delays no other.
 * - Pace: an endpoint with a backlog is served by one loop (`serve`) that records each attempt and
 *   claims the endpoint's next message in one statement (store.ts `recordAttempt` with a chain),
 *   over a kept-alive connection to the endpoint (send.ts, `agents`): one database round trip and
 *   one HTTP exchange per message. After CHAIN_MAX messages the loop hands its slot back to a round,
 *   so that endpoints waiting for a slot get theirs.
 * - Timing: rounds (util/rounds.ts) run when this process commits a write that queued messages
 *   (outbox.ts), when an endpoint's loop ends, on a timer for the soonest retry, and on a poll every
 *   VEXIL_WEBHOOK_POLL_MS (other nodes' writes).
 * - A node that dies mid-attempt leaves its lease to run out: another node (or this one,
 *   restarted) makes the attempt again, with the same `webhook-id` (at least once).
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import type { ActorRuntime } from '../../runtime.js';
import { eventById } from '../audit/store.js';
import type { Resolve } from './address.js';
import { onQueued } from './outbox.js';
import { decide, parseRetryAfter, type RetryPolicy } from './retry.js';
import { openSecret } from './secrets.js';
import { send, type Agents, type SendResult } from './send.js';
import { webhookHeaders } from './signature.js';
import * as store from './store.js';
import { pollGate, type PollGate } from '../../storage/poll-gate.js';
import { Rounds, within } from '../../util/rounds.js';

/** Delivery results counted by `vexil_webhook_deliveries_total{result}`. */
export const DELIVERY_RESULTS = ['success', 'retry', 'gave_up', 'disabled'] as const;
export type DeliveryResult = (typeof DELIVERY_RESULTS)[number];

/** Finished messages (and their attempts) are kept this long for the deliveries log and replay. */
export const KEEP_FINISHED_MS = 7 * 86_400_000;
const PRUNE_EVERY_MS = 3_600_000;
/**
 * A claim's lease: twice an attempt's timeout and a second (21 s by default), room for the
 * recording after the attempt and for the nodes' clocks to differ a little. A node that dies
 * mid-attempt holds its messages' endpoints this long.
 */
export const leaseMs = (timeoutMs: number): number => 2 * timeoutMs + 1000;

/** An endpoint's loop hands its slot back to a round after this many messages in a row. */
export const CHAIN_MAX = 100;
/** A kept-alive connection idle this long is closed (below the 5 s a Node.js server keeps one). */
const IDLE_SOCKET_MS = 4000;

export interface WebhookStats {
  deliveries: [string, number][];
  pending: number;
  oldestPendingSeconds: number;
}

export class WebhookDispatcher {
  private readonly busy = new Set<string>();
  private rounds: Rounds | null = null;
  private lastPrune = 0;
  /**
   * Whether the next round looks for the soonest due message (the retry timer): after an
   * endpoint's loop ended (it may have left a retry) and at least every half poll. A round woken by
   * this node's commit does not: what it queued is due now, and the claim takes it.
   */
  private lookNeeded = true;
  private lastLook = 0;
  /**
   * Nothing was pending at the last look. On the embedded database a message can then only appear
   * by a commit on this node (`onQueued`) or SQL from outside, which touch `pendingGate`
   * (storage/poll-gate.ts): until then a round runs no statement.
   */
  private nothingPending = false;
  private pendingGate: PollGate | null = null;
  private unlisten: (() => void) | null = null;
  /** Kept-alive connections to the endpoints (send.ts): one per endpoint in use, closed when idle. */
  private readonly agents: Agents = {
    http: new http.Agent({ keepAlive: true, timeout: IDLE_SOCKET_MS }),
    https: new https.Agent({ keepAlive: true, timeout: IDLE_SOCKET_MS }),
  };
  readonly counts = new Map<DeliveryResult, number>(DELIVERY_RESULTS.map((r) => [r, 0]));

  constructor(
    private readonly rt: ActorRuntime,
    private readonly resolve?: Resolve,
  ) {}

  private get settings() {
    return this.rt.config.webhooks;
  }

  private get policy(): RetryPolicy {
    const s = this.settings;
    return { baseMs: s.retryBaseMs, maxMs: s.retryMaxMs, retryForMs: s.retryForMs };
  }

  private get leaseMs(): number {
    return leaseMs(this.settings.timeoutMs);
  }

  start(): void {
    const rounds = new Rounds({
      round: () => this.round(),
      pollMs: this.settings.pollMs,
      timeoutMs: this.leaseMs,
      name: 'a webhook claim round',
      onError: (err, first) => {
        if (first) this.rt.log.warn('webhook dispatch failed; trying again at the next poll', { err: err as Error });
      },
    });
    this.rounds = rounds;
    const gate = (this.pendingGate = pollGate(this.rt.db));
    this.unlisten = onQueued(() => {
      gate.touch();
      rounds.request();
    });
    rounds.request();
  }

  stop(): void {
    this.unlisten?.();
    this.rounds?.stop();
    this.agents.http.destroy();
    this.agents.https.destroy();
  }

  async stats(): Promise<WebhookStats> {
    const { pending, oldestSeconds } = await store.pendingStats(this.rt.db, new Date(this.rt.now()));
    return { deliveries: [...this.counts], pending, oldestPendingSeconds: oldestSeconds };
  }

  private async round(): Promise<void> {
    const now = new Date(this.rt.now());
    if (now.getTime() - this.lastPrune > PRUNE_EVERY_MS) {
      this.lastPrune = now.getTime();
      await store.pruneFinished(this.rt.db, new Date(now.getTime() - KEEP_FINISHED_MS));
    }
    // Nothing pending at the last look and nothing queued since, on the embedded database: no statement.
    if (this.nothingPending && this.pendingGate?.shouldRead() === false) return this.arm(null);
    // Nothing pending anywhere (the usual idle poll): no claim, no look, no timer.
    this.nothingPending = !(await store.anyPending(this.rt.db));
    if (this.nothingPending) return this.arm(null);
    const free = this.settings.concurrency - this.busy.size;
    if (free > 0) {
      const claimed = await store.claimDue(this.rt.db, now, this.leaseMs, free, randomUUID(), [...this.busy]);
      for (const c of claimed) {
        this.busy.add(c.endpoint.id);
        void this.serve(c).finally(() => {
          this.busy.delete(c.endpoint.id);
          this.lookNeeded = true;
          this.rounds?.request();
        });
      }
    }
    // Every slot taken: the next round comes when one is handed back, not by a timer.
    if (this.busy.size >= this.settings.concurrency) return this.arm(null);
    if (!this.lookNeeded && performance.now() - this.lastLook < this.settings.pollMs / 2) return;
    this.lookNeeded = false;
    this.lastLook = performance.now();
    const ms = await store.msToNextDue(this.rt.db, new Date(this.rt.now()), [...this.busy]);
    this.arm(ms === null ? null : Math.max(ms, 0) + 5);
  }

  private arm(ms: number | null): void {
    // The poll looks anyway: a timer only for what is due sooner.
    this.rounds?.arm(ms === null || ms >= this.settings.pollMs ? null : ms);
  }

  /**
   * One endpoint's loop: its claimed message, then each next one the recording claimed, while
   * they are due (a retry ends it), at most CHAIN_MAX. Each attempt and its recording is bounded
   * by the lease: one that does not settle (a database connection cut mid-query) is abandoned,
   * and its message, its lease run out, is taken again.
   */
  private async serve(first: store.Claimed): Promise<void> {
    let c: store.Claimed | null = first;
    for (let n = 1; c !== null; n++) {
      const current: store.Claimed = c;
      let abandoned = false;
      // An abandoned attempt that records after all claims nothing more: this loop has moved on.
      const chain = () => n < CHAIN_MAX && this.rounds?.isStopped !== true && !abandoned;
      c = await within(this.attempt(current, chain), this.leaseMs, 'a webhook attempt').catch((err) => {
        abandoned = true;
        this.rt.log.warn('recording a webhook attempt failed; it will be made again', { messageId: current.msgId, err: err as Error });
        return null;
      });
    }
  }

  /**
   * The message's body: written with the message (outbox.ts); one recorded before that is built
   * and frozen at its first attempt. Every attempt sends the same bytes.
   */
  private async bodyOf(c: store.Claimed): Promise<string | null> {
    if (c.body !== null) return c.body;
    if (c.auditEventId === null) return null;
    const event = await eventById(this.rt.db, c.auditEventId);
    if (event === null) return null;
    const body = JSON.stringify({ type: c.type, timestamp: event.at, organization: c.orgName, data: event });
    await store.setBody(this.rt.db, c.id, body);
    return body;
  }

  /** One attempt and its recording; the endpoint's next message when `chain` and it was claimed. */
  private async attempt(c: store.Claimed, chain: () => boolean): Promise<store.Claimed | null> {
    const body = await this.bodyOf(c);
    const at = new Date(this.rt.now());
    const cluster = this.rt.config.clusterSecret;
    const secrets = [openSecret(c.endpoint.secret, cluster)];
    if (c.endpoint.previousSecret !== null && c.endpoint.previousUntil !== null && c.endpoint.previousUntil > at.getTime()) {
      secrets.push(openSecret(c.endpoint.previousSecret, cluster));
    }
    let result: SendResult;
    if (body === null) {
      result = { status: null, error: 'the audit event of this message no longer exists', retryAfter: null, durationMs: 0, responseBytes: 0 };
    } else if (secrets.some((s) => s === null)) {
      result = { status: null, error: 'the signing secret cannot be read (VEXIL_CLUSTER_SECRET changed or unset?)', retryAfter: null, durationMs: 0, responseBytes: 0 };
    } else {
      result = await send({
        url: c.endpoint.url,
        headers: webhookHeaders(secrets as string[], c.msgId, at.getTime(), body),
        body,
        timeoutMs: this.settings.timeoutMs,
        allowPrivate: this.settings.allowPrivate,
        agents: this.agents,
        ...(this.resolve ? { resolve: this.resolve } : {}),
      });
    }
    const now = this.rt.now();
    const decision =
      body === null
        ? ({ kind: 'give-up' } as const)
        : decide({ status: result.status, retryAfterMs: parseRetryAfter(result.retryAfter, now) }, c.attempt, c.createdAt, now, this.policy, Math.random());
    const finish: store.Finish =
      decision.kind === 'delivered' ? { kind: 'delivered' } : decision.kind === 'retry' ? { kind: 'retry', at: new Date(decision.at) } : { kind: 'failed' };
    const error = decision.kind === 'give-up' && result.error !== null ? `${result.error}; given up` : result.error;
    const outcome = { status: result.status, durationMs: result.durationMs, error };
    // One statement (the common case), or with the endpoint's disabling in one transaction (a 410).
    const { recorded, next } =
      decision.kind === 'disable'
        ? await this.rt.db.transaction(async (tx) => {
            await store.disableEndpoint(tx, c.endpoint.id, `410 Gone at ${new Date(now).toISOString()}`);
            return store.recordAttempt(tx, c, at, outcome, finish, null);
          })
        : await store.recordAttempt(this.rt.db, c, at, outcome, finish, chain() ? { now: new Date(this.rt.now()), leaseMs: this.leaseMs, token: randomUUID() } : null);
    if (!recorded) return null;
    const counted: DeliveryResult = decision.kind === 'delivered' ? 'success' : decision.kind === 'retry' ? 'retry' : decision.kind === 'disable' ? 'disabled' : 'gave_up';
    this.counts.set(counted, (this.counts.get(counted) ?? 0) + 1);
    if (decision.kind === 'disable') this.rt.log.warn('webhook endpoint answered 410 Gone: disabled', { endpointId: c.endpoint.id, orgId: c.orgId });
    if (decision.kind === 'give-up') this.rt.log.warn('webhook message given up', { endpointId: c.endpoint.id, messageId: c.msgId, attempts: c.attempt });
    return next;
  }
}
